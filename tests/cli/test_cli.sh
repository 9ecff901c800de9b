#!/usr/bin/env bash
# The command line contract on generated systems: gen, check, solve with
# every option, the JSON keys DESIGN.md promises, exit codes 0/2/4, b and x0
# files, float precision. Needs no shared data.
. "$(dirname "$0")/lib.sh"
t=$TEST_TMP
expect_exit 0 "$CLSOLVE" gen poisson2d 20 -o $t/p2.mtx
expect_exit 0 "$CLSOLVE" gen poisson3d 12 -o $t/p3.mtx
expect_exit 0 "$CLSOLVE" gen poisson3d27 8 -o $t/p27.mtx
expect_exit 2 "$CLSOLVE" gen poisson4d 8 -o $t/x.mtx
expect_exit 2 "$CLSOLVE" gen poisson3d 0 -o $t/x.mtx

expect_exit 0 "$CLSOLVE" check $t/p3.mtx --json
cp $t/out $t/check.json
[ "$(json_get $t/check.json "j['rows']")" = 1728 ] && ok || bad "check rows"
[ "$(json_get $t/check.json "j['nnz']")" = $((7 * 1728 - 6 * 144)) ] && ok || bad "check nnz"
[ "$(json_get $t/check.json "j['symmetric']")" = True ] && ok || bad "check symmetric"

for m in p2 p3 p27; do
    for pc in none jacobi; do
        for sp in auto scalar vector; do
            expect_exit 0 "$CLSOLVE" solve $t/$m.mtx --precond $pc --spmv $sp --tol 1e-10 --json -o $t/x.mtx
            cp $t/out $t/s.json
            e=$(json_get $t/s.json "j['max_error_vs_exact']")
            lt "$e" 1e-6 && ok || bad "$m $pc $sp: max error vs ones $e"
            r=$($PY "$here/mmref.py" residual $t/$m.mtx $t/x.mtx)
            lt "$r" 1e-10 && ok || bad "$m $pc $sp: recomputed residual $r"
        done
    done
done

# every key DESIGN.md lists
"$CLSOLVE" solve $t/p3.mtx --json >$t/s.json
for k in converged iterations relative_residual true_relative_residual rows nnz method precond \
         precision parts devices times; do
    json_get $t/s.json "j['$k']" >/dev/null 2>&1 && ok || bad "json key $k missing"
done
for k in parse_s setup_s solve_s total_s; do
    json_get $t/s.json "j['times']['$k']" >/dev/null 2>&1 && ok || bad "json times.$k missing"
done
json_get $t/s.json "j['devices'][0]['work_group']['local_size']" >/dev/null 2>&1 && ok || bad "device work_group"

# doubles as written: tol=1e-12 reads back "1e-12", not 9.9999999999999998e-13 (issue 30)
expect_exit 0 "$CLSOLVE" solve $t/p2.mtx --tol 1e-12 --json
grep -q '"tol": 1e-12,' $t/out && ok || bad "tol echoed as $(grep '"tol"' $t/out)"
# a refused matrix has no size: no "rows": 0 (docs/api.md)
printf 'hello world\n' >$t/hello.mtx
expect_exit 3 "$CLSOLVE" solve $t/hello.mtx --json
[ "$(json_get $t/out "('rows' in j, 'nnz' in j, 'error' in j)")" = "(False, False, True)" ] && ok ||
    bad "refused matrix's --json: $(cat $t/out)"

# float precision reaches a float-sized tolerance
expect_exit 0 "$CLSOLVE" solve $t/p3.mtx --precision float --tol 1e-5 --json
cp $t/out $t/f.json
[ "$(json_get $t/f.json "j['precision']")" = float ] && ok || bad "float precision key"
lt "$(json_get $t/f.json "j['true_relative_residual']")" 1e-4 && ok || bad "float true residual"

# not converged: exit 4 and x still written
expect_exit 4 "$CLSOLVE" solve $t/p3.mtx --maxiter 3 -o $t/x4.mtx
[ -s $t/x4.mtx ] && ok || bad "exit 4 wrote no solution"

# explicit b and x0: b = A*1 written by hand, x0 = the exact solution -> 0 iterations
python3 - "$t" <<'PY'
import sys
t = sys.argv[1]
n = 400
open(t + "/ones.mtx", "w").write("%%%%MatrixMarket matrix array real general\n%d 1\n" % n + "1\n" * n)
PY
"$CLSOLVE" solve $t/p2.mtx -o $t/xa.mtx --tol 1e-12 >/dev/null
expect_exit 0 "$CLSOLVE" solve $t/p2.mtx --x0 $t/ones.mtx --json
[ "$(json_get $t/out "j['iterations']")" = 0 ] && ok || bad "x0 = exact should take 0 iterations"
expect_exit 0 "$CLSOLVE" solve $t/p2.mtx -b $t/ones.mtx --tol 1e-10 -o $t/xb.mtx
r=$($PY "$here/mmref.py" residual $t/p2.mtx $t/xb.mtx $t/ones.mtx)
lt "$r" 1e-10 && ok || bad "explicit b residual $r"
expect_exit 3 "$CLSOLVE" solve $t/p3.mtx -b $t/ones.mtx   # wrong length

# usage errors
expect_exit 2 "$CLSOLVE"
expect_exit 2 "$CLSOLVE" frobnicate
expect_exit 2 "$CLSOLVE" solve
expect_exit 2 "$CLSOLVE" solve $t/p3.mtx --tol abc
expect_exit 2 "$CLSOLVE" solve $t/p3.mtx --precond ilu
expect_exit 2 "$CLSOLVE" solve $t/p3.mtx --bogus
expect_exit 0 "$CLSOLVE" devices
expect_exit 0 "$CLSOLVE" devices --json
json_get $t/out "j[0]['name']" >/dev/null && ok || bad "devices json"

# -o when the disk fails (tests/fault/clsfault.c): the third write (the
# header, then a round's jobs, written by matrices/mm_write.c's writer thread
# while the next round is formatted) or the fsync fails; exit 1 naming the
# file and the error, the old x.mtx untouched, no temporary left
if [ -n "${CLSFAULT_LIB:-}" ] && [ -f "$CLSFAULT_LIB" ]; then
    mkdir -p $t/full $t/faults
    for rule in "write ENOSPC 3:write failed: No space left on device" "fsync EIO 1:fsync failed: Input/output error"; do
        echo keep >$t/full/x.mtx
        set -- ${rule%%:*}
        echo "$1 $(cd $t/full && pwd -P)/ $2 $3" >$t/faults/io
        LD_PRELOAD=$CLSFAULT_LIB${LD_PRELOAD:+:$LD_PRELOAD} CLSFAULT_DIR=$t/faults \
            expect_exit 1 "$CLSOLVE" solve gen:poisson3d:60 --tol 1e-6 -o $t/full/x.mtx
        grep -q "x.mtx: ${rule#*:}" $t/err && ok || bad "-o with '$1 $2': $(cat $t/err)"
        [ "$(cat $t/full/x.mtx)" = keep ] && ok || bad "-o with '$1 $2': the old x.mtx changed"
        [ "$(ls $t/full)" = x.mtx ] && ok || bad "-o with '$1 $2' left $(ls $t/full)"
        rm -f $t/faults/io
    done
    set --
fi

# --device gpu opens only the one driver left once PoCL is dropped
# (kernels/ocl_icd.c): a vendors directory of this host's PoCL and a driver
# that is not there gives "no platform" with the hint, CLSOLVE_ICD_ALL=1
# opens PoCL too, and --device cpu is not narrowed
if [ -r /etc/OpenCL/vendors/pocl.icd ]; then
    unset OCL_ICD_VENDORS OCL_ICD_FILENAMES CLSOLVE_ICD_ALL # the user's choices turn it off
    mkdir -p $t/vendors
    cp /etc/OpenCL/vendors/pocl.icd $t/vendors/
    echo libclsolve-test-no-such-driver.so >$t/vendors/gone.icd
    OPENCL_VENDOR_PATH=$t/vendors expect_exit 1 "$CLSOLVE" solve gen:poisson3d:4 --device gpu
    grep -q "no OpenCL platform found.*opened only the OpenCL driver of $t/vendors/gone.icd.*CLSOLVE_ICD_ALL=1" $t/err &&
        ok || bad "narrowed --device gpu: $(cat $t/err)"
    # every driver of the directory (OCL_ICD_VENDORS: a directory to both loaders)
    OCL_ICD_VENDORS=$t/vendors CLSOLVE_ICD_ALL=1 expect_exit 1 "$CLSOLVE" solve gen:poisson3d:4 --device gpu
    grep -q "no GPU OpenCL device; available: 0: CPU" $t/err && ! grep -q "opened only" $t/err &&
        ok || bad "CLSOLVE_ICD_ALL=1: $(cat $t/err)"
    OPENCL_VENDOR_PATH=$t/vendors expect_exit 0 "$CLSOLVE" solve gen:poisson3d:4 --device=cpu --json
    OPENCL_VENDOR_PATH=$t/vendors CLSOLVE_TRACE=1 expect_exit 1 "$CLSOLVE" solve gen:poisson3d:4 --device=gpu
    grep -q "the OpenCL loader opens $t/vendors/gone.icd alone" $t/err && ok || bad "trace of the narrowing"
fi
finish
