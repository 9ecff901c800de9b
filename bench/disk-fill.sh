#!/usr/bin/env bash
# bench/disk-fill.sh: a disk that fills during a run of 30 jobs (issue 27's
# target: 30/30 accepted jobs end `succeeded` once space returns, none
# `failed` for lack of space). Needs root (a tmpfs mount); loopback only.
#
#   CLSOLVE=build/clsolve bash bench/disk-fill.sh      # clsolved beside it
#   JOBS=30 ROWS=200 MB=48 bash bench/disk-fill.sh
#
# The data directory is a tmpfs of $MB MB. 30 gzip uploads of a Poisson
# system on a $ROWS x $ROWS grid (~0.3 MB each; each solution ~1.3 MB as
# solution.mtx + solution.bin) are accepted while the disk has room; then a
# filler file takes all but 4 MB, so the solves find the disk full: jobs
# wait (before they run, for room for their solution, or while writing it)
# with /readyz saying so. After 20 s the filler goes (space returns) and
# every job is followed to its end. Printed: the statuses, how many waited,
# /readyz during the fill, and every solution checked against b = A*1.
set -uo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "needs root (mount -t tmpfs)" >&2; exit 2; }
[ -n "${CLSOLVE:-}" ] || { echo "set CLSOLVE to the clsolve binary (clsolved beside it)" >&2; exit 2; }
CLSOLVED=$(dirname "$CLSOLVE")/clsolved
JOBS=${JOBS:-30}
ROWS=${ROWS:-200}
MB=${MB:-48}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=$(mktemp -d /tmp/clsolve-diskfill.XXXXXX)
D=$W/data
mkdir -p "$D" bench/results
LOG=bench/results/disk-fill-$(date -u +%Y%m%d-%H%M%S).log
MPID=""
cleanup() {
    [ -n "$MPID" ] && kill -KILL $(pgrep -P "$MPID") "$MPID" 2>/dev/null
    umount "$D" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
mount -t tmpfs -o size=${MB}m tmpfs "$D" || exit 1
"$CLSOLVE" gen poisson2d "$ROWS" -o "$W/A.mtx" >/dev/null && gzip -k "$W/A.mtx" || exit 1
setsid mpirun -np 1 --oversubscribe --bind-to none "$CLSOLVED" --listen 127.0.0.1:0 \
    --data-dir "$D" --port-file "$W/port" --pid-file "$W/pid" --disk-reserve 1M --keep-bytes 0 \
    --lanes 1 </dev/null >"$W/log" 2>&1 &
MPID=$!
for _ in $(seq 600); do [ -s "$W/port" ] && [ -s "$W/pid" ] && break; sleep 0.1; done
URL=http://127.0.0.1:$(cat "$W/port")
{ uptime; echo "clsolved $CLSOLVED; $JOBS jobs of poisson2d $ROWS on a $MB MB tmpfs"; } | tee -a "$LOG"
${PYTHON:-python3} - "$URL" "$W" "$D" "$JOBS" <<'EOF' 2>&1 | tee -a "$LOG"
import json, os, sys, time
sys.path.insert(0, "tests/cli")
from daemon_client import Client
import mmref
url, w, data, njobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cl = Client(url)
ids = []
for k in range(njobs):
    ids.append(cl.submit(os.path.join(w, "A.mtx.gz"), params={"tol": "1e-8"})["id"])
st = os.statvfs(data)
print("accepted %d jobs; %.1f MB free" % (len(ids), st.f_bavail * st.f_frsize / 1e6))
# the disk fills: all but 4 MB taken
free = st.f_bavail * st.f_frsize
filler = os.path.join(data, "filler")
with open(filler, "wb") as f:
    left = max(0, free - (4 << 20))
    while left > 0:
        n = min(left, 1 << 20)
        f.write(b"\0" * n)
        left -= n
t0 = time.time()
ready, waited = set(), set()
while time.time() - t0 < 20:
    s, _, body = cl.request("GET", "/readyz")
    if s != 200:
        ready.add("%d %s" % (s, body[:160].decode(errors="replace")))
    for j in json.loads(cl.request("GET", "/v1/jobs?limit=1000")[2])["jobs"]:
        note = (j.get("progress") or {}).get("note") or ""
        if "disk" in note:
            waited.add(j["id"])
    time.sleep(0.5)
states = {}
for j in json.loads(cl.request("GET", "/v1/jobs?limit=1000")[2])["jobs"]:
    states[j["status"]] = states.get(j["status"], 0) + 1
print("after 20 s of a full disk: %s; %d jobs waited for disk space (their note)" % (states, len(waited)))
print("/readyz while full: %s" % (sorted(ready) or "200"))
os.remove(filler)  # space returns
t1 = time.time()
final = {i: cl.wait(i, timeout=600) for i in ids}
counts = {}
for j in final.values():
    counts[j["status"]] = counts.get(j["status"], 0) + 1
print("space back: all ended within %.1f s: %s" % (time.time() - t1, counts))
bad = 0
A = mmref.read_matrix(os.path.join(w, "A.mtx"))
b = mmref.matvec(A, [1.0] * A[2])
for i, j in final.items():
    if j["status"] != "succeeded":
        print("FAIL: %s %s %s" % (i, j["status"], j.get("error")))
        bad += 1
        continue
    x = [float(v) for v in json.loads(cl.request("GET", "/v1/jobs/%s/solution?format=json" % i)[2])["x"]]
    err = max(abs(v - 1.0) for v in x)
    if err > 1e-5:
        print("FAIL: %s: max |x - 1| = %.3g" % (i, err))
        bad += 1
print("%d of %d succeeded with a correct x; %d failed or wrong" % (njobs - bad, njobs, bad))
sys.exit(1 if bad else 0)
EOF
rc=$?
kill -TERM "$(cat "$W/pid")" 2>/dev/null
for _ in $(seq 300); do kill -0 "$MPID" 2>/dev/null || break; sleep 0.1; done
MPID=""
echo "log: $LOG"
exit $rc
