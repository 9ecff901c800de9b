#!/usr/bin/env bash
# The clsolve client commands (submit, status, wait, fetch, cancel) against
# a daemon with bearer authentication, under mpirun -np 1: the exit codes
# are those of `clsolve solve` (0, 3 bad input, 4 not converged, 5
# breakdown, 1 other, 2 usage); a missing or wrong token is 401 with
# WWW-Authenticate on every route but /healthz; a full queue is 503 with
# Retry-After.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
need_data bad-mtx
if "$CLSOLVE" status 2>&1 | grep -q "unknown command\|built without libcurl"; then
    echo "SKIP: this clsolve has no client commands (submit, status, ...)" >&2
    exit 77
fi
M=$CLSOLVE_DATA/matrices
D=$TEST_TMP/data
rm -rf "$D" "$D".*
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$TOKEN" >"$TEST_TMP/token"
echo "wrong-$TOKEN" >"$TEST_TMP/wrong"
daemon_start 1 "$D" --lanes 1 --token-file "$TEST_TMP/token" --max-queued 2 || { bad "daemon start"; finish; }
U=$DURL

# --- authentication ---
c=$(curl -s -o "$TEST_TMP/body" -D "$TEST_TMP/hdr" -w '%{http_code}' "$U/v1/jobs")
[ "$c" = 401 ] && ok || bad "no token: HTTP $c"
grep -qi '^WWW-Authenticate: Bearer' "$TEST_TMP/hdr" && ok || bad "401 without WWW-Authenticate"
grep -qi '^Content-Type: application/problem+json' "$TEST_TMP/hdr" && ok || bad "401 not problem+json"
for p in /v1/jobs /v1/devices /metrics /v1/jobs/0123456789abcdef0123456789abcdef; do
    c=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer wrong-$TOKEN" "$U$p")
    [ "$c" = 401 ] && ok || bad "wrong token on $p: HTTP $c"
done
c=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$U/v1/jobs")
[ "$c" = 200 ] && ok || bad "right token: HTTP $c"
c=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$M/LFAT5.mtx" "$U/v1/jobs")
[ "$c" = 401 ] && ok || bad "POST without token: HTTP $c"
[ -z "$(ls "$D/jobs")" ] && ok || bad "an unauthenticated POST created a job"
c=$(curl -s -o /dev/null -w '%{http_code}' "$U/healthz")
[ "$c" = 200 ] && ok || bad "healthz needs no token: HTTP $c"

# --- the client, token from a file ---
expect_exit 0 "$CLSOLVE" submit "$M/494_bus.mtx" --tol 1e-10 --precond jacobi --wait -o "$TEST_TMP/x.mtx" \
    --server "$U" --token-file "$TEST_TMP/token"
res=$($PY "$here/mmref.py" residual "$M/494_bus.mtx" "$TEST_TMP/x.mtx")
lt "$res" 1e-9 && ok || bad "submit --wait -o: recomputed residual $res"
grep -q "converged after" "$TEST_TMP/out" && ok || bad "submit --wait prints no summary: $(cat "$TEST_TMP/out")"
expect_exit 1 "$CLSOLVE" submit "$M/494_bus.mtx" --server "$U" --token-file "$TEST_TMP/wrong"
grep -q "401" "$TEST_TMP/err" && ok || bad "wrong token message: $(cat "$TEST_TMP/err")"

# --- token and server from the environment ---
export CLSOLVE_SERVER=$U CLSOLVE_TOKEN=$TOKEN
expect_exit 0 "$CLSOLVE" submit "$M/LFAT5.mtx" --tol 1e-12
id=$(cat "$TEST_TMP/out")
expect_exit 0 "$CLSOLVE" wait "$id" -o "$TEST_TMP/x2.mtx"
res=$($PY "$here/mmref.py" residual "$M/LFAT5.mtx" "$TEST_TMP/x2.mtx")
lt "$res" 1e-11 && ok || bad "wait -o: recomputed residual $res"
expect_exit 0 "$CLSOLVE" status "$id" --json
[ "$(jget "j['status']" <"$TEST_TMP/out")" = succeeded ] && ok || bad "status --json"
expect_exit 0 "$CLSOLVE" fetch "$id" -o "$TEST_TMP/x3.json" --format json
[ "$(jget "j['n']" <"$TEST_TMP/x3.json")" = 14 ] && ok || bad "fetch --format json"
expect_exit 0 "$CLSOLVE" fetch "$id" -o "$TEST_TMP/x3.mtx"
cmp -s "$TEST_TMP/x2.mtx" "$TEST_TMP/x3.mtx" && ok || bad "fetch and wait -o differ"
# rhs and x0 go as multipart
printf '%%%%MatrixMarket matrix array real general\n14 1\n' >"$TEST_TMP/b.mtx"
for i in $(seq 1 14); do echo "$i" >>"$TEST_TMP/b.mtx"; done
expect_exit 0 "$CLSOLVE" submit "$M/LFAT5.mtx" -b "$TEST_TMP/b.mtx" --x0 "$TEST_TMP/b.mtx" --tol 1e-12 --wait -o "$TEST_TMP/xb.mtx"
res=$($PY "$here/mmref.py" residual "$M/LFAT5.mtx" "$TEST_TMP/xb.mtx" "$TEST_TMP/b.mtx")
lt "$res" 1e-11 && ok || bad "submit -b: recomputed residual $res"

# --- exit codes as clsolve solve ---
expect_exit 3 "$CLSOLVE" submit "$CLSOLVE_DATA/bad-mtx/mangle1.mtx"
grep -q "mangle1.mtx:1:" "$TEST_TMP/err" && ok || bad "bad banner message (the file keeps its name): $(cat "$TEST_TMP/err")"
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 x 1\n' >"$TEST_TMP/deep.mtx"
expect_exit 3 "$CLSOLVE" submit "$TEST_TMP/deep.mtx" -b "$TEST_TMP/b.mtx" --wait
grep -q "deep.mtx:4:" "$TEST_TMP/err" && ok || bad "deep error message: $(cat "$TEST_TMP/err")"
expect_exit 4 "$CLSOLVE" submit "$M/494_bus.mtx" --maxiter 2 --wait
expect_exit 5 "$CLSOLVE" submit "$M/west0067.mtx" --wait
expect_exit 1 "$CLSOLVE" status 0123456789abcdef0123456789abcdef
expect_exit 2 "$CLSOLVE" status not-an-id
expect_exit 2 "$CLSOLVE" submit "$M/LFAT5.mtx" --tol 3
expect_exit 2 "$CLSOLVE" fetch "$id"
# a file that cannot be opened is exit 1, as for `clsolve solve` (docs/errors.md FILE-OPEN)
expect_exit 1 "$CLSOLVE" submit "$TEST_TMP/no-such-file.mtx"
expect_exit 1 "$CLSOLVE" status "$id" --server http://127.0.0.1:1

# --- cancel, and the queue limit (--max-queued 2) ---
"$CLSOLVE" gen poisson2d 900 -o "$TEST_TMP/p2d.mtx" >/dev/null  # long enough to be cancelled while running, even on a fast machine
long=$("$CLSOLVE" submit "$TEST_TMP/p2d.mtx" --tol 1e-12)
$DCLIENT running "$U" "$long" --iteration 1 --timeout 120 >/dev/null || bad "long job never ran"
q1=$("$CLSOLVE" submit "$M/LFAT5.mtx")
q2=$("$CLSOLVE" submit "$M/LFAT5.mtx")
c=$(curl -s -o "$TEST_TMP/body" -D "$TEST_TMP/hdr" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
    --data-binary @"$M/LFAT5.mtx" "$U/v1/jobs")
[ "$c" = 503 ] && ok || bad "full queue: HTTP $c"
grep -qi '^Retry-After: [0-9]' "$TEST_TMP/hdr" && ok || bad "503 without Retry-After"
expect_exit 1 "$CLSOLVE" submit "$M/LFAT5.mtx" --retries 0  # a full queue: no retry
expect_exit 0 "$CLSOLVE" cancel "$q2"
expect_exit 0 "$CLSOLVE" cancel "$long"
grep -q "cancel requested" "$TEST_TMP/out" && ok || bad "cancel running: $(cat "$TEST_TMP/out")"
expect_exit 1 "$CLSOLVE" wait "$long"
# a cancelled job reads as cancelled, at the record's iteration, with no
# "not converged" and no "(true nan)" (issue 30)
"$CLSOLVE" status "$long" --json >"$TEST_TMP/long.json"
lit=$(json_get "$TEST_TMP/long.json" "j['progress']['iteration']")
rit=$(json_get "$TEST_TMP/long.json" "(j.get('result') or {}).get('iterations', j['progress']['iteration'])")
grep -q "^cancelled after $lit iterations" "$TEST_TMP/out" && [ "$lit" = "$rit" ] && ! grep -qE "not converged|nan" "$TEST_TMP/out" &&
    ok || bad "wait on a cancelled job (record: $lit iterations, result $rit): $(cat "$TEST_TMP/out")"
[ "$(json_get "$TEST_TMP/long.json" "j['status']")" = cancelled ] && ok || bad "long job not cancelled"
expect_exit 0 "$CLSOLVE" wait "$q1"
# cancel never deletes: a finished job is left with its results (exit 1)
expect_exit 1 "$CLSOLVE" cancel "$q1"
grep -q "already succeeded" "$TEST_TMP/err" && ok || bad "cancel of a finished job: $(cat "$TEST_TMP/err")"
expect_exit 0 "$CLSOLVE" status "$q1"
# rm removes a finished job; a running one is refused
expect_exit 0 "$CLSOLVE" rm "$q1"
grep -q "removed" "$TEST_TMP/out" && ok || bad "rm of a finished job: $(cat "$TEST_TMP/out")"
expect_exit 1 "$CLSOLVE" status "$q1"
expect_exit 1 "$CLSOLVE" rm "$q1"
long2=$("$CLSOLVE" submit "$TEST_TMP/p2d.mtx" --tol 1e-12)
$DCLIENT running "$U" "$long2" --iteration 1 --timeout 120 >/dev/null || bad "second long job never ran"
expect_exit 1 "$CLSOLVE" rm "$long2"
grep -q "is running: cancel it first" "$TEST_TMP/err" && ok || bad "rm of a running job: $(cat "$TEST_TMP/err")"
expect_exit 0 "$CLSOLVE" cancel "$long2"
expect_exit 1 "$CLSOLVE" wait "$long2"

# a first line that is not a banner, sent in pieces that split its first
# word ('he', 'llo world'): the daemon quotes the word the local reader
# quotes, 'hello', not the piece it had (issue 30)
printf 'hello world\n1 1 1\n1 1 1\n' >"$TEST_TMP/hello.mtx"
expect_exit 3 "$CLSOLVE" solve "$TEST_TMP/hello.mtx"
local_msg=$(sed -n 's/^.*hello\.mtx:1: //p' "$TEST_TMP/err")
remote=$($PY - "$U" "$TOKEN" <<'PY'
import json, socket, sys, time, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
body = b"hello world\n1 1 1\n1 1 1\n"
s = socket.create_connection((u.hostname, u.port), timeout=30)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
          b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (sys.argv[2].encode(), len(body)))
for piece in (body[:2], body[2:5], body[5:]):
    time.sleep(0.3)
    try:
        s.sendall(piece)
    except OSError:
        break  # answered and closed before the rest: fine
data = b""
while True:
    try:
        d = s.recv(65536)
    except OSError:
        break
    if not d:
        break
    data += d
head, _, rest = data.partition(b"\r\n\r\n")
print(json.loads(rest[rest.index(b"{"):rest.rindex(b"}") + 1])["detail"])
PY
)
remote_msg=${remote#*:1: }
[ -n "$local_msg" ] && [ "$remote_msg" = "$local_msg" ] && ok ||
    bad "the daemon's banner message differs from the reader's: '$remote' vs '$local_msg'"
daemon_stop 60 && ok || bad "daemon stop"
finish
