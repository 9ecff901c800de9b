#!/usr/bin/env bash
# The iteration profile (issue 28, item 1: solver/dist/dprof.c), on PoCL's
# CPU device, through the CLI:
#  - on 2 ranks and on 2 devices of one rank, `--profile --json` reports
#    every rank and part; for cg and cg-single (whose start is timed
#    apart) the host's wall time per iteration agrees with
#    the solve's own loop_ms_per_iteration (within 25%, plus 100 us); each
#    device's busy plus idle time is its span (the gaps between commands
#    are the idle time, by construction within 2%) and not more than the
#    wall; every step of the CG iteration (pack, halo read, interior
#    SpMV, halo write, boundary SpMV, sums, update) took time, and the
#    host's waits do not exceed its wall time;
#  - the commands per iteration are what the loops enqueue: 13 for cg
#    (two reductions), 8 for cg-single (one; alpha and beta go as
#    arguments), within 0.5 (the last round and the confirmation);
#  - pipecg and the preconditioned loop (chebyshev) are profiled too: the
#    updates and the preconditioner's application have their own times;
#  - one part (one rank): the fused loop's device time is reported on the
#    kernels (--backend opencl); on the native CPU loops nothing reaches
#    the device, and the profile says 0 commands;
#  - the halo's copy queue (CLSOLVE_HALO_QUEUE=copy, the GPUs' default)
#    gives the main queue's iterations and residuals bit for bit on 3
#    ranks (cg, cg-single, pipecg), and its time shows as copy_queue_busy;
#  - several right-hand sides are not profiled, and the profile says why;
#  - without --profile there is no "profile" key, and the text output
#    prints the table on stderr.
. "$(dirname "$0")/lib.sh"
t=$TEST_TMP
export POCL_MAX_PTHREAD_COUNT=${POCL_MAX_PTHREAD_COUNT:-1}
command -v mpirun >/dev/null || { bad "mpirun not found"; finish; }
its=40
mrun() { # mrun NAME NP ARGS...
    local name=$1 np=$2
    shift 2
    mpirun --oversubscribe -x POCL_MAX_PTHREAD_COUNT -x POCL_DEVICES -x CLSOLVE_HALO_QUEUE \
        -np "$np" "$CLSOLVE" solve gen:poisson3d:24 --device cpu --min-rows-per-part 1 \
        --maxiter $its --tol 1e-300 --json "$@" >"$t/$name.json" 2>"$t/$name.err"
    local rc=$?
    [ $rc -eq ${want_rc:-4} ] || bad "$name: exit $rc (${want_rc:-4} expected): $(head -3 "$t/$name.err")"
}
export POCL_DEVICES=${POCL_DEVICES:-pthread} CLSOLVE_HALO_QUEUE=main
check() { # check NAME RANKS PARTS_PER_RANK COMMANDS|-
    $PY - "$t/$1.json" "$2" "$3" "$4" "${CLSOLVE_HALO_QUEUE:-main}" <<'PY' && ok || bad "$1: the profile does not add up"
import json, sys
j = json.load(open(sys.argv[1]))
nranks, nparts, cmds = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
copyq = sys.argv[5] == "copy"
p = j["profile"]
bad = []
if p["unit"] != "microseconds per iteration": bad.append("unit")
if p["iterations"] != j["iterations"]: bad.append("iterations %s %s" % (p["iterations"], j["iterations"]))
if len(p["ranks"]) != nranks: bad.append("ranks %d" % len(p["ranks"]))
loop_us = 1e3 * j["times"]["loop_ms_per_iteration"]
for r in p["ranks"]:
    w = r["wall"]
    # cg and cg-single time their start apart (solve_start_s); pipecg's loop time holds
    # its start (PoCL compiles a kernel at its first launch), one part's profile does
    if cmds not in ("-", "+") and not abs(w - loop_us) <= 0.25 * loop_us + 100: bad.append("rank %d wall %.1f vs loop %.1f" % (r["rank"], w, loop_us))
    waited = sum(r["host_waits"].values())
    if waited > w * 1.001 or r["host_other"] < -1: bad.append("rank %d waits %.1f > wall %.1f" % (r["rank"], waited, w))
    if len(r["parts"]) != nparts: bad.append("rank %d parts %d" % (r["rank"], len(r["parts"])))
    for d in r["parts"]:
        busy, idle, span = d["device_busy"], d["device_idle"], d["device_span"]
        if abs(sum(d["steps"].values()) - busy - d["copy_queue_busy"]) > 1e-6 * busy + 1e-6: bad.append("busy and the copy queue are not the steps' sum")
        if (d["copy_queue_busy"] > 0) != (copyq and nranks * nparts > 1): bad.append("copy queue %.1f" % d["copy_queue_busy"])
        if not (busy > 0 and abs(busy + idle - span) <= 0.02 * span + 1): bad.append("busy %.1f + idle %.1f vs span %.1f" % (busy, idle, span))
        if abs(sum(d["idle_before"].values()) - idle) > 1e-6 * idle + 1e-6: bad.append("idle is not idle_before's sum")
        if not d["commands"] > 0: bad.append("events lost (commands %s)" % d["commands"])
        if span > 1.1 * w + 50: bad.append("span %.1f > wall %.1f" % (span, w))
        if cmds != "-":
            for s in ("pack", "halo_read", "interior_spmv", "halo_write", "boundary_spmv") + (("sums", "update") if cmds != "+" else ()):
                if not d["steps"][s] > 0: bad.append("step %s: %s" % (s, d["steps"][s]))
            if cmds != "+" and abs(d["commands"] - float(cmds)) > 0.5: bad.append("commands %.2f, expected %s" % (d["commands"], cmds))
print(sys.argv[1].split("/")[-1], "wall %.1f us/it" % p["ranks"][0]["wall"], "; ".join(bad) or "ok")
sys.exit(1 if bad else 0)
PY
}
mrun cg2 2 --method cg --profile
check cg2 2 1 13
mrun single2 2 --method cg-single --profile
check single2 2 1 8
POCL_DEVICES="pthread pthread" mrun dev2 1 --devices-per-rank 2 --method cg --profile
check dev2 1 2 13
mrun pipe2 2 --method pipecg --profile
check pipe2 2 1 +
mrun cheb2 2 --method cg --precond chebyshev --profile
check cheb2 2 1 +
[ "$(json_get "$t/cheb2.json" "all(d['steps']['precond'] > 0 and d['steps']['update'] > 0 for r in j['profile']['ranks'] for d in r['parts'])")" = True ] &&
    ok || bad "cheb2: the preconditioner's or the update's time is missing"
[ "$(json_get "$t/pipe2.json" "all(d['steps']['update'] > 0 for r in j['profile']['ranks'] for d in r['parts'])")" = True ] &&
    ok || bad "pipe2: the update's time is missing"
# one part on the kernels (the native CPU loops launch no kernel: their
# profile has the host's wall and no device time, checked next)
mrun one 1 --method cg --backend opencl --profile
check one 1 1 -
mrun onen 1 --method cg --profile
[ "$(json_get "$t/onen.json" "'%s %s %s' % (j['backend'], j['profile']['iterations'] == j['iterations'], all(d['commands'] == 0 and d['device_busy'] == 0 for r in j['profile']['ranks'] for d in r['parts']))")" = "native True True" ] &&
    ok || bad "onen: the native loops' profile: $(json_get "$t/onen.json" "j['backend'], j['profile']")"
# the halo's copy queue (the GPUs' default, ld_halo_mark) on PoCL: the
# same iterations and residuals as the main queue, bit for bit (the same
# arithmetic, only the copies' queue differs), and its time in the profile
export CLSOLVE_HALO_QUEUE=copy
mrun cgq 2 --method cg --profile
check cgq 2 1 13
POCL_DEVICES="pthread pthread" mrun devq 1 --devices-per-rank 2 --method cg-single --profile
check devq 1 2 8
for m in cg cg-single pipecg; do
    for q in main copy; do
        CLSOLVE_HALO_QUEUE=$q want_rc=0 mrun conv-$m-$q 3 --method $m --tol 1e-9 --maxiter 500
    done
    a=$(json_get "$t/conv-$m-main.json" "j['iterations'], repr(j['relative_residual']), repr(j['true_relative_residual'])")
    b=$(json_get "$t/conv-$m-copy.json" "j['iterations'], repr(j['relative_residual']), repr(j['true_relative_residual'])")
    [ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "$m on 3 ranks: main queue $a, copy queue $b"
    echo "$m, 3 ranks: main queue $a; copy queue $b"
done
export CLSOLVE_HALO_QUEUE=main
# several right-hand sides: not profiled, and said so
mrun rhs3 2 --method cg --profile -b gen:random:3
[ "$(json_get "$t/rhs3.json" "'right-hand side' in j['profile']['note'] and 'ranks' in j['profile'] and j['profile']['ranks'] == []")" = True ] &&
    ok || bad "3 right-hand sides: $(json_get "$t/rhs3.json" "j.get('profile')")"
mrun plain 2 --method cg
[ "$(json_get "$t/plain.json" "'profile' in j")" = False ] && ok || bad "profile without --profile"
mpirun --oversubscribe -x POCL_MAX_PTHREAD_COUNT -np 2 "$CLSOLVE" solve gen:poisson3d:24 --device cpu \
    --min-rows-per-part 1 --maxiter 10 --tol 1e-300 --profile >"$t/text.out" 2>"$t/text.err"
grep -q "^profile: microseconds per iteration over 10 iterations" "$t/text.err" &&
    grep -q "interior_spmv" "$t/text.err" && ok || bad "the text profile: $(head -3 "$t/text.err")"
finish
