#!/usr/bin/env bash
# The daemon under mpirun -np 2, driven with Python's standard library
# (daemon_client.py): the real matrices are submitted, polled, downloaded
# and their residual recomputed; then 50 jobs from 8 concurrent clients all
# complete and each is accounted for in GET /v1/jobs; then the idle daemon's
# CPU use is measured over 10 s per process (asserted < 5% of a core, the
# figure printed); SIGTERM to rank 0 drains and every rank exits 0.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
M=$CLSOLVE_DATA/matrices
D=$TEST_TMP/data
rm -rf "$D" "$D".*
# --lanes 1: every job is the collective solve over both ranks, which this
# test is about (small jobs beside each other: test_daemon_lanes.sh)
daemon_start 2 "$D" --lanes 1 || { bad "daemon start"; finish; }
U=$DURL
[ "$($DCLIENT request "$U" GET /v1/devices | tail -n +2 | jget "j['ranks']")" = 2 ] && ok || bad "/v1/devices ranks != 2"

for m in 494_bus 1138_bus LFAT5 ani1; do
    id=$($DCLIENT submit "$U" "$M/$m.mtx" --param tol=1e-10 --param precond=jacobi) || { bad "$m submit"; continue; }
    j=$($DCLIENT wait "$U" "$id" --timeout 300)
    st=$(jget "j['status']" <<<"$j")
    [ "$st" = succeeded ] && ok || { bad "$m: $st $j"; continue; }
    $DCLIENT fetch "$U" "$id" "$TEST_TMP/x_$m.mtx" && ok || bad "$m fetch"
    res=$($PY "$here/mmref.py" residual "$M/$m.mtx" "$TEST_TMP/x_$m.mtx")
    lt "$res" 1e-9 && ok || bad "$m: recomputed residual $res"
    [ "$(jget "j['result']['parts']['ranks']" <<<"$j")" = 2 ] && ok || bad "$m: parts.ranks"
    echo "$m: $(jget "j['result']['iterations']" <<<"$j") iterations on $(jget "j['result']['parts']['total']" <<<"$j") part(s), residual $res"
done
# multipart with gzip parts, through the Python client
id=$($DCLIENT submit "$U" "$M/ani1.mtx" --multipart --gzip --param tol=1e-10)
[ "$($DCLIENT wait "$U" "$id" | jget "j['status']")" = succeeded ] && ok || bad "multipart gzip job"

# 50 jobs from 8 concurrent clients
$DCLIENT load "$U" --jobs 50 --clients 8 --param tol=1e-8 --outdir "$TEST_TMP" \
    "$M/LFAT5.mtx" "$M/ani1.mtx" "$M/494_bus.mtx" >"$TEST_TMP/load.json"
rc=$?
[ $rc = 0 ] && ok || bad "load: $(head -c 2000 "$TEST_TMP/load.json")"
echo "load: $(jget "'%d of %d jobs succeeded in %.1f s, all listed: %s' % (j['succeeded'], j['jobs'], j['wall_s'], not j['missing_from_list'])" <"$TEST_TMP/load.json")"
# every downloaded solution is right
nbad=0
for f in "$TEST_TMP"/x_0*.mtx; do
    i=$(basename "$f" .mtx); i=$((10#${i#x_}))
    src=$(jget "j['results']['$i']['file']" <"$TEST_TMP/load.json")
    r=$($PY "$here/mmref.py" residual "$src" "$f")
    lt "$r" 1e-7 || nbad=$((nbad + 1))
done
[ $nbad = 0 ] && ok || bad "$nbad load solutions with a wrong residual"

# idle CPU: every process of the daemon over 10 s
sleep 2
pids="$DPID $(pgrep -P "$DPID" | tr '\n' ' ')"
$PY - $pids >"$TEST_TMP/cpu.txt" <<'PYEOF'
import os, sys, time
pids = [int(p) for p in sys.argv[1:]]
hz = os.sysconf('SC_CLK_TCK')
def ticks(p):
    f = open('/proc/%d/stat' % p).read().rsplit(')', 1)[1].split()
    return int(f[11]) + int(f[12])
a = {p: ticks(p) for p in pids}; t0 = time.time()
time.sleep(10)
b = {p: ticks(p) for p in pids}; dt = time.time() - t0
for p in pids:
    name = open('/proc/%d/comm' % p).read().strip()
    print(p, name, "%.2f" % (100.0 * (b[p] - a[p]) / hz / dt))
PYEOF
echo "idle CPU over 10 s (% of one core):"
sed 's/^/    /' "$TEST_TMP/cpu.txt"
while read -r pid name pct; do
    lt "$pct" 5 && ok || bad "idle $name ($pid) uses $pct% CPU"
done <"$TEST_TMP/cpu.txt"

daemon_stop 120
rc=$?
[ $rc = 0 ] && ok || bad "mpirun exit $rc after SIGTERM"
grep -q "drained" "$D.log" && ok || bad "no drain message"
finish
