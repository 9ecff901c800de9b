#!/usr/bin/env bash
# The HTTP API end to end with curl, under mpirun -np 1: the real matrices
# are submitted, polled, downloaded in all three formats and their residual
# recomputed here (mmref.py); gzip and multipart uploads (rhs, x0, options);
# every bad-mtx file answers 400 with the line or fails its job with the
# line; the error catalogue of the routes (404, 405 with Allow, 400 for bad
# parameters, 413 by Content-Length and by counted bytes); paging; metrics;
# DELETE of a finished job.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
need_data bad-mtx
M=$CLSOLVE_DATA/matrices
D=$TEST_TMP/data
rm -rf "$D" "$D".*
daemon_start 1 "$D" --max-upload 400000 || { bad "daemon start"; finish; }
U=$DURL

# code METHOD PATH [curl args]: prints the HTTP status, body in $TEST_TMP/body
code() {
    local m=$1 p=$2
    shift 2
    curl -s -o "${OUT:-$TEST_TMP/body}" -D "$TEST_TMP/hdr" -w '%{http_code}' -X "$m" "$@" "$U$p"
}
expect() { # expect WANT GOT WHAT
    if [ "$1" = "$2" ]; then ok; else bad "$3: HTTP $2, expected $1: $(head -c 300 "$TEST_TMP/body")"; fi
}
body() { jget "$1" <"$TEST_TMP/body"; }

expect 200 "$(code GET /healthz)" healthz
expect ok "$(body "j['status']")" "healthz status"
expect 200 "$(code GET /v1/devices)" devices
expect 1 "$(body "j['ranks']")" "devices ranks"
[ "$(body "len(j['per_rank'][0]['devices'])")" -ge 1 ] && ok || bad "no device listed"

# --- the real matrices, raw bodies, curl ---
declare -A JOB
for m in 494_bus 1138_bus LFAT5 ani1; do
    pc=none
    [ $m = 1138_bus ] && pc=jacobi
    c=$(code POST "/v1/jobs?tol=1e-10&precond=$pc" --data-binary @"$M/$m.mtx")
    expect 202 "$c" "submit $m"
    id=$(body "j['id']")
    grep -qi "^Location: /v1/jobs/$id" "$TEST_TMP/hdr" && ok || bad "$m: no Location header"
    expect queued "$(body "j['status']")" "$m initial status"
    JOB[$m]=$id
done
for m in 494_bus 1138_bus LFAT5 ani1; do
    id=${JOB[$m]}
    j=$(wait_job "$U" "$id")
    st=$(jget "j['status']" <<<"$j")
    if [ "$st" != succeeded ]; then bad "$m: $st: $j"; continue; fi
    ok
    expect 200 "$(OUT="$TEST_TMP/x_$m.mtx" code GET "/v1/jobs/$id/solution")" "$m solution"
    res=$($PY "$here/mmref.py" residual "$M/$m.mtx" "$TEST_TMP/x_$m.mtx")
    lt "$res" 1e-9 && ok || bad "$m: recomputed residual $res"
    tr=$(jget "j['result']['true_relative_residual']" <<<"$j")
    $PY -c "import sys; a,b=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b) <= 1e-3*b + 1e-15 else 1)" "$tr" "$res" \
        && ok || bad "$m: reported true residual $tr, recomputed $res"
    its=$(jget "j['result']['iterations']" <<<"$j")
    echo "$m: $its iterations, residual $res"
    # residual history: iterations + 1 values, the last one below tol
    expect 200 "$(code GET "/v1/jobs/$id/residuals")" "$m residuals"
    [ "$(body "j['count']")" = $((its + 1)) ] && ok || bad "$m: residual count $(body "j['count']") for $its iterations"
    lt "$(body "j['residuals'][-1]")" 1e-10 && ok || bad "$m: last residual $(body "j['residuals'][-1]")"
    [ "$(jget "j['progress']['iteration']" <<<"$j")" = "$its" ] && ok || bad "$m: progress.iteration"
    [ "$(jget "len(j['devices'])" <<<"$j")" -ge 1 ] && ok || bad "$m: no devices in the job"
    [ "$(jget "sorted(j['timings'])" <<<"$j")" = "['gather_s', 'init_s', 'loop_ms_per_iteration', 'ms_per_iteration', 'parse_s', 'parsed_while_uploading', 'partition_s', 'precond_setup_s', 'queue_s', 'receive_s', 'setup_s', 'solve_confirm_s', 'solve_s', 'solve_start_s', 'total_s', 'upload_s', 'warm_devices', 'write_s']" ] \
        && ok || bad "$m: timings keys"
done
# the three formats agree exactly
id=${JOB[494_bus]}
OUT="$TEST_TMP/x.json" code GET "/v1/jobs/$id/solution?format=json" >/dev/null
OUT="$TEST_TMP/x.bin" code GET "/v1/jobs/$id/solution?format=binary" >/dev/null
$PY - "$TEST_TMP/x_494_bus.mtx" "$TEST_TMP/x.json" "$TEST_TMP/x.bin" <<'PYEOF' && ok || bad "solution formats disagree"
import json, struct, sys
lines = [l for l in open(sys.argv[1]) if not l.startswith('%')]
x = [float(v) for v in lines[1:]]
j = json.load(open(sys.argv[2]))
b = open(sys.argv[3], 'rb').read()
xb = list(struct.unpack('<%dd' % (len(b) // 8), b))
assert j['n'] == len(x) == len(xb) == 494, (j['n'], len(x), len(xb))
assert x == j['x'] == xb
PYEOF
expect 400 "$(code GET "/v1/jobs/$id/solution?format=xml")" "bad solution format"
# .npy (?format=npy, or Accept: application/x-npy) and the Accept header:
# each answer is the same x as solution.bin, with its own Content-Type
OUT="$TEST_TMP/x.npy" code GET "/v1/jobs/$id/solution?format=npy" >/dev/null
OUT="$TEST_TMP/x2.npy" code GET "/v1/jobs/$id/solution" -H 'Accept: application/x-npy' >/dev/null
grep -qi '^Content-Type: application/x-npy' "$TEST_TMP/hdr" && ok || bad "npy Content-Type: $(cat "$TEST_TMP/hdr")"
OUT="$TEST_TMP/xa.bin" code GET "/v1/jobs/$id/solution" -H 'Accept: text/html;q=0.9, application/octet-stream' >/dev/null
grep -qi '^Content-Type: application/octet-stream' "$TEST_TMP/hdr" && ok || bad "Accept octet-stream: $(cat "$TEST_TMP/hdr")"
OUT="$TEST_TMP/xa.json" code GET "/v1/jobs/$id/solution" -H 'Accept: application/json' >/dev/null
OUT="$TEST_TMP/xa.mtx" code GET "/v1/jobs/$id/solution" -H 'Accept: application/json;q=0.5, */*' >/dev/null
grep -qi '^Vary: Accept,' "$TEST_TMP/hdr" && ok || bad "no Vary: Accept"
cmp -s "$TEST_TMP/xa.mtx" "$TEST_TMP/x_494_bus.mtx" && cmp -s "$TEST_TMP/xa.bin" "$TEST_TMP/x.bin" &&
    cmp -s "$TEST_TMP/xa.json" "$TEST_TMP/x.json" && cmp -s "$TEST_TMP/x.npy" "$TEST_TMP/x2.npy" && ok ||
    bad "an Accept header gave another representation than ?format="
NPY_PY=/usr/bin/python3
[ -x $NPY_PY ] || NPY_PY=$PY
$NPY_PY - "$TEST_TMP/x.npy" "$TEST_TMP/x.bin" <<'PYEOF' && ok || bad "the .npy is not solution.bin"
import ast, struct, sys
d = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
assert d[:8] == b"\x93NUMPY\x01\x00", d[:8]
hl = struct.unpack("<H", d[8:10])[0]
assert (10 + hl) % 64 == 0 and d[10 + hl - 1:10 + hl] == b"\n", hl
h = ast.literal_eval(d[10:10 + hl].decode("latin1"))
assert h == {"descr": "<f8", "fortran_order": False, "shape": (494,)}, h
assert d[10 + hl:] == b
try:
    import io, numpy as np
except ImportError:
    print("numpy is not installed: the .npy was checked by its layout only")
    sys.exit(0)
x = np.load(io.BytesIO(d))
assert x.dtype == np.float64 and x.shape == (494,) and x.tobytes() == b
print("np.load reads the .npy: %d values, the same bits as solution.bin" % x.size)
PYEOF
expect 406 "$(code GET "/v1/jobs/$id/solution" -H 'Accept: image/png')" "an Accept we cannot answer"

# --- gzip: with Content-Encoding, and a gzip body sent without it ---
gzip -c "$M/ani1.mtx" >"$TEST_TMP/ani1.mtx.gz"
expect 202 "$(code POST "/v1/jobs?tol=1e-10" -H 'Content-Encoding: gzip' --data-binary @"$TEST_TMP/ani1.mtx.gz")" "gzip upload"
gz1=$(body "j['id']")
expect 202 "$(code POST "/v1/jobs?tol=1e-10" --data-binary @"$TEST_TMP/ani1.mtx.gz")" "gzip body by magic"
gz2=$(body "j['id']")
for id in $gz1 $gz2; do
    st=$(wait_job "$U" "$id" | jget "j['status']")
    [ "$st" = succeeded ] && ok || bad "gzip job $id: $st"
done
printf '\x1f\x8b\x08\x00garbage' >"$TEST_TMP/bad.gz"
expect 400 "$(code POST /v1/jobs --data-binary @"$TEST_TMP/bad.gz")" "corrupt gzip"

# --- multipart: rhs, x0 and options ---
$PY - "$TEST_TMP" <<'PYEOF'
import sys
d = sys.argv[1]
with open(d + "/b.mtx", "w") as f:
    f.write("%%MatrixMarket matrix array real general\n14 1\n" + "".join("%d\n" % (i % 3 + 1) for i in range(14)))
with open(d + "/x0.mtx", "w") as f:
    f.write("%%MatrixMarket matrix array real general\n14 1\n" + "0.5\n" * 14)
PYEOF
c=$(code POST /v1/jobs -F "matrix=@$M/LFAT5.mtx;filename=LFAT5.mtx" -F "rhs=@$TEST_TMP/b.mtx" \
    -F "x0=@$TEST_TMP/x0.mtx" -F 'options={"tol": 1e-11, "precond": "jacobi"};type=application/json')
expect 202 "$c" "multipart submit"
mp=$(body "j['id']")
expect LFAT5.mtx "$(body "j['inputs']['matrix']")" "multipart matrix name"
expect jacobi "$(body "j['parameters']['precond']")" "options part precond"
j=$(wait_job "$U" "$mp")
expect succeeded "$(jget "j['status']" <<<"$j")" "multipart job: $j"
OUT="$TEST_TMP/x_mp.mtx" code GET "/v1/jobs/$mp/solution" >/dev/null
res=$($PY "$here/mmref.py" residual "$M/LFAT5.mtx" "$TEST_TMP/x_mp.mtx" "$TEST_TMP/b.mtx")
lt "$res" 1e-10 && ok || bad "multipart rhs: recomputed residual $res"
expect 400 "$(code POST /v1/jobs -F "matrix=@$M/LFAT5.mtx" -F "bogus=@$TEST_TMP/b.mtx")" "unknown part"
expect 400 "$(code POST /v1/jobs -F "rhs=@$TEST_TMP/b.mtx")" "multipart without matrix"
expect 400 "$(code POST /v1/jobs -F "matrix=@$M/LFAT5.mtx" -F 'options={"tol": 7}')" "bad options tol"
expect 400 "$(code POST /v1/jobs -F "matrix=@$M/LFAT5.mtx" -F 'options=[1,2')" "options not JSON"

# --- bad input: 400 with the line while uploading, or a failed job with it ---
for f in "$CLSOLVE_DATA"/bad-mtx/*; do
    n=$(basename "$f")
    c=$(code POST /v1/jobs --data-binary @"$f")
    if [ "$c" = 400 ]; then
        line=$(body "j.get('line')")
        case "$(body "j['detail']")" in
        "matrix.mtx:$line:"*) ok ;;
        *) bad "$n: 400 without 'matrix.mtx:LINE:': $(cat "$TEST_TMP/body")" ;;
        esac
        [ "$(body "j['type']")" != "" ] && [ "$(body "j['status']")" = 400 ] && ok || bad "$n: problem fields"
        grep -qi '^Content-Type: application/problem+json' "$TEST_TMP/hdr" && ok || bad "$n: content type"
        echo "$n: 400 $(body "j['detail']")"
    elif [ "$c" = 202 ]; then
        id=$(body "j['id']")
        j=$(wait_job "$U" "$id")
        st=$(jget "j['status']" <<<"$j")
        msg=$(jget "j['error']['message']" <<<"$j")
        if [ "$st" = failed ] && [ "${msg#matrix.mtx}" != "$msg" ]; then ok; else bad "$n: job $st: $msg"; fi
        echo "$n: job failed: $msg"
    else
        bad "$n: HTTP $c"
    fi
done
# the same through multipart names the uploaded file
c=$(code POST /v1/jobs -F "matrix=@$CLSOLVE_DATA/bad-mtx/mangle2.mtx")
expect 400 "$c" "multipart bad banner"
case "$(body "j['detail']")" in mangle2.mtx:1:*) ok ;; *) bad "multipart name: $(body "j['detail']")" ;; esac
# an error beyond the header fails the job with the reader's FILE:LINE
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 x\n3 3 1\n' >"$TEST_TMP/deep.mtx"
expect 202 "$(code POST /v1/jobs -F "matrix=@$TEST_TMP/deep.mtx;filename=deep.mtx")" "deep error submit"
j=$(wait_job "$U" "$(body "j['id']")")
expect failed "$(jget "j['status']" <<<"$j")" "deep error status"
expect 4 "$(jget "j['error']['line']" <<<"$j")" "deep error line"
expect 3 "$(jget "j['error']['exit_code']" <<<"$j")" "deep error exit code"
case "$(jget "j['error']['message']" <<<"$j")" in deep.mtx:4:*) ok ;; *) bad "deep error message: $j" ;; esac
: >"$TEST_TMP/empty"
expect 400 "$(code POST /v1/jobs --data-binary @"$TEST_TMP/empty")" "empty body"
expect 400 "$(code POST /v1/jobs --data-binary 'hello')" "no banner"

# --- limits ---
head -c 500000 /dev/zero | tr "\\0" 1 >"$TEST_TMP/big"
expect 413 "$(code POST /v1/jobs --data-binary @"$TEST_TMP/big")" "oversize by Content-Length"
{ printf '%%%%MatrixMarket matrix coordinate real general\n%% '; head -c 500000 /dev/zero | tr "\\0" c; } >"$TEST_TMP/big.mtx"
expect 413 "$(code POST /v1/jobs -H 'Transfer-Encoding: chunked' --data-binary @"$TEST_TMP/big.mtx")" "oversize counted (chunked)"
# the refused uploads' files go as the daemon finishes with each connection,
# which under valgrind can be a moment after the client has its answer (the
# fresh-clone CI saw incoming/ not yet empty once, and empty when it listed it)
for _ in $(seq 50); do [ -z "$(ls "$D/incoming")" ] && break; sleep 0.1; done
[ -z "$(ls "$D/incoming")" ] && ok || bad "rejected uploads left files: $(ls "$D/incoming")"

# --- the error catalogue of the routes ---
expect 404 "$(code GET /v1/jobs/0123456789abcdef0123456789abcdef)" "unknown job"
expect 404 "$(code GET /v1/jobs/../../etc/passwd)" "path in id"
expect 404 "$(code GET /v1/jobs/0123456789ABCDEF0123456789ABCDEF)" "upper-case id"
expect 404 "$(code GET /nope)" "unknown route"
expect 404 "$(code GET /v1/jobs/0123456789abcdef0123456789abcdef/solution)" "unknown job solution"
expect 405 "$(code PUT /v1/jobs)" "PUT /v1/jobs"
grep -qi '^Allow: GET, HEAD, POST' "$TEST_TMP/hdr" && ok || bad "405 without Allow"
expect 405 "$(code POST "/v1/jobs/${JOB[LFAT5]}")" "POST a job"
expect 405 "$(code DELETE /metrics)" "DELETE /metrics"
for q in "tol=abc" "tol=2" "maxiter=-1" "maxiter=1.5" "precond=ilu" "method=gmres" "precision=half" \
         "kind=bogus" "color=blue"; do
    expect 400 "$(code POST "/v1/jobs?$q" --data-binary @"$M/LFAT5.mtx")" "bad parameter $q"
    [ -n "$(body "j['detail']")" ] && ok || bad "$q: no detail"
done
expect 400 "$(code GET "/v1/jobs?limit=0")" "limit=0"
expect 400 "$(code GET "/v1/jobs?after=xyz")" "after=xyz"
expect 400 "$(code GET "/v1/jobs?status=done")" "status=done"
expect 400 "$(code GET "/v1/jobs?frobnicate=1")" "unknown list parameter"
expect 400 "$(code GET "/v1/jobs/${JOB[LFAT5]}/residuals?since=-1")" "since=-1"

# --- listing: newest first, paging by cursor and by page number ---
expect 200 "$(code GET "/v1/jobs?limit=2")" "list"
first=$(body "','.join(x['id'] for x in j['jobs'])")
next=$(body "j['next']")
total=$(body "j['total']")
[ "$(body "len(j['jobs'])")" = 2 ] && [ "$next" != None ] && ok || bad "paging: $(head -c 300 "$TEST_TMP/body")"
expect 200 "$(code GET "$next")" "next page"
second=$(body "','.join(x['id'] for x in j['jobs'])")
expect 200 "$(code GET "/v1/jobs?limit=2&page=2")" "page=2"
expect "$second" "$(body "','.join(x['id'] for x in j['jobs'])")" "page=2 equals the cursor's page"
expect 200 "$(code GET "/v1/jobs?limit=1000")" "list all"
all=$(body "[x['id'] for x in j['jobs']]")
expect "$total" "$(body "len(j['jobs'])")" "total"
$PY -c "
import json,sys
jobs=json.load(open(sys.argv[1]))['jobs']
c=[x['created_at'] for x in jobs]
sys.exit(0 if c == sorted(c, reverse=True) else 1)" "$TEST_TMP/body" && ok || bad "list not newest first"
expect 200 "$(code GET "/v1/jobs?status=failed&limit=1000")" "status filter"
$PY -c "import json,sys; sys.exit(0 if all(x['status']=='failed' for x in json.load(open(sys.argv[1]))['jobs']) else 1)" "$TEST_TMP/body" && ok || bad "status filter"

# --- a physics job: a mesh as the part 'input', its outputs listed and served ---
if [ -f "$CLSOLVE_DATA/meshes/spot.obj" ]; then
    c=$(code POST "/v1/jobs?kind=curvature" -F "input=@$CLSOLVE_DATA/meshes/spot.obj")
    if [ "$c" = 202 ]; then
        ok
        pid=$(body "j['id']")
        j=$(wait_job "$U" "$pid")
        expect succeeded "$(jget "j['status']" <<<"$j")" "curvature job: $(head -c 300 <<<"$j")"
        case "$j" in *"$D"*) bad "a physics result shows the daemon's path" ;; *) ok ;; esac
        expect 200 "$(code GET "/v1/jobs/$pid/files")" "physics files"
        f=$(body "j['files'][0]['name']")
        expect 200 "$(OUT="$TEST_TMP/out.bin" code GET "/v1/jobs/$pid/files/$f")" "physics output $f"
        expect 404 "$(code GET "/v1/jobs/$pid/files/..%2Fjob.json")" "physics file outside out/"
    else
        # a daemon built without the physics kinds says so
        expect 400 "$c" "curvature job"
    fi
    expect 400 "$(code POST "/v1/jobs?kind=springs" -F "matrix=@$M/LFAT5.mtx")" "physics job with a matrix part"
fi

# --- docs/examples/poll.py (standard library only; long polls) ---
$PY "$here/../../docs/examples/poll.py" "$M/494_bus.mtx" "$TEST_TMP/x_poll.mtx" --server "$U" --tol 1e-10 \
    >"$TEST_TMP/poll.out" 2>"$TEST_TMP/poll.err" && ok || bad "docs/examples/poll.py: exit $?: $(tail -2 "$TEST_TMP/poll.err")"
res=$($PY "$here/mmref.py" residual "$M/494_bus.mtx" "$TEST_TMP/x_poll.mtx")
lt "$res" 1e-9 && ok || bad "poll.py's x: recomputed residual $res"

# --- metrics ---
expect 200 "$(code GET /metrics)" metrics
grep -q '^clsolve_jobs{state="succeeded"} [1-9]' "$TEST_TMP/body" && ok || bad "metrics jobs"
grep -q '^clsolve_bytes_received_total [1-9]' "$TEST_TMP/body" && ok || bad "metrics bytes"
grep -q '^clsolve_iterations_total [1-9]' "$TEST_TMP/body" && ok || bad "metrics iterations"
grep -q '^clsolve_device_busy_seconds_total{rank="0"' "$TEST_TMP/body" && ok || bad "metrics device busy"
grep -q '^clsolve_solve_seconds_total ' "$TEST_TMP/body" && ok || bad "metrics solve seconds"

# --- DELETE of a finished job removes it and its files ---
id=${JOB[ani1]}
expect 204 "$(code DELETE "/v1/jobs/$id")" "delete finished"
expect 404 "$(code GET "/v1/jobs/$id")" "deleted job"
[ ! -e "$D/jobs/$id" ] && ok || bad "deleted job's files remain"
expect 404 "$(code DELETE "/v1/jobs/$id")" "delete twice"

daemon_stop 60
rc=$?
[ $rc = 0 ] && ok || bad "daemon exit $rc"

# --- restart: finished jobs are kept; --keep 3 removes the oldest beyond 3 ---
before=$(ls "$D/jobs" | wc -l)
daemon_start 1 "$D" --keep 3 || { bad "restart with --keep"; finish; }
U=$DURL
[ "$(ls "$D/jobs" | wc -l)" = 3 ] && ok || bad "--keep 3 left $(ls "$D/jobs" | wc -l) of $before jobs"
expect 200 "$(code GET "/v1/jobs?limit=1000")" "list after restart"
expect 3 "$(body "j['total']")" "jobs listed after --keep 3"
daemon_stop 60 && ok || bad "second stop"
finish
