#!/usr/bin/env bash
# deploy/supervise.sh kills what it started: the whole session of the
# command, not only its process group. The command here stands in for
# mpirun: it starts two "ranks" that put themselves in process groups of
# their own (as Open MPI's ranks are) and ignore SIGTERM. Checked:
#  1. a stop (SIGTERM to the supervisor) whose drain times out kills the
#     command and both ranks (--stop-timeout 1);
#  2. a command that dies (kill -9, a crash) leaves no rank behind when the
#     supervisor restarts it, and the new run's ranks are killed at the stop;
#  3. the supervisor's log names what it killed.
# No daemon, no MPI: a few seconds.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$here/../.." && pwd)
W=$TEST_TMP/sup
rm -rf "$W"
mkdir -p "$W"
# the stand-in: two ranks in process groups of their own, pids in $W/ranks
cat >"$W/fake-mpirun.sh" <<'EOS'
#!/usr/bin/env bash
out=$1
for i in 1 2; do
    python3 -c 'import os, signal, time
os.setpgid(0, 0)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(600)' &
    echo $! >>"$out"
done
trap '' TERM
wait
EOS
chmod +x "$W/fake-mpirun.sh"
SUP=""
cleanup() {
    [ -n "$SUP" ] && kill -KILL "$SUP" 2>/dev/null
    for f in "$W"/ranks*; do
        [ -f "$f" ] && kill -KILL $(cat "$f") 2>/dev/null
    done
    return 0
}
trap cleanup EXIT
# alive PID...: how many run (a zombie, killed but not reaped, does not)
alive() {
    local n=0 p
    for p in "$@"; do
        [ -r "/proc/$p/stat" ] && ! awk '{exit ($3 == "Z" ? 0 : 1)}' "/proc/$p/stat" && n=$((n + 1))
    done
    echo $n
}
wait_ranks() { # FILE: until both ranks have written their pids
    for _ in $(seq 100); do [ -f "$1" ] && [ "$(wc -l <"$1")" = 2 ] && return 0; sleep 0.1; done
    return 1
}

# 1. a stop whose drain times out
setsid bash "$ROOT/deploy/supervise.sh" --stop-timeout 1 --child-pid-file "$W/child" -- \
    "$W/fake-mpirun.sh" "$W/ranks1" 2>"$W/log1" &
SUP=$!
wait_ranks "$W/ranks1" && ok || bad "the ranks did not start"
ranks=$(cat "$W/ranks1")
[ "$(alive $ranks)" = 2 ] && ok || bad "ranks not running"
kill -TERM "$SUP"
for _ in $(seq 100); do kill -0 "$SUP" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SUP" 2>/dev/null && bad "supervisor still running after the stop timeout" || ok
sleep 0.3
left=$(alive $ranks $(cat "$W/child"))
[ "$left" = 0 ] && ok || bad "after a timed-out stop $left processes of the run are alive"
grep -q "stop timed out" "$W/log1" && grep -q "SIGKILL to what was left of session" "$W/log1" && ok ||
    bad "the log does not say what was killed: $(cat "$W/log1")"

# 2. a command killed by -9: its ranks go before the restart
setsid bash "$ROOT/deploy/supervise.sh" --stop-timeout 1 --restart-sec 1 --child-pid-file "$W/child" -- \
    bash -c 'f='"$W"'/ranks2.$(date +%s%N); exec '"$W"'/fake-mpirun.sh "$f"' 2>"$W/log2" &
SUP=$!
for _ in $(seq 100); do ls "$W"/ranks2.* >/dev/null 2>&1 && wait_ranks "$W"/ranks2.* && break; sleep 0.1; done
first=$(ls "$W"/ranks2.* | head -1)
r1=$(cat "$first")
kill -KILL "$(cat "$W/child")"
for _ in $(seq 100); do [ "$(ls "$W"/ranks2.* | wc -l)" = 2 ] && break; sleep 0.1; done
# killed with the session, they may take a moment to be gone on a loaded
# machine (kill -0 sees a process until it is reaped): up to 5 s
n1=0
for _ in $(seq 50); do n1=$(alive $r1); [ "$n1" = 0 ] && break; sleep 0.1; done
[ "$n1" = 0 ] && ok || bad "ranks of the killed run outlived it: $n1 alive"
second=$(ls "$W"/ranks2.* | grep -vx "$first" | head -1)
[ -n "$second" ] && wait_ranks "$second" && ok || bad "no restart"
r2=$(cat "$second" 2>/dev/null)
kill -TERM "$SUP"
for _ in $(seq 100); do kill -0 "$SUP" 2>/dev/null || break; sleep 0.1; done
sleep 0.3
[ "$(alive $r2)" = 0 ] && ok || bad "ranks of the second run alive after the stop"
grep -q "restart 1 in" "$W/log2" && ok || bad "no restart logged: $(cat "$W/log2")"

# 3. a clean stop leaves nothing behind: the stop watchdog's sleep used to
# outlive the supervisor (issue 27, item 8). --stop-timeout 73 marks it.
setsid bash "$ROOT/deploy/supervise.sh" --stop-timeout 73 --child-pid-file "$W/child" -- \
    bash -c 'trap "exit 0" TERM; sleep 600 & wait' 2>"$W/log3" &
SUP=$!
for _ in $(seq 50); do [ -s "$W/child" ] && grep -q "start 1" "$W/log3" && break; sleep 0.1; done
sleep 0.3
kill -TERM "$SUP"
for _ in $(seq 100); do kill -0 "$SUP" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SUP" 2>/dev/null && bad "supervisor still running after a clean stop" || ok
sleep 0.2
left=$(pgrep -fx "sleep 73" | tr '\n' ' ')
[ -z "$left" ] && ok || { bad "the stop watchdog's sleep outlived the supervisor: $left"; kill $left 2>/dev/null; }
pkill -fx "sleep 600" 2>/dev/null
finish
