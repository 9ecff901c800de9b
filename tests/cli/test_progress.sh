#!/usr/bin/env bash
# Progress people read, on a terminal (a pty from script(1)): `clsolve
# solve` and `clsolve submit --wait` name the phase and its elapsed time,
# and while solving show the iteration, the residual, a bar that never goes
# back and an ETA; the upload shows its share; without a terminal nothing
# of it reaches stderr. The user's file name is kept (the job's inputs,
# messages, the summary), and an error is printed once.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
command -v script >/dev/null || { echo "SKIP: no script(1) (util-linux)" >&2; exit 77; }
t=$TEST_TMP
M=$CLSOLVE_DATA/matrices
# several seconds of iterations (the progress line shows once a solve has
# run for a second; the native CPU loops take ~1 ms an iteration at 250k rows)
"$CLSOLVE" gen poisson2d 800 -o "$t/slow.mtx" >/dev/null

# frames FILE: the progress frames of a captured pty session, one a line
frames() { tr '\r' '\n' <"$1" | sed 's/\x1b\[K//g' | grep -E '^  (uploading|queued|starting|parsing|setting up|solving|gathering|writing) '; }
# stale FILE: the progress lines still on the screen once the command has
# ended (a terminal's reading of \r, \n and erase-line); none may be left
stale() {
    $PY - "$1" <<'PY'
import re, sys
data = open(sys.argv[1], encoding="utf-8", errors="replace", newline="").read()  # \r kept
screen, line, col, i = [], [], 0, 0
while i < len(data):
    c = data[i]
    if data.startswith("\x1b[K", i):
        del line[col:]
        i += 3
        continue
    if c == "\r":
        col = 0
    elif c == "\n":
        screen.append("".join(line))
        line, col = [], 0
    else:
        if col < len(line):
            line[col] = c
        else:
            line.append(c)
        col += 1
    i += 1
screen.append("".join(line))
for l in screen:
    if re.match(r"^  (uploading|queued|starting|parsing|setting up|solving|gathering|writing|done|[a-z ]+ +(\d+:)?\d+:\d\d)", l):
        print(repr(l))
PY
}
# check_frames FILE WHAT: phases with elapsed time, solving frames with
# iteration, residual, ETA, and a bar whose '#' count never falls
check_frames() {
    $PY - "$1" "$2" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
what, fails = sys.argv[2], []
# a time as cli/progress.c's fmt_time writes it: M:SS, H:MM:SS past an
# hour (an ETA on a slow, loaded machine), or "?"
T = r"(?:(?:\d+:)?\d+:\d\d|\?)"
solving = [l for l in lines if l.startswith("  solving ")]
if not solving:
    fails.append("no solving frame")
bars = []
for l in solving:
    if re.match(r"^  solving\s+%s$" % T, l):
        continue  # before the first residual: the phase and its time only
    m = re.match(r"^  solving\s+(%s)  iteration (\d+)\s+ residual (\S+)  \[([#.]{20})\](  ETA (%s))?$" % (T, T), l)
    if not m:
        fails.append("a solving frame that does not read: %r" % l)
        continue
    bars.append(m.group(4).count("#"))
if not bars:
    fails.append("no solving frame with an iteration")
if bars != sorted(bars):
    fails.append("the bar went back: %s" % bars)
if not any("ETA " in l for l in solving):
    fails.append("no ETA in %d solving frames" % len(solving))
if any(re.search(r"residual nan|iteration 0 .*nan", l) for l in lines):
    fails.append("a frame shows a NaN residual")
for f in fails:
    print("%s: %s" % (what, f))
print("%s: %d frames, %d solving, bars %s..%s" % (what, len(lines), len(solving), bars[:1], bars[-1:]))
sys.exit(1 if fails else 0)
PY
}

# --- clsolve solve on a terminal ---
script -qec "'$CLSOLVE' solve '$t/slow.mtx' --tol 1e-11 -o '$t/x.mtx'" /dev/null >"$t/solve.pty" 2>&1
frames "$t/solve.pty" >"$t/solve.frames"
check_frames "$t/solve.frames" "clsolve solve" && ok || bad "clsolve solve's progress: $(head -3 "$t/solve.frames")"
grep -q "^converged after" <(tr '\r' '\n' <"$t/solve.pty") && ok || bad "no summary after the progress line"
left=$(stale "$t/solve.pty")
[ -z "$left" ] && ok || bad "clsolve solve left its progress line on the screen: $left"
# not on a terminal: no progress line on stderr
"$CLSOLVE" solve "$t/slow.mtx" --tol 1e-6 >/dev/null 2>"$t/err"
[ ! -s "$t/err" ] && ok || bad "progress without a terminal: $(head -c 200 "$t/err")"

# --- clsolve submit --wait on a terminal ---
D=$t/data
rm -rf "$D" "$D".*
daemon_start 1 "$D" || { bad "daemon start"; finish; }
export CLSOLVE_SERVER=$DURL
script -qec "'$CLSOLVE' submit '$t/slow.mtx' --tol 1e-11 --wait" /dev/null >"$t/submit.pty" 2>&1
frames "$t/submit.pty" >"$t/submit.frames"
check_frames "$t/submit.frames" "clsolve submit --wait" && ok || bad "submit's progress: $(head -3 "$t/submit.frames")"
left=$(stale "$t/submit.pty")
[ -z "$left" ] && ok || bad "clsolve submit --wait left its progress line on the screen: $left"
grep -q "^  uploading slow.mtx  100%" "$t/submit.frames" && ok || bad "no upload progress: $(head -2 "$t/submit.frames")"
grep -qE "^  (parsing|setting up|queued|starting) " "$t/submit.frames" && ok || bad "no phase before solving: $(head -5 "$t/submit.frames")"
# (the erased progress line leaves an erase-line before the next output)
id=$(tr '\r' '\n' <"$t/submit.pty" | sed 's/\x1b\[K//g' | sed -n 's/^submitted job \([0-9a-f]*\) (slow.mtx)$/\1/p')
[ -n "$id" ] && ok || bad "no 'submitted job ID (slow.mtx)': $(tr '\r' '\n' <"$t/submit.pty" | grep submitted)"
[ "$("$CLSOLVE" status "$id" --json | jget "j['inputs']['matrix']")" = slow.mtx ] && ok || bad "the job lost the file's name"

# --- an error is printed once ---
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 x 1\n' >"$t/deep.mtx"
expect_exit 3 "$CLSOLVE" submit "$t/deep.mtx" --wait
[ "$(grep -c "deep.mtx:4:" "$t/err" "$t/out" | awk -F: '{s+=$2} END {print s}')" = 1 ] && ok \
    || bad "the error is not printed once: out: $(cat "$t/out") err: $(cat "$t/err")"
bid=$(sed -n 's/^submitted job \([0-9a-f]*\) (deep.mtx)$/\1/p' "$t/out")
expect_exit 3 "$CLSOLVE" status "$bid"
[ "$(grep -c "deep.mtx:4:" "$t/out" "$t/err" | awk -F: '{s+=$2} END {print s}')" = 1 ] && ok || bad "status prints the error $(cat "$t/out" "$t/err")"
expect_exit 3 "$CLSOLVE" solve "$t/deep.mtx"
[ "$(grep -c "deep.mtx:4:" "$t/err")" = 1 ] && [ ! -s "$t/out" ] && ok || bad "solve prints the error more than once"
daemon_stop 60 && ok || bad "daemon stop"
finish
