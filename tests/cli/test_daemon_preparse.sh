#!/usr/bin/env bash
# The daemon parses a matrix while its upload arrives (net/preparse.h):
#  - a 9 MB poisson3d upload, sent at a limited rate so that it lasts about
#    half a second, is parsed as it lands (timings.parsed_while_uploading)
#    and its x is the CLI's on the same file (relative 1e-12);
#  - the same through a multipart upload (`clsolve submit`);
#  - a bad line near the end of a large upload: the job fails with the
#    file's line, as without the preparse (the parse that failed is dropped
#    and the job's own read reports);
#  - gzip and small uploads are read by the job, as before;
#  - an upload abandoned half-way leaves the daemon serving, and the next
#    large upload is parsed as it arrives again.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
t=$TEST_TMP
D=$t/data
rm -rf "$D" "$D".*
daemon_start 1 "$D" --parse-while-uploading on || { bad "daemon start"; finish; }
export CLSOLVE_SERVER=$DURL
"$CLSOLVE" gen poisson3d 50 -o "$t/p50.mtx" >/dev/null
"$CLSOLVE" solve "$t/p50.mtx" --tol 1e-10 -o "$t/cli.mtx" >/dev/null 2>&1 || bad "the CLI's solve"

# post FILE [curl args]: the job's id (raw upload)
post() {
    local f=$1
    shift
    curl -s "$@" --data-binary @"$f" "$DURL/v1/jobs?tol=1e-10" |
        $PY -c 'import json,sys; print(json.load(sys.stdin).get("id", ""))'
}
job() { curl -s "$DURL/v1/jobs/$1?wait=60" >"$t/job.json"; }
field() { json_get "$t/job.json" "$1"; }

# x of job ID against the CLI's: relative difference
xdiff() {
    curl -s "$DURL/v1/jobs/$1/solution" -o "$t/x.mtx"
    $PY - "$t/cli.mtx" "$t/x.mtx" <<'PY'
import sys
def vec(p):
    with open(p) as f:
        return [float(l) for l in [l for l in f if l.strip() and not l.startswith('%')][1:]]
a, b = vec(sys.argv[1]), vec(sys.argv[2])
num = max(abs(u - v) for u, v in zip(a, b)) if len(a) == len(b) else float("inf")
print(num / max(abs(u) for u in a))
PY
}

id=$(post "$t/p50.mtx" --limit-rate 16M)
job "$id"
[ "$(field "(j['status'], j['timings']['parsed_while_uploading'])")" = "('succeeded', True)" ] &&
    ok || bad "raw upload: $(field "(j['status'], j.get('timings'))")"
d=$(xdiff "$id")
lt "$d" 1e-12 && ok || bad "raw upload: x differs from the CLI's by $d"

"$CLSOLVE" submit "$t/p50.mtx" --tol 1e-10 --wait --json >"$t/sub.json" 2>"$t/sub.err"
[ "$(json_get "$t/sub.json" "j['timings']['parsed_while_uploading']")" = True ] && ok ||
    bad "multipart upload: not parsed while it arrived: $(head -c 300 "$t/sub.json") $(cat "$t/sub.err")"
echo "a large upload is parsed as it arrives; x is the CLI's"

# a bad line near the end: the job's own read names it
$PY - "$t/p50.mtx" "$t/bad.mtx" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
k = len(lines) - 40
lines[k] = "7 seven 1.0"
open(sys.argv[2], "w").write("\n".join(lines))
PY
badline=$(( $(grep -n "seven" "$t/bad.mtx" | cut -d: -f1) ))
id=$(post "$t/bad.mtx" --limit-rate 16M)
job "$id"
[ "$(field "j['status']")" = failed ] && grep -q "matrix.mtx:$badline: column index is not a number" <<<"$(field "j['error']['message']")" &&
    ok || bad "bad line $badline: $(field "(j['status'], j.get('error'))")"
echo "a bad line is reported at its line"

# gzip and small uploads: read by the job
gzip -kf "$t/p50.mtx"
id=$(post "$t/p50.mtx.gz")
job "$id"
[ "$(field "(j['status'], j['timings']['parsed_while_uploading'])")" = "('succeeded', False)" ] &&
    ok || bad "gzip upload: $(field "(j['status'], j.get('timings'))")"
"$CLSOLVE" gen poisson2d 20 -o "$t/small.mtx" >/dev/null
id=$(post "$t/small.mtx")
job "$id"
[ "$(field "(j['status'], j['timings']['parsed_while_uploading'])")" = "('succeeded', False)" ] &&
    ok || bad "small upload: $(field "(j['status'], j.get('timings'))")"

# an upload abandoned half-way, then a whole one
timeout 0.4 curl -s --limit-rate 8M --data-binary @"$t/p50.mtx" "$DURL/v1/jobs?tol=1e-10" >/dev/null 2>&1
sleep 0.5
id=$(post "$t/p50.mtx" --limit-rate 16M)
job "$id"
[ "$(field "(j['status'], j['timings']['parsed_while_uploading'])")" = "('succeeded', True)" ] &&
    ok || bad "after an abandoned upload: $(field "(j['status'], j.get('timings'))")"
code=$(curl -s -o /dev/null -w '%{http_code}' "$DURL/healthz")
[ "$code" = 200 ] && ok || bad "healthz after it all: $code"
echo "gzip and small uploads read by the job; an abandoned upload leaves the daemon serving"
finish
