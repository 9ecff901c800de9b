#!/usr/bin/env bash
# docs/openapi.yaml: every operation has a unique operationId and every
# $ref resolves (openapi_check.py lint); the checker catches what it must
# (a self-test on made-up responses that break the document); and one
# daemon session reaches every operation, all of whose responses satisfy
# the document (coverage). Every other daemon test checks its own responses
# against the document when it ends (tests/cli/lib.sh, openapi_validate).
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
SPEC=$here/../../docs/openapi.yaml
CHK="/usr/bin/python3 $here/openapi_check.py"
/usr/bin/python3 -c "import yaml" 2>/dev/null || { bad "python3-yaml is missing (deploy/install-deps.sh --test installs it)"; finish; }
t=$TEST_TMP
M=$CLSOLVE_DATA/matrices

$CHK lint "$SPEC" && ok || bad "openapi lint"

# --- the checker fails where it should ---
ID=0123456789abcdef0123456789abcdef
job='{"id":"'$ID'","kind":"cg","status":"queued","created_at":"2026-01-01T00:00:00.000Z","started_at":null,"finished_at":null,"parameters":{"tol":1e-8},"inputs":{"matrix":"A.mtx"},"bytes_received":1,"progress":{"phase":"queued","iteration":0,"residual":null,"updated_at":"2026-01-01T00:00:00.000Z","phase_started_at":"2026-01-01T00:00:00.000Z","eta_s":null},"result":null,"timings":null,"devices":null,"error":null,"cancel_requested":false,"interrupted_runs":0,"links":{"self":"/v1/jobs/'$ID'"}}'
rec() { printf '{"method":"%s","route":"x","path":"%s","status":%s,"headers":%s,"body_kind":"json","body":%s}\n' "$@"; }
rec GET /v1/jobs/$ID 200 '{"content-type":"application/json"}' "$job" >"$t/good.jsonl"
rec POST /v1/jobs 202 '{"content-type":"application/json","location":"/v1/jobs/'$ID'"}' "$job" >>"$t/good.jsonl"
rec GET /nope 404 '{"content-type":"application/problem+json"}' '{"type":"urn:clsolve:problem:not-found","title":"Not Found","status":404,"detail":"no such resource"}' >>"$t/good.jsonl"
rec PUT /v1/jobs 405 '{"content-type":"application/problem+json","allow":"GET, HEAD, POST"}' '{"type":"urn:clsolve:problem:method-not-allowed","title":"Method Not Allowed","status":405,"detail":"x"}' >>"$t/good.jsonl"
$CHK check "$SPEC" "$t/good.jsonl" >"$t/chk" && ok || bad "valid responses refused: $(cat "$t/chk")"
n=0
while IFS='|' read -r what line; do
    n=$((n + 1))
    printf '%s\n' "$line" >"$t/bad$n.jsonl"
    if $CHK check "$SPEC" "$t/bad$n.jsonl" >"$t/chk" 2>&1; then bad "the checker let through: $what"; else ok; fi
done <<LIST
a job without its status|$(rec GET /v1/jobs/$ID 200 '{"content-type":"application/json"}' "${job/\"status\":\"queued\",/}")
a job with an undocumented member|$(rec GET /v1/jobs/$ID 200 '{"content-type":"application/json"}' "${job/\"kind\"/\"colour\":1,\"kind\"}")
an iteration that is a string|$(rec GET /v1/jobs/$ID 200 '{"content-type":"application/json"}' "${job/\"iteration\":0/\"iteration\":\"0\"}")
a status not in the enum|$(rec GET /v1/jobs/$ID 200 '{"content-type":"application/json"}' "${job/\"queued\",\"created/\"done\",\"created}")
null where null is not allowed|$(rec GET /v1/jobs/$ID 200 '{"content-type":"application/json"}' "${job/\"bytes_received\":1/\"bytes_received\":null}")
a bad date-time|$(rec GET /v1/jobs/$ID 200 '{"content-type":"application/json"}' "${job/2026-01-01T00:00:00.000Z/yesterday}")
202 without Location|$(rec POST /v1/jobs 202 '{"content-type":"application/json"}' "$job")
a status the operation does not list|$(rec GET /v1/jobs/$ID 418 '{"content-type":"application/json"}' '{}')
a content type it does not list|$(rec GET /v1/jobs/$ID 200 '{"content-type":"text/plain"}' '"x"')
an unknown path answered 200|$(rec GET /v2/nope 200 '{"content-type":"application/json"}' '{}')
405 without Allow|$(rec PUT /v1/jobs 405 '{"content-type":"application/problem+json"}' '{"type":"urn:clsolve:problem:method-not-allowed","title":"x","status":405,"detail":"x"}')
a problem without detail|$(rec GET /v1/jobs/$ID 404 '{"content-type":"application/problem+json"}' '{"type":"urn:clsolve:problem:unknown-job","title":"Not Found","status":404}')
LIST

# --- one session that reaches every operation ---
D=$t/data
rm -rf "$D" "$D".*
echo "openapi-test-token-$$" >"$t/token"
daemon_start 1 "$D" --token-file "$t/token" || { bad "daemon start"; finish; }
U=$DURL
A=(-H "Authorization: Bearer $(cat "$t/token")")
cr() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
c1=$(cr "$U/v1/jobs")                                   # 401
id=$(curl -s "${A[@]}" -H 'Content-Disposition: attachment; filename="LFAT5.mtx"' --data-binary @"$M/LFAT5.mtx" "$U/v1/jobs?tol=1e-10" | jget "j['id']")
export CLSOLVE_TOKEN=$(cat "$t/token")
j=$(wait_job "$U" "$id")
[ "$(jget "j['status']" <<<"$j")" = succeeded ] && ok || bad "job: $j"
for p in /v1/jobs "/v1/jobs?limit=1" "/v1/jobs/$id" "/v1/jobs/$id/solution" "/v1/jobs/$id/solution?format=json" \
         "/v1/jobs/$id/solution?format=binary" "/v1/jobs/$id/solution?format=npy" "/v1/jobs/$id/residuals" "/v1/jobs/$id/residuals?since=3" \
         /v1/devices /metrics /healthz /readyz / /app.js /style.css /viewer.js /nope "/v1/jobs/$id/files" \
         "/v1/jobs/$id/bogus"; do
    cr "${A[@]}" "$U$p" >/dev/null
done
etag=$(curl -s -D - -o /dev/null "${A[@]}" "$U/v1/jobs/$id/solution" | sed -n 's/^ETag: *\(.*\)\r$/\1/Ip')
[ "$(cr "${A[@]}" -H "If-None-Match: $etag" "$U/v1/jobs/$id/solution")" = 304 ] && ok || bad "304"
cr "${A[@]}" -I "$U/v1/jobs/$id" >/dev/null                       # HEAD
cr "${A[@]}" -X PUT "$U/v1/jobs" >/dev/null                      # 405
cr "${A[@]}" "$U/v1/jobs?limit=0" >/dev/null                     # 400
cr "${A[@]}" -X POST "$U/v1/jobs/$id/cancel" >/dev/null          # 409
[ "$(cr "${A[@]}" -X POST "$U/v1/jobs/$id/pin")" = 200 ] && ok || bad "pin"
[ "$(cr "${A[@]}" -X DELETE "$U/v1/jobs/$id/pin")" = 200 ] && ok || bad "unpin"
q=$(curl -s "${A[@]}" --data-binary @"$M/1138_bus.mtx" "$U/v1/jobs?tol=1e-12&method=pipecg&precision=mixed&atol=1e-9" | jget "j['id']")
cr "${A[@]}" -X DELETE "$U/v1/jobs/$q" >/dev/null               # 409 while queued or running, or 204
wait_job "$U" "$q" >/dev/null
cr "${A[@]}" -X DELETE "$U/v1/jobs/$q" >/dev/null               # 204
big=$(curl -s "${A[@]}" --data-binary @"$M/1138_bus.mtx" "$U/v1/jobs?tol=1e-14&maxiter=1000000" | jget "j['id']")
cr "${A[@]}" -X POST "$U/v1/jobs/$big/cancel" >/dev/null          # 202
wait_job "$U" "$big" >/dev/null
# POST /v1/batches: two systems (202 with both jobs), then a bad header (400)
bj=$(curl -s "${A[@]}" -F "matrix=@$M/LFAT5.mtx" -F "matrix=@$M/494_bus.mtx" "$U/v1/batches?tol=1e-10")
[ "$(jget "j['count']" <<<"$bj")" = 2 ] && ok || bad "batch: $bj"
for b in $(jget "' '.join(x['id'] for x in j['jobs'])" <<<"$bj"); do wait_job "$U" "$b" >/dev/null; done
[ "$(cr "${A[@]}" -F "matrix=@$M/LFAT5.mtx" -F "matrix=@$CLSOLVE_DATA/bad-mtx/mangle2.mtx" "$U/v1/batches")" = 400 ] && ok || bad "batch with a bad file"
if [ -f "$CLSOLVE_DATA/meshes/spot.obj" ]; then
    pj=$(curl -s "${A[@]}" -F "input=@$CLSOLVE_DATA/meshes/spot.obj" "$U/v1/jobs?kind=curvature" | jget "j['id']")
    wait_job "$U" "$pj" >/dev/null
    f=$(curl -s "${A[@]}" "$U/v1/jobs/$pj/files" | jget "j['files'][0]['name']")
    cr "${A[@]}" "$U/v1/jobs/$pj/files/$f" >/dev/null
    cr "${A[@]}" "$U/v1/jobs/$pj/files/nope.csv" >/dev/null
fi
daemon_stop 60 && ok || bad "daemon stop"
$CHK coverage "$SPEC" "$RESPONSES" && ok || bad "not every operation reached, or a response differs from the document"
finish
