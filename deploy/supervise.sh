#!/usr/bin/env bash
# supervise.sh: a small systemd-style supervisor for clsolved, for machines
# and containers without systemd, and the supervisor of the fault-injection
# tests (tests/cli/test_daemon_faults.sh).
#
#   deploy/supervise.sh [options] -- mpirun -np K ... clsolved ... --pid-file F
#     --drain-pid-file F   on SIGTERM/SIGINT, send SIGTERM to the pid in F
#                          (rank 0: it drains) instead of to the command;
#                          systemd's ExecStop in deploy/clsolved.service.in
#     --restart-sec S      wait S seconds before a restart (RestartSec=, 1)
#     --stop-timeout S     after a stop request, SIGKILL what is left of the
#                          command after S seconds (TimeoutStopSec=, 1800)
#     --max-restarts N     give up after N restarts in a row (0: never, 0)
#     --child-pid-file F   write the command's pid (mpirun's) to F at each start
#
# The policy is systemd's Restart=on-failure: the command is started again
# when it exits with a non-zero status or is killed by a signal, unless a
# stop was requested; a clean exit (0) ends the supervisor with 0. Each
# start runs the command in a session of its own (setsid), and what the
# supervisor kills is that session: every process in it, found by its
# session id. A process group would not do: Open MPI puts each rank in a
# process group of its own, so `kill -- -PGID` reached mpirun but never the
# ranks. A stop that times out, and the end of every run (a crash, a
# restart, a stop), kill whatever is left of the session, so no rank
# outlives the run it belonged to (the supervisor's KillMode=mixed). Every
# event is a line on stderr ("supervise: ..."), which the tests read.
set -u
drain_pid_file="" restart_sec=1 stop_timeout=1800 max_restarts=0 child_pid_file=""
while [ $# -gt 0 ]; do
    case "$1" in
    --drain-pid-file) drain_pid_file=$2; shift 2 ;;
    --restart-sec) restart_sec=$2; shift 2 ;;
    --stop-timeout) stop_timeout=$2; shift 2 ;;
    --max-restarts) max_restarts=$2; shift 2 ;;
    --child-pid-file) child_pid_file=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "supervise: unknown option '$1'" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: supervise.sh [options] -- COMMAND [ARGS...]" >&2; exit 2; }

say() { echo "supervise: $(date -u +%H:%M:%S) $*" >&2; }
stopping=0 child=0

# session_pids SID: the processes of a session (the command's: its pid is
# the session id, setsid made it the leader)
# (zombies, which only their parent can reap, are not counted)
session_pids() { ps -e -o pid=,sid=,stat= | awk -v s="$1" '$2 == s && $3 !~ /^Z/ {print $1}'; }
# kill_session SIGNAL SID: signals every process of the session and says so
kill_session() {
    local pids
    pids=$(session_pids "$2" | tr '\n' ' ')
    [ -n "${pids// /}" ] || return 0
    # shellcheck disable=SC2086
    kill -"$1" $pids 2>/dev/null
    say "SIG$1 to what was left of session $2: $pids"
}

# A stop request: drain through rank 0 when we know it, else SIGTERM the
# command (mpirun forwards it and kills the ranks after a second).
on_stop() {
    [ "$stopping" = 1 ] && return
    stopping=1
    local target=""
    if [ -n "$drain_pid_file" ] && [ -s "$drain_pid_file" ]; then
        target=$(cat "$drain_pid_file")
        kill -0 "$target" 2>/dev/null || target=""
    fi
    if [ -n "$target" ]; then
        say "stop requested: SIGTERM to $target ($drain_pid_file), waiting for the drain"
        kill -TERM "$target" 2>/dev/null
    elif [ "$child" != 0 ]; then
        say "stop requested: SIGTERM to $child"
        kill -TERM "$child" 2>/dev/null
    fi
    (
        # the sleep goes with this watchdog when the stop completes in time
        # (killing the subshell alone left the sleep running)
        trap 'kill "$nap" 2>/dev/null; exit 0' TERM
        sleep "$stop_timeout" &
        nap=$!
        wait "$nap"
        say "stop timed out after ${stop_timeout}s"
        kill_session KILL "$child"
    ) &
    killer=$!
}
trap on_stop TERM INT

restarts=0
while :; do
    setsid "$@" &
    child=$!
    [ -n "$child_pid_file" ] && echo "$child" >"$child_pid_file"
    say "started pid $child (start $((restarts + 1))): $*"
    # wait returns early when a trapped signal arrives; wait again until
    # the command has really ended
    while :; do
        wait "$child"
        st=$?
        kill -0 "$child" 2>/dev/null || break
    done
    # ranks that outlived mpirun (killed, or crashed) go with their run
    kill_session KILL "$child"
    if [ "$stopping" = 1 ]; then
        kill "${killer:-0}" 2>/dev/null
        say "stopped: pid $child exited with status $st"
        exit "$st"
    fi
    if [ "$st" = 0 ]; then
        say "pid $child exited cleanly"
        exit 0
    fi
    restarts=$((restarts + 1))
    if [ "$max_restarts" != 0 ] && [ "$restarts" -gt "$max_restarts" ]; then
        say "pid $child exited with status $st; $max_restarts restarts reached, giving up"
        exit "$st"
    fi
    say "pid $child exited with status $st; restart $restarts in ${restart_sec}s"
    sleep "$restart_sec" &
    nap=$!
    wait "$nap" || true
    kill "$nap" 2>/dev/null # a stop ends the wait early: the sleep goes too
    [ "$stopping" = 1 ] && { kill "${killer:-0}" 2>/dev/null; say "stopped while waiting to restart"; exit "$st"; }
done
