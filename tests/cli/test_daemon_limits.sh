#!/usr/bin/env bash
# Resource limits (issue 17), on a daemon with tests/fault/clsfault.c
# preloaded so that the test decides what /proc/meminfo says:
#  1. what an upload becomes: a size line declaring more entries, or more
#     rows, than --max-nnz, and a gzip upload whose text passes
#     --max-matrix-bytes once inflated: 413 matrix-too-large, the first at
#     the size line, the second while it streams;
#  2. admission by memory: with MemTotal 100 MB every job can never fit and
#     fails at once ("resources", the figures); with MemTotal 8 GB and
#     MemAvailable 100 MB a job waits in the queue with a note, and runs
#     once MemAvailable says 8 GB;
#  3. disk: --disk-reserve above what is free: 507 before a byte is stored
#     (Content-Length and chunked); retention by size (--keep-bytes) keeps
#     the finished jobs' files under the limit, oldest removed first, a
#     pinned job exempt; the figures in /metrics;
#  4. the bomb, scaled down: 100 x 100 declaring 20 M entries and holding
#     one more (150 MB of text, 3 MB of gzip) is accepted under the default
#     limits and its job fails at the extra line, rank 0 under 1 GB;
#  5. clsolve solve stops with the figures, exit 1, when reading would need
#     more than the host has free.
# errors.md: UP-MATRIX-ENTRIES UP-MATRIX-SHAPE UP-MATRIX-TEXT JOB-RESOURCES HTTP-507-RESERVE READ-MEMORY
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
[ -n "${CLSFAULT_LIB:-}" ] && [ -f "$CLSFAULT_LIB" ] || { echo "SKIP: CLSFAULT_LIB not built" >&2; exit 77; }
# the preloaded library comes before the sanitizer's runtime in a sanitized
# build (as in test_daemon_faults.sh)
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
D=$TEST_TMP/data
F=$TEST_TMP/fault
rm -rf "$D" "$D".* "$TEST_TMP"/data2* "$F"
mkdir -p "$F"
SMALL=$TEST_TMP/small.mtx
"$CLSOLVE" gen poisson2d 20 -o "$SMALL" >/dev/null || { bad "gen"; finish; }
meminfo() { printf 'MemTotal: %d kB\nMemFree: %d kB\nMemAvailable: %d kB\n' "$1" "$2" "$2" >"$F/meminfo"; }
post() { # FILE [curl args...]: prints the status; the body in $TEST_TMP/body
    curl -s -o "$TEST_TMP/body" -w '%{http_code}' --data-binary @"$1" "${@:2}" "$DURL/v1/jobs"
}
body() { cat "$TEST_TMP/body"; }

LD_PRELOAD=$CLSFAULT_LIB${LD_PRELOAD:+:$LD_PRELOAD} CLSFAULT_DIR=$F daemon_start 1 "$D" --max-nnz 50000 \
    --max-matrix-bytes 2M --keep-bytes 120K --keep-min-age 0 || { bad "daemon start"; finish; }

# 1. limits on what an upload becomes
printf '%%%%MatrixMarket matrix coordinate real general\n100 100 60000\n1 1 1\n' >"$TEST_TMP/many.mtx"
[ "$(post "$TEST_TMP/many.mtx")" = 413 ] && grep -q "matrix-too-large" "$TEST_TMP/body" &&
    grep -q "matrix.mtx:2: the size line declares 60000 entries; this daemon takes at most 50000 (--max-nnz)" "$TEST_TMP/body" &&
    ok || bad "declared entries: $(body)"
printf '%%%%MatrixMarket matrix coordinate real general\n60000 60000 3\n1 1 1\n' >"$TEST_TMP/wide.mtx"
[ "$(post "$TEST_TMP/wide.mtx")" = 413 ] && grep -q "declares 60000 x 60000" "$TEST_TMP/body" &&
    ok || bad "declared rows: $(body)"
$PY - "$TEST_TMP/text.mtx.gz" <<'EOF'
import gzip, sys
lines = [b"%%MatrixMarket matrix coordinate real general\n100 100 40000\n"]
lines += [b"%d %d 1.000000000000000\n" % (i % 100 + 1, i // 100 % 100 + 1) for i in range(40000)]
lines += [b"% padding padding padding padding padding padding padding padding\n"] * 20000
gzip.open(sys.argv[1], "wb").write(b"".join(lines))
EOF
[ "$(post "$TEST_TMP/text.mtx.gz")" = 413 ] &&
    grep -q "larger than 2097152 bytes of text (decompressed); this daemon takes at most 2097152 (--max-matrix-bytes)" "$TEST_TMP/body" &&
    ok || bad "text limit: $(body)"
echo "limits: $(head -c 200 "$TEST_TMP/body")"

# 2. admission by memory
wait_state() { # ID STATE: until the job is in STATE (60 s)
    for _ in $(seq 600); do
        [ "$($DCLIENT request "$DURL" GET "/v1/jobs/$1" | tail -n +2 | jget "j['status']")" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
meminfo 102400 102400 # 100 MB in all
id=$($DCLIENT submit "$DURL" "$SMALL") || bad "submit (never fits)"
j=$($DCLIENT wait "$DURL" "$id" --timeout 60)
[ "$(jget "j['status'], j['error']['code'], j['error']['exit_code']" <<<"$j")" = "failed resources 1" ] &&
    grep -q "the host has 100 MB" <<<"$(jget "j['error']['message']" <<<"$j")" && ok ||
    bad "a job that can never fit: $j"
echo "never fits: $(jget "j['error']['message']" <<<"$j")"
meminfo 8388608 102400 # 8 GB, 100 MB free
id=$($DCLIENT submit "$DURL" "$SMALL") || bad "submit (waits)"
sleep 2
j=$($DCLIENT request "$DURL" GET "/v1/jobs/$id" | tail -n +2)
[ "$(jget "j['status']" <<<"$j")" = queued ] && grep -q "waits for memory" <<<"$(jget "j['progress']['note']" <<<"$j")" &&
    ok || bad "a job that must wait: $j"
echo "waits: $(jget "j['progress']['note']" <<<"$j")"
meminfo 8388608 8388608
j=$($DCLIENT wait "$DURL" "$id" --timeout 60)
[ "$(jget "j['status']" <<<"$j")" = succeeded ] && ok || bad "the waiting job did not run once memory was free: $j"
# the host says 8 GB free, the container's cgroup (v2) allows 100 MB: the
# cgroup's limit is what the OOM killer enforces, so it is what admission
# reads (issue 27, item 8)
mkdir -p "$F/cgroup/fs/job.slice"
printf '0::/job.slice\n' >"$F/cgroup/self"
echo $((100 * 1024 * 1024)) >"$F/cgroup/fs/job.slice/memory.max"
echo $((10 * 1024 * 1024)) >"$F/cgroup/fs/job.slice/memory.current"
id=$($DCLIENT submit "$DURL" "$SMALL") || bad "submit (cgroup)"
j=$($DCLIENT wait "$DURL" "$id" --timeout 60)
[ "$(jget "j['status'], j['error']['code']" <<<"$j")" = "failed resources" ] &&
    grep -q "the host has 100 MB" <<<"$(jget "j['error']['message']" <<<"$j")" && ok ||
    bad "a job over the cgroup's memory limit: $j"
echo "cgroup v2 limit: $(jget "j['error']['message']" <<<"$j")"
rm -rf "$F/cgroup"
rm -f "$F/meminfo"

# 3. disk: retention by size, a pinned job exempt
first=$($DCLIENT submit "$DURL" "$SMALL") && $DCLIENT wait "$DURL" "$first" >/dev/null || bad "first job"
code=$($DCLIENT request "$DURL" POST "/v1/jobs/$first/pin" | sed -n 1p)
[ "$code" = 200 ] && ok || bad "pin: $code"
for _ in $(seq 8); do
    i=$($DCLIENT submit "$DURL" "$SMALL") && $DCLIENT wait "$DURL" "$i" >/dev/null || bad "job"
done
m=$($DCLIENT request "$DURL" GET /metrics)
fin=$(grep '^clsolve_jobs_disk_bytes{jobs="finished"}' <<<"$m" | awk '{print $2}')
pinned_bytes=$($DCLIENT request "$DURL" GET "/v1/jobs/$first" | tail -n +2 | jget "j['disk_bytes']")
removed=$(grep '^clsolve_retention_removed_total' <<<"$m" | awk '{print $2}')
[ $((fin - pinned_bytes)) -le $((120 * 1024)) ] && [ "$removed" -gt 0 ] && ok ||
    bad "retention by size: finished jobs hold $fin bytes (pinned $pinned_bytes), $removed removed"
code=$($DCLIENT request "$DURL" GET "/v1/jobs/$first" | sed -n 1p)
[ "$code" = 200 ] && ok || bad "the pinned job was removed: $code"
echo "retention: $((fin - pinned_bytes)) bytes of unpinned finished jobs kept (limit 122880), $removed removed, the pinned job kept"
daemon_stop 60 || bad "drain"

# disk reserve: above what is free
D2=$TEST_TMP/data2
daemon_start 1 "$D2" --disk-reserve 100T || { bad "daemon with the reserve"; finish; }
[ "$(post "$SMALL")" = 507 ] && grep -q "would leave less than the reserve of" "$TEST_TMP/body" &&
    grep -q "insufficient-storage" "$TEST_TMP/body" && ok || bad "reserve (Content-Length): $(body)"
[ "$(post "$SMALL" -H 'Transfer-Encoding: chunked')" = 507 ] && grep -q "less than the reserve of" "$TEST_TMP/body" &&
    ok || bad "reserve (chunked): $(body)"
[ -z "$(ls -A "$D2/incoming")" ] && ok || bad "a refused upload left files"
echo "reserve: $(head -c 240 "$TEST_TMP/body")"
daemon_stop 60 || bad "drain 2"

# 4. the bomb, scaled down, under the default limits
daemon_start 1 "$D" || { bad "restart"; finish; }
$PY "$here/attack.py" bomb "$DURL" --entries 20000000 --follow 240 --pid "$DRANK0" --before 0.5 --after 0.5 \
    >"$TEST_TMP/bomb.json" || bad "attack.py bomb"
$PY - "$TEST_TMP/bomb.json" <<'EOF' && ok || bad "the scaled bomb"
import json, sys
j = json.load(open(sys.argv[1])); o = j["outcome"]; job = o.get("job") or {}
print("bomb (100 x 100, 20 M entries declared, %.0f MB of text): HTTP %s; job %s in %s s: %s; rank 0 RSS %s -> peak %s MB" % (
    o["text_bytes"] / 1e6, o["status"], job.get("status"), job.get("seconds_since_start"),
    (job.get("error") or {}).get("message"), j["rss_before_mb"], j["rss_peak_mb"]))
ok = (o["status"] == 202 and job.get("status") == "failed"
      and "20000003: more entries than the 20000000 declared" in job["error"]["message"]
      and j["rss_peak_mb"] < 1024)
sys.exit(0 if ok else 1)
EOF
daemon_stop 60 || bad "drain 3"

# 5. clsolve solve: the figures, never the OOM killer
"$CLSOLVE" gen poisson2d 600 -o "$TEST_TMP/p600.mtx" >/dev/null || bad "gen 600"
meminfo 8388608 65536 # 64 MB free
CLSFAULT_DIR=$F LD_PRELOAD=$CLSFAULT_LIB${LD_PRELOAD:+:$LD_PRELOAD} "$CLSOLVE" solve "$TEST_TMP/p600.mtx" >"$TEST_TMP/out" 2>"$TEST_TMP/err"
rc=$?
[ $rc = 1 ] && grep -q "p600.mtx:[0-9]*: reading this matrix needs at least [0-9]* MB of memory" "$TEST_TMP/err" &&
    grep -q "MB are available" "$TEST_TMP/err" && ok || bad "clsolve solve over the memory: exit $rc: $(cat "$TEST_TMP/err")"
echo "clsolve solve: $(cat "$TEST_TMP/err")"
# the same under a cgroup v1 limit of 64 MB with the host's 8 GB free
meminfo 8388608 8388608
mkdir -p "$F/cgroup/fs/memory/box"
printf '4:memory:/box\n1:cpu:/\n' >"$F/cgroup/self"
echo $((64 * 1024 * 1024)) >"$F/cgroup/fs/memory/box/memory.limit_in_bytes"
echo 0 >"$F/cgroup/fs/memory/box/memory.usage_in_bytes"
CLSFAULT_DIR=$F LD_PRELOAD=$CLSFAULT_LIB${LD_PRELOAD:+:$LD_PRELOAD} "$CLSOLVE" solve "$TEST_TMP/p600.mtx" >"$TEST_TMP/out" 2>"$TEST_TMP/err"
rc=$?
[ $rc = 1 ] && grep -q "reading this matrix needs at least [0-9]* MB of memory" "$TEST_TMP/err" && ok ||
    bad "clsolve solve under a 64 MB cgroup v1 limit: exit $rc: $(cat "$TEST_TMP/err")"
echo "clsolve solve, cgroup v1: $(cat "$TEST_TMP/err")"
rm -rf "$F/cgroup"
rm -f "$TEST_TMP"/*.mtx "$TEST_TMP"/*.gz
finish
