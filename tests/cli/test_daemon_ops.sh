#!/usr/bin/env bash
# Operations: the daemon's structured log (one JSON line per request and
# per job event on stderr), /metrics per route and code with latency
# histograms, the queue-wait and job-phase histograms, process_* and
# clsolve_build_info (checked against /proc and --version), a Prometheus
# text page that parses; ETag and Cache-Control: immutable on finished
# solutions (304 on If-None-Match); gzip for large downloads when asked;
# a damaged stored solution refused (size, CRC-32).
# errors.md: STORE-DAMAGED
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
M=$CLSOLVE_DATA/matrices
D=$TEST_TMP/data
t=$TEST_TMP
rm -rf "$D" "$D".*
daemon_start 1 "$D" || { bad "daemon start"; finish; }
U=$DURL
"$CLSOLVE" gen poisson2d 150 -o "$t/p2.mtx" >/dev/null

# --- jobs: a small one, a large one (22500 rows), one cancelled and deleted ---
small=$("$CLSOLVE" submit "$M/LFAT5.mtx" --tol 1e-12 --server "$U")
big=$($DCLIENT submit "$U" "$t/p2.mtx" --param tol=1e-10)
wait_job "$U" "$small" >/dev/null
wait_job "$U" "$big" >/dev/null
for i in 1 2 3 4 5; do curl -s -o /dev/null "$U/nope-$i"; done
"$CLSOLVE" gen poisson2d 800 -o "$t/long.mtx" >/dev/null
long=$($DCLIENT submit "$U" "$t/long.mtx" --param tol=1e-14)
$DCLIENT running "$U" "$long" --iteration 1 --timeout 120 >/dev/null || bad "long job never ran"
curl -s -o /dev/null -X POST "$U/v1/jobs/$long/cancel"
wait_job "$U" "$long" >/dev/null
curl -s -o /dev/null -X DELETE "$U/v1/jobs/$long"

# --- the log ---
$PY - "$D.log" "$small" "$big" "$long" "$(stat -c %s "$M/LFAT5.mtx")" <<'PY' && ok || bad "structured log"
import json, sys
path, small, big, long, size = sys.argv[1:6]
lines = [l for l in open(path) if l.startswith("{")]
ev = [json.loads(l) for l in lines]          # every JSON line parses
fails = []
def find(**kw):
    return [e for e in ev if all(e.get(k) == v for k, v in kw.items())]
for i in range(1, 6):
    r = find(event="request", path="/nope-%d" % i)
    if len(r) != 1 or r[0]["status"] != 404 or r[0]["route"] != "other" or r[0]["method"] != "GET":
        fails.append("request /nope-%d: %s" % (i, r))
post = [e for e in find(event="request", method="POST", route="/v1/jobs") if e.get("status") == 202]
if not any(e["bytes_in"] == int(size) for e in post):
    fails.append("no POST with bytes_in %s: %s" % (size, [e["bytes_in"] for e in post]))
for e in find(event="request"):
    if not (isinstance(e.get("duration_ms"), float) and e["remote"] == "127.0.0.1" and e["ts"].endswith("Z")):
        fails.append("request line: %s" % e)
        break
for job in (small, big):
    seq = [e["event"] for e in ev if e.get("job") == job and e["event"].startswith("job_")]
    if seq != ["job_submitted", "job_started", "job_finished"]:
        fails.append("%s events: %s" % (job, seq))
    fin = find(event="job_finished", job=job)
    if not fin or fin[0]["status"] != "succeeded" or fin[0]["iterations"] < 1 or "solve_s" not in fin[0]["timings"]:
        fails.append("job_finished: %s" % fin)
sub = find(event="job_submitted", job=small)
if not sub or sub[0]["input"] != "LFAT5.mtx" or sub[0]["parameters"]["tol"] != 1e-12:
    fails.append("job_submitted: %s" % sub)
seq = [e["event"] for e in ev if e.get("job") == long and e["event"].startswith("job_")]
if seq != ["job_submitted", "job_started", "job_cancel_requested", "job_finished", "job_deleted"]:
    fails.append("cancelled job's events: %s" % seq)
if find(event="job_finished", job=long)[0].get("code") != "cancelled":
    fails.append("cancelled job_finished code")
if not all(e.get("job") for e in ev if e["event"].startswith("job_")):
    fails.append("a job event without its job")
for f in fails:
    print(f)
print("%d JSON log lines, %d requests" % (len(ev), len(find(event="request"))))
sys.exit(1 if fails else 0)
PY

# --- metrics ---
curl -s "$U/metrics" -o "$t/metrics.txt"
"$CLSOLVED" --version >"$t/version"
$PY - "$t/metrics.txt" "$DRANK0" "$(cat "$t/version")" <<'PY' && ok || bad "metrics"
import os, re, sys, time
text, pid, version = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
fails, samples, typed, seen = [], {}, {}, set()
for line in text.splitlines():
    if line.startswith("# TYPE"):
        _, _, name, kind = line.split()
        typed[name] = kind
        continue
    if line.startswith("#") or not line:
        continue
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$', line)
    if not m:
        fails.append("not exposition format: %r" % line)
        continue
    name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
    base = re.sub(r"_(bucket|sum|count|total)$", "", name)
    if name not in typed and base not in typed and name.rsplit("_", 1)[0] not in typed:
        fails.append("no TYPE for %s" % name)
    if (name, labels) in seen:
        fails.append("duplicate series %s%s" % (name, labels))
    seen.add((name, labels))
    samples[name + labels] = value
def get(key):
    return samples.get(key)
# per route and code
if get('clsolve_http_requests_total{route="other",method="GET",code="404"}') != 5:
    fails.append("404s of /nope-*: %s" % get('clsolve_http_requests_total{route="other",method="GET",code="404"}'))
if not get('clsolve_http_requests_total{route="/v1/jobs",method="POST",code="202"}') >= 3:
    fails.append("POST 202 count")
if get('clsolve_http_requests_total{route="/v1/jobs/{id}/cancel",method="POST",code="202"}') != 1:
    fails.append("cancel count")
if get('clsolve_http_requests_total{route="/v1/jobs/{id}",method="DELETE",code="204"}') != 1:
    fails.append("delete count")
# histograms: cumulative buckets, +Inf == count
for fam, lab in (("clsolve_http_request_duration_seconds", 'route="/v1/jobs/{id}"'),
                 ("clsolve_job_queue_wait_seconds", None),
                 ("clsolve_job_phase_seconds", 'phase="solve"'),
                 ("clsolve_job_phase_seconds", 'phase="parse"'),
                 ("clsolve_job_phase_seconds", 'phase="total"')):
    pre = lab + "," if lab else ""
    b = [(float(m.group(1)) if m.group(1) != "+Inf" else float("inf"), v)
         for k, v in samples.items()
         for m in [re.match(r'%s_bucket\{%sle="([^"]+)"\}$' % (fam, re.escape(pre)), k)] if m]
    b.sort()
    cnt = get("%s_count%s" % (fam, "{%s}" % lab if lab else ""))
    if not b or any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)) or b[-1][1] != cnt:
        fails.append("histogram %s %s: %s count %s" % (fam, lab, b[-3:], cnt))
if get('clsolve_job_phase_seconds_count{phase="solve"}') != 3 or get("clsolve_job_queue_wait_seconds_count") != 3:
    fails.append("3 cg jobs ran: solve %s, queue wait %s" % (get('clsolve_job_phase_seconds_count{phase="solve"}'),
                                                            get("clsolve_job_queue_wait_seconds_count")))
# process_* against /proc
st = os.stat("/proc/%s" % pid)
start = get("process_start_time_seconds")
if not (start and time.time() - 3600 < start <= time.time() and abs(start - st.st_mtime) < 120):
    fails.append("process_start_time_seconds %s (proc dir %s)" % (start, st.st_mtime))
rss_kb = int(re.search(r"VmRSS:\s+(\d+)", open("/proc/%s/status" % pid).read()).group(1))
rss = get("process_resident_memory_bytes")
if not (rss and 0.5 < rss / (rss_kb * 1024.0) < 2):
    fails.append("process_resident_memory_bytes %s, VmRSS %d kB" % (rss, rss_kb))
fds = len(os.listdir("/proc/%s/fd" % pid))
if not (get("process_open_fds") and abs(get("process_open_fds") - fds) <= 8):
    fails.append("process_open_fds %s, /proc says %d" % (get("process_open_fds"), fds))
if not get("process_cpu_seconds_total") >= 0 or not get("process_max_fds") > 0:
    fails.append("process cpu/max fds")
v = re.match(r"clsolved (\S+) \(commit (\S+)\)", version)
if get('clsolve_build_info{version="%s",commit="%s"}' % v.groups()) != 1:
    fails.append("clsolve_build_info does not say %s" % version)
for f in fails:
    print(f)
print("%d series" % len(samples))
sys.exit(1 if fails else 0)
PY

# --- ETag, Cache-Control, 304 ---
hdr() { rm -f "$t/b"; curl -s -D "$t/h" -o "$t/b" -w '%{http_code}' "$@"; }
c=$(hdr "$U/v1/jobs/$big/solution")
etag=$(sed -n 's/^ETag: *\(.*\)\r$/\1/Ip' "$t/h")
[ "$c" = 200 ] && [ -n "$etag" ] && grep -qi '^Cache-Control: .*immutable' "$t/h" && ok || bad "solution: $c, ETag '$etag', $(grep -i cache-control "$t/h")"
cp "$t/b" "$t/x.mtx"
c=$(hdr -H "If-None-Match: $etag" "$U/v1/jobs/$big/solution")
[ "$c" = 304 ] && [ ! -s "$t/b" ] && grep -qi "^ETag: $etag" "$t/h" && ok || bad "If-None-Match: $c"
c=$(hdr -H 'If-None-Match: "other"' "$U/v1/jobs/$big/solution")
[ "$c" = 200 ] && cmp -s "$t/b" "$t/x.mtx" && ok || bad "a stale ETag: $c"
e2=$(hdr "$U/v1/jobs/$big/solution?format=binary" >/dev/null; sed -n 's/^ETag: *\(.*\)\r$/\1/Ip' "$t/h")
# the Matrix Market text (rendered from solution.bin) holds its values exactly
cp "$t/b" "$t/x.f64"
$PY - "$t/x.mtx" "$t/x.f64" "$big" <<'PY' && ok || bad "the Matrix Market solution is not solution.bin's values"
import struct, sys
lines = open(sys.argv[1]).read().splitlines()
raw = open(sys.argv[2], "rb").read()
want = struct.unpack("<%dd" % (len(raw) // 8), raw)
assert lines[0] == "%%MatrixMarket matrix array real general", lines[0]
assert lines[1].startswith("% clsolve job " + sys.argv[3] + ": converged, "), lines[1]
assert lines[2] == "%d 1" % len(want), lines[2]
got = [float(v) for v in lines[3:]]
assert len(got) == len(want) and all(a == b for a, b in zip(got, want)), "values differ"
print("Matrix Market solution: %d values, exactly solution.bin's" % len(got))
PY
[ -n "$e2" ] && [ "$e2" != "$etag" ] && ok || bad "formats share an ETag: $e2"
c=$(hdr "$U/v1/jobs/$big")
grep -qi '^Cache-Control: no-store' "$t/h" && ok || bad "the job record is cacheable"

# --- gzip when asked, for large downloads ---
for fmt in mtx json binary; do
    hdr -H 'Accept-Encoding: gzip' "$U/v1/jobs/$big/solution?format=$fmt" >/dev/null
    grep -qi '^Content-Encoding: gzip' "$t/h" && ok || bad "$fmt: not gzipped: $(cat "$t/h")"
    gunzip -c <"$t/b" >"$t/unz" && ok || bad "$fmt: not a gzip stream"
    curl -s -o "$t/plain" "$U/v1/jobs/$big/solution?format=$fmt"
    cmp -s "$t/unz" "$t/plain" && ok || bad "$fmt: gunzipped body differs from the plain one"
    grep -qi '^ETag: .*-gz"' "$t/h" && ok || bad "$fmt: the gzip variant's ETag"
done
echo "solution.mtx: $(stat -c %s "$t/x.mtx") bytes plain, $(curl -s -H 'Accept-Encoding: gzip' "$U/v1/jobs/$big/solution" | wc -c) gzipped"
hdr -H 'Accept-Encoding: gzip;q=0, identity' "$U/v1/jobs/$big/solution" >/dev/null
grep -qi '^Content-Encoding' "$t/h" && bad "gzip;q=0 was gzipped" || ok
hdr -H 'Accept-Encoding: gzip' "$U/v1/jobs/$small/solution" >/dev/null
grep -qi '^Content-Encoding' "$t/h" && bad "a small solution was gzipped" || ok
curl -s --compressed -o "$t/cc" "$U/v1/jobs/$big/solution" && cmp -s "$t/cc" "$t/x.mtx" && ok || bad "curl --compressed"

# --- stored outputs are checked before they are served (issue 27, item 7):
# size against the record always, solution.bin's CRC-32 read whole once per
# run; a damaged file is a 500 store-damaged, never a cacheable 200 ---
rec=$(curl -s "$U/v1/jobs/$big")
[ "$(jget "j['result']['solution_files']['solution.bin']['bytes']" <<<"$rec")" = "$(stat -c %s "$D/jobs/$big/solution.bin")" ] &&
    ok || bad "the record's solution_files: $(jget "j['result'].get('solution_files')" <<<"$rec")"
code=$(curl -s -o /dev/null -w '%{http_code}' "$U/v1/jobs/$big/solution?format=binary")
[ "$code" = 200 ] && ok || bad "an intact solution.bin: $code"
dmg() { # JOB FORMAT: status and problem type of a download
    curl -s -o "$t/dmg" -w '%{http_code}' "$U/v1/jobs/$1/solution?format=$2"
    printf ' %s' "$(jget "j.get('type')" <"$t/dmg" 2>/dev/null)"
}
half=$(($(stat -c %s "$D/jobs/$big/solution.bin") / 2))
truncate -s "$half" "$D/jobs/$big/solution.bin"
[ "$(dmg "$big" binary)" = "500 urn:clsolve:problem:store-damaged" ] && ok || bad "a solution.bin cut to half: $(dmg "$big" binary)"
[ "$(dmg "$big" json)" = "500 urn:clsolve:problem:store-damaged" ] && ok || bad "its JSON: $(dmg "$big" json)"
# the Matrix Market text is rendered from solution.bin: refused the same way
[ "$(dmg "$big" mtx)" = "500 urn:clsolve:problem:store-damaged" ] && ok || bad "its Matrix Market text: $(dmg "$big" mtx)"
[ ! -e "$D/jobs/$big/solution.mtx" ] && ok || bad "a job wrote solution.mtx (solution.bin is the one durable copy)"
# one byte changed, same size, before the first download: the CRC-32
fresh=$($DCLIENT submit "$U" "$t/p2.mtx" --param tol=1e-6)
wait_job "$U" "$fresh" >/dev/null
printf '\x01' | dd of="$D/jobs/$fresh/solution.bin" bs=1 seek=9 conv=notrunc status=none
[ "$(dmg "$fresh" binary)" = "500 urn:clsolve:problem:store-damaged" ] && ok || bad "a changed byte: $(dmg "$fresh" binary)"
curl -s "$U/metrics" | grep -q '^clsolve_store_damaged_total [1-9]' && ok || bad "no damaged count in /metrics"
echo "damaged outputs: $(curl -s "$U/metrics" | grep '^clsolve_store_damaged_total')"

daemon_stop 60 && ok || bad "daemon stop"
finish
