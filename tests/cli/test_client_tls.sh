#!/usr/bin/env bash
# The client commands on libcurl: https through a TLS-terminating proxy
# (stunnel4, with a CA and a server certificate for 127.0.0.1 made here by
# openssl) in front of a daemon: --cacert and $CLSOLVE_CACERT, an
# untrusted certificate refused, TLS spoken to a plain port refused;
# proxies from the environment ($http_proxy for http, $https_proxy with
# CONNECT for https, through tests/cli/http_proxy.py, which logs what it
# carries); the Python client over https too; and a 503 (queue full)
# retried after its Retry-After until the job is accepted.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
for tool in stunnel4 openssl; do
    command -v $tool >/dev/null || { echo "SKIP: no $tool (deploy/install-deps.sh --test installs it)" >&2; exit 77; }
done
if "$CLSOLVE" status 2>&1 | grep -q "built without libcurl"; then
    echo "SKIP: this clsolve was built without libcurl" >&2
    exit 77
fi
M=$CLSOLVE_DATA/matrices
t=$TEST_TMP
D=$t/data
rm -rf "$D" "$D".* "$t"/pki "$t"/proxy.* "$t"/stunnel.*
mkdir -p "$t/pki"
PIDS=""
cleanup_extra() {
    local rc=$?
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    (exit $rc)
    daemon_cleanup
}
trap cleanup_extra EXIT

# --- a CA and a certificate for 127.0.0.1 signed by it ---
(
    cd "$t/pki" &&
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=clsolve test CA" &&
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1" &&
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >ext.cnf &&
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext.cnf &&
    openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 2 -subj "/CN=another CA"
) >"$t/pki.log" 2>&1 && ok || { bad "openssl: $(tail -3 "$t/pki.log")"; finish; }

TOKEN=tls-test-token-$$
echo "$TOKEN" >"$t/token"
daemon_start 1 "$D" --lanes 1 --token-file "$t/token" --max-queued 1 || { bad "daemon start"; finish; }
DP=$(cat "$D.port")

# --- stunnel: TLS on a free port, plain HTTP to the daemon ---
TP=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$t/stunnel.conf" <<CONF
foreground = yes
pid =
debug = 3
output = $t/stunnel.log
[clsolve]
accept = 127.0.0.1:$TP
connect = 127.0.0.1:$DP
cert = $t/pki/server.pem
key = $t/pki/server.key
CONF
stunnel4 "$t/stunnel.conf" >/dev/null 2>&1 &
PIDS="$PIDS $!"
for _ in $(seq 1 100); do
    $PY -c "import socket,sys; socket.create_connection(('127.0.0.1',$TP),0.2)" 2>/dev/null && break
    sleep 0.1
done
S=https://127.0.0.1:$TP
export CLSOLVE_TOKEN=$TOKEN

# --- https with --cacert: submit, wait, fetch, status, rm ---
expect_exit 0 "$CLSOLVE" submit "$M/494_bus.mtx" --server "$S" --cacert "$t/pki/ca.pem" --tol 1e-10 --wait -o "$t/x.mtx"
res=$($PY "$here/mmref.py" residual "$M/494_bus.mtx" "$t/x.mtx")
lt "$res" 1e-9 && ok || bad "https submit: recomputed residual $res"
grep -q "submitted job" "$t/out" && ok || bad "https submit output: $(cat "$t/out")"
id=$(sed -n 's/^submitted job \([0-9a-f]*\) (494_bus.mtx)$/\1/p' "$t/out")
CLSOLVE_CACERT=$t/pki/ca.pem expect_exit 0 "$CLSOLVE" status "$id" --server "$S" --json
[ "$(jget "j['inputs']['matrix']" <"$t/out")" = 494_bus.mtx ] && ok || bad "the raw upload lost its name: $(jget "j['inputs']" <"$t/out")"
CLSOLVE_CACERT=$t/pki/ca.pem expect_exit 0 "$CLSOLVE" fetch "$id" --server "$S" -o "$t/x2.mtx"
cmp -s "$t/x.mtx" "$t/x2.mtx" && ok || bad "fetch over https differs"
CLSOLVE_CACERT=$t/pki/ca.pem expect_exit 0 "$CLSOLVE" rm "$id" --server "$S"

# --- refusals --- errors.md: CLIENT-TLS-VERIFY, CLIENT-TLS-HANDSHAKE
expect_exit 1 "$CLSOLVE" status "$id" --server "$S"
grep -q "TLS: the certificate of 127.0.0.1 is not trusted: .*(give the CA that signed it with --cacert FILE)" "$t/err" \
    && ok || bad "untrusted certificate (system store): $(cat "$t/err")"
expect_exit 1 "$CLSOLVE" status "$id" --server "$S" --cacert "$t/pki/other.pem"
grep -q "TLS: the certificate of 127.0.0.1 is not trusted" "$t/err" && ok || bad "another CA: $(cat "$t/err")"
expect_exit 1 "$CLSOLVE" status "$id" --server "https://127.0.0.1:$DP" --cacert "$t/pki/ca.pem"
grep -q "TLS handshake with 127.0.0.1:$DP failed: " "$t/err" && ok || bad "TLS to a plain port: $(cat "$t/err")"

# --- the Python client over https ---
PYTHONPATH=$here/../../python $PY - "$S" "$t/pki/ca.pem" "$TOKEN" "$M/LFAT5.mtx" <<'PY' && ok || bad "Python client over https"
import sys, clsolve
url, ca, token, path = sys.argv[1:5]
c = clsolve.Client(url, token=token, cafile=ca)
job = c.submit(path, tol=1e-12)
job.wait()
x = job.solution()
assert len(x) == 14 and max(abs(v - 1) for v in x) < 1e-5, x  # b = A*1 (LFAT5 is ill-conditioned)
assert job.result["true_relative_residual"] < 1e-11, job.result
try:
    clsolve.Client(url, token=token).health()
    sys.exit("an untrusted certificate was accepted")
except clsolve.TransportError as e:
    assert "CERTIFICATE_VERIFY_FAILED" in str(e), e
PY

# --- proxies from the environment --- errors.md: CLIENT-PROXY
$PY "$here/http_proxy.py" "$t/proxy.port" "$t/proxy.log" 2>"$t/proxy.err" &
PIDS="$PIDS $!"
for _ in $(seq 1 50); do [ -s "$t/proxy.port" ] && break; sleep 0.1; done
PP=$(cat "$t/proxy.port")
id=$("$CLSOLVE" submit "$M/LFAT5.mtx" --server "$DURL")
no_proxy= NO_PROXY= http_proxy=http://127.0.0.1:$PP expect_exit 0 "$CLSOLVE" wait "$id" --server "$DURL"
grep -q "^GET http://127.0.0.1:$DP/v1/jobs/$id" "$t/proxy.log" && ok || bad "http_proxy unused: $(cat "$t/proxy.log" 2>/dev/null)"
no_proxy= NO_PROXY= https_proxy=http://127.0.0.1:$PP expect_exit 0 "$CLSOLVE" status "$id" --server "$S" --cacert "$t/pki/ca.pem"
grep -q "^CONNECT 127.0.0.1:$TP" "$t/proxy.log" && ok || bad "https_proxy unused: $(cat "$t/proxy.log")"
before=$(wc -l <"$t/proxy.log")
no_proxy=127.0.0.1 http_proxy=http://127.0.0.1:$PP expect_exit 0 "$CLSOLVE" status "$id" --server "$DURL"
[ "$(wc -l <"$t/proxy.log")" = "$before" ] && ok || bad "no_proxy ignored: $(tail -2 "$t/proxy.log")"
no_proxy= NO_PROXY= http_proxy=http://127.0.0.1:1 expect_exit 1 "$CLSOLVE" status "$id" --server "$DURL"
grep -q "cannot connect to 127.0.0.1:$DP through the proxy http://127.0.0.1:1: " "$t/err" && ok || bad "dead proxy: $(cat "$t/err")"

# --- 503 retried after Retry-After (--max-queued 1): a long job runs, one
# waits; the queued one is cancelled 2 s later, so the retry after the
# daemon's Retry-After (5 s) gets in ---
"$CLSOLVE" gen poisson2d 900 -o "$t/p2d.mtx" >/dev/null
long=$("$CLSOLVE" submit "$t/p2d.mtx" --tol 1e-13 --server "$DURL")
$DCLIENT running "$DURL" "$long" --iteration 1 --timeout 120 >/dev/null || bad "long job never ran"
q=$("$CLSOLVE" submit "$M/LFAT5.mtx" --server "$DURL")
(sleep 2; "$CLSOLVE" cancel "$q" --server "$DURL" >/dev/null) &
canceller=$!
t0=$(date +%s.%N)
expect_exit 0 "$CLSOLVE" submit "$M/LFAT5.mtx" --server "$DURL" --retries 3
t1=$(date +%s.%N)
wait "$canceller"
grep -q "the job queue is full; retry later (HTTP 503); retrying in 5 s (1 of 3)" "$t/err" && ok || bad "no retry note: $(cat "$t/err")"
$PY -c "import sys; e=float(sys.argv[2])-float(sys.argv[1]); print('accepted after %.1f s' % e); sys.exit(0 if 4.5 <= e < 30 else 1)" "$t0" "$t1" \
    && ok || bad "the retry did not wait for Retry-After"
expect_exit 1 "$CLSOLVE" submit "$M/LFAT5.mtx" --server "$DURL" --retries 0
grep -q "(HTTP 503)" "$t/err" && ok || bad "--retries 0: $(cat "$t/err")"
"$CLSOLVE" cancel "$long" --server "$DURL" >/dev/null
daemon_stop 60 && ok || bad "daemon stop"
finish
