#!/usr/bin/env bash
# bench/engine-quick.sh: the short one-GPU run behind docs/benchmarks.md "One engine"
# (2026-11-23, H100): set-up traced at 256^3, solve_s vs iterations for 128/256/320 x 300/1000
# iterations (3 runs), two ranks on the one GPU, clsolve bench, and the time to
# solution of p256 from a .mtx and of 1138_bus (BUS: path of 1138_bus.mtx, carried).
#   bash bench/engine-quick.sh      (on the device machine, .devpack carried)
source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build /tmp/b -j16 >/dev/null 2>&1 || { echo build failed; exit 1; }
C=/tmp/b/clsolve
uptime
$C solve gen:poisson3d:64 --device gpu --maxiter 5 --tol 1e-300 >/dev/null 2>&1
CLSOLVE_TRACE=1 $C solve gen:poisson3d:256 --device gpu --maxiter 300 --tol 1e-300 2>&1 | grep -E "trace|times"
CLSOLVE_TRACE=1 $C solve gen:poisson3d:256 --device gpu --precond jacobi --maxiter 300 --tol 1e-300 2>&1 | grep -E "trace|times"
for n in 128 256 320; do for it in 300 1000; do for r in 1 2 3; do
  $C solve gen:poisson3d:$n --device gpu --maxiter $it --tol 1e-300 --json 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); t=j['times']; print('np1', $n, $it, round(t['solve_s'],4), round(t['solve_start_s'],4), round(t['loop_ms_per_iteration'],4), round(t['solve_s']*1e3/$it,4), 'setup', round(t['setup_s'],3), 'parse', round(t['parse_s'],3), 'part', round(t['partition_s'],3), 'init', round(t['init_s'],3), 'up', round(t['upload_s'],3), 'gather', round(t['gather_s'],3), 'startup', round(t['startup_s'],3))"
done; done; done
for n in 128 256 320; do for it in 300 1000; do for r in 1 2; do
  mpirun --allow-run-as-root --bind-to none -np 2 $C solve gen:poisson3d:$n --device gpu --maxiter $it --tol 1e-300 --json 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); t=j['times']; print('np2', $n, $it, round(t['solve_s'],4), round(t['solve_s']*1e3/$it,4), round(t['loop_ms_per_iteration'],4), j['parts'])"
done; done; done
$C bench --device gpu --sizes 128,256,320 --no-classic --json 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); [print('bench', r['n'], r['format_detail'], r['ms_per_iteration'], r['floor_ms']) for r in j['results']]"
$C gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx >/dev/null
for r in 1 2; do
  /usr/bin/time -f "wall %e s" $C solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json 2>/tmp/err | python3 -c "import json,sys; j=json.load(sys.stdin); t=j['times']; print('mtx256', j['iterations'], {k: round(v,3) for k,v in t.items()})"; tail -1 /tmp/err
done
for r in 1 2; do
  /usr/bin/time -f "wall %e s" $C solve ${BUS:-.devpack/1138_bus.mtx} --device gpu --precond jacobi --json 2>/tmp/err | python3 -c "import json,sys; j=json.load(sys.stdin); t=j['times']; print('bus', j['iterations'], {k: round(v,4) for k,v in t.items()})"; tail -1 /tmp/err
done
