#!/usr/bin/env bash
# The ranged read (matrices/mm_range.h, solver/dinput_ranged.c): under
# mpirun every rank parses only its share of the file's bytes. Against rank
# 0's read of the same file on the same ranks (--read rank0), which lays the
# system out the same way, so the solutions are the same bits:
#  - fresh random files whose lines are cut at every rank's boundary: CRLF
#    and LF lines, comments, blank lines, a 100 KB comment line, no final
#    newline, duplicates spread over the file (summed across ranks), general
#    and symmetric storage, integer and pattern fields; 1 to 4 ranks;
#  - the real matrices of ../shared/data/matrices on 2 and 4 ranks;
#  - the same file, by rank 0 alone on one rank: the message of every bad
#    file is the one-rank read's, line number included, whichever rank's
#    span holds the bad line (planted at 10%, 40%, 70% and 95% of the
#    file), the count declared too high or too low, a negative diagonal in
#    the last rank's rows, an unsymmetric pair whose halves are on two
#    ranks (the distributed symmetry check);
#  - ranks that cannot see the file (CLSOLVE_READ_STREAM=1 stands in for
#    hosts without a shared file system) get their spans' bytes from rank 0:
#    the same x and the same messages;
#  - the binary CSR form: the same, and a bad column in any rank's rows
#    named at its row of the file; bad row pointers left to rank 0's read;
#  - gzip: --read auto falls back to rank 0, --read ranged is refused;
#    --read bogus is a usage error.
# The sanitized stage (CLSOLVE_TEST_STAGE=sanitized) runs fewer rank counts
# with every check.
. "$(dirname "$0")/lib.sh"
san=0
[ "${CLSOLVE_TEST_STAGE:-}" = sanitized ] && san=1
t=$TEST_TMP
export POCL_MAX_PTHREAD_COUNT=${POCL_MAX_PTHREAD_COUNT:-1} # 4 ranks on 2 cores
MPIRUN=(mpirun --oversubscribe -x POCL_MAX_PTHREAD_COUNT -x CLSOLVE_CACHE_DIR)
command -v mpirun >/dev/null || { echo "SKIP: no mpirun" >&2; exit 77; }

# run NAME NP clsolve-solve-args...: JSON, x, stderr and exit code under $t/NAME.*
run() {
    local name=$1 np=$2
    shift 2
    "${MPIRUN[@]}" -np "$np" "$CLSOLVE" solve "$@" --json -o "$t/$name.x" >"$t/$name.json" \
        2>"$t/$name.err"
    echo $? >"$t/$name.rc"
}
msg() { grep '^clsolve solve:' "$t/$1.err" | head -1; }
info() { json_get "$t/$1.json" "(j['rows'], j['nnz'], j['duplicates'], j['iterations'])"; }

# ---- fresh files (seeded from the clock, printed)
seed=${CLSOLVE_TEST_SEED:-$(date +%s)}
echo "seed $seed (CLSOLVE_TEST_SEED to replay)"
$PY - "$t" "$seed" <<'PY'
import random, sys
t, seed = sys.argv[1], int(sys.argv[2])
rnd = random.Random(seed)
g = 11  # a 3-D Laplacian of g^3 rows, made SPD
n = g ** 3
def idx(x, y, z): return (x * g + y) * g + z + 1
lower = []
for x in range(g):
    for y in range(g):
        for z in range(g):
            i = idx(x, y, z)
            lower.append((i, i, 6.0 + rnd.random()))
            for dx, dy, dz in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
                if x + dx < g and y + dy < g and z + dz < g:
                    lower.append((idx(x + dx, y + dy, z + dz), i, -1.0 + 0.5 * rnd.random()))

def write(name, entries, symmetry="symmetric", field="real", declared=None, crlf=False,
          final_nl=True, noise=True):
    out = ["%%MatrixMarket matrix coordinate {} {}".format(field, symmetry),
           "% made by test_ranged_read.sh",
           "{} {} {}".format(n, n, len(entries) if declared is None else declared)]
    for (i, j, v) in entries:
        if noise:
            r = rnd.random()
            if r < 0.02:
                out.append("% a comment among the entries")
            elif r < 0.03:
                out.append(" \t ")
            elif r < 0.032:
                out.append("%" + "x" * 100000)
        if field == "pattern":
            out.append("{} {}".format(i, j))
        elif field == "integer":
            out.append("{}  {}\t{}".format(i, j, int(v)))
        else:
            out.append("{} {} {!r}".format(i, j, v))
    eol = "\r\n" if crlf else "\n"
    text = eol.join(out) + (eol if final_nl else "")
    open(t + "/" + name, "w", newline="").write(text)

write("sym.mtx", lower)
write("crlf.mtx", lower, crlf=True, final_nl=False)
full = lower + [(j, i, v) for (i, j, v) in lower if i != j]
rnd.shuffle(full)
write("general.mtx", full, symmetry="general")
# duplicates: some entries split in two, spread over the whole file
dup = []
for (i, j, v) in lower:
    if rnd.random() < 0.2:
        dup += [(i, j, v * 0.25), (i, j, v * 0.75)]
    else:
        dup.append((i, j, v))
rnd.shuffle(dup)
write("dups.mtx", dup)
write("integer.mtx", [(i, j, 7.0 if i == j else -1.0) for (i, j, v) in lower], field="integer")
write("pattern.mtx", [(i, i, 1.0) for i in range(1, n + 1)], field="pattern")
# bad files: one bad line at a fraction of the file
for pct in (10, 40, 70, 95):
    bad = list(lower)
    k = len(bad) * pct // 100
    bad[k] = (bad[k][0], bad[k][1], float("nan"))
    write("bad%d.mtx" % pct, bad, noise=False)
    # a token that is not a number, in a file with noise
    open(t + "/tok%d.mtx" % pct, "w").write(
        open(t + "/sym.mtx").read().replace("\n%d %d " % bad[k][:2], "\n%d x%d " % bad[k][:2], 1))
write("long.mtx", lower, declared=len(lower) - 3)
write("short.mtx", lower, declared=len(lower) + 3)
neg = [(i, j, -2.0 if (i == j and i == n - 2) else v) for (i, j, v) in lower]
write("negdiag.mtx", neg)
# unsymmetric: a(2, 1) in the first rank's rows differs from a(1, 2)...
# no: row 1's upper entry a(1, 1+g*g) and its mirror in a far rank
uns = list(full)
for q, (i, j, v) in enumerate(uns):
    if i == 1 and j == 1 + g * g:
        uns[q] = (i, j, v + 0.125)
write("unsym.mtx", uns, symmetry="general")
PY

# ---- good files: ranged == rank 0, 1 to 4 ranks
for f in sym crlf general dups integer pattern; do
    nps="1 2 3 4"
    case $f in crlf | integer | pattern) nps="1 3" ;; esac
    [ $san = 1 ] && nps=3
    for np in $nps; do
        run r0 $np $t/$f.mtx --read rank0 --min-rows-per-part 1
        run rg $np $t/$f.mtx --read ranged --min-rows-per-part 1
        if [ "$(cat $t/r0.rc)$(cat $t/rg.rc)" != 00 ]; then
            bad "$f np=$np: exits $(cat $t/r0.rc) $(cat $t/rg.rc): $(msg rg)"
            continue
        fi
        cmp -s $t/r0.x $t/rg.x && ok || bad "$f np=$np: x differs from rank 0's read"
        [ "$(info r0)" = "$(info rg)" ] && ok || bad "$f np=$np: $(info rg), rank 0: $(info r0)"
    done
done
[ "$(json_get $t/rg.json "j['nnz']")" = 1331 ] && ok || bad "pattern: nnz $(json_get $t/rg.json "j['nnz']")"
run dd 4 $t/dups.mtx --min-rows-per-part 1 # auto on 4 ranks: ranged
run d1 1 $t/dups.mtx
[ "$(json_get $t/dd.json "j['duplicates'] > 0 and j['duplicates'] == $(json_get $t/d1.json "j['duplicates']")")" = True ] &&
    ok || bad "duplicates over 4 ranks: $(json_get $t/dd.json "j['duplicates']")"
CLSOLVE_TRACE=1 "${MPIRUN[@]}" -np 2 "$CLSOLVE" solve $t/sym.mtx --min-rows-per-part 1 >$t/tr.out 2>&1
grep -q "ranged read" $t/tr.out && ok || bad "2 ranks, --read auto: not read in ranges"
echo "good files: ranged read = rank 0's read, 1-4 ranks"

if [ -d "$CLSOLVE_DATA/matrices" ]; then
    for f in "$CLSOLVE_DATA"/matrices/*.mtx; do
        for np in $([ $san = 1 ] && echo 4 || echo 2 4); do
            run r0 $np "$f" --read rank0 --min-rows-per-part 1 --maxiter 300
            run rg $np "$f" --read ranged --min-rows-per-part 1 --maxiter 300
            [ "$(cat $t/r0.rc)" = "$(cat $t/rg.rc)" ] && [ "$(msg r0)" = "$(msg rg)" ] && ok ||
                bad "$(basename $f) np=$np: exit $(cat $t/rg.rc) '$(msg rg)', rank 0: $(cat $t/r0.rc) '$(msg r0)'"
            if [ -s $t/r0.x ]; then cmp -s $t/r0.x $t/rg.x && ok || bad "$(basename $f) np=$np: x differs"; fi
            rm -f $t/r0.x $t/rg.x
        done
    done
    echo "shared matrices: ranged = rank 0 on 2 and 4 ranks"
else
    echo "note: $CLSOLVE_DATA/matrices not found; real matrices not run" >&2
fi

# ---- bad files: the one-rank message, from whichever rank holds the line
for f in bad10 bad40 bad70 bad95 tok10 tok40 tok70 tok95 long short negdiag unsym; do
    run one 1 $t/$f.mtx --read rank0
    m1=$(msg one)
    case "$m1" in "") bad "$f: the one-rank read accepted it"; continue ;; esac
    for np in $([ $san = 1 ] && echo 3 || echo 2 4); do
        run rg $np $t/$f.mtx --read ranged --min-rows-per-part 1
        [ "$(cat $t/rg.rc)" = "$(cat $t/one.rc)" ] && [ "$(msg rg)" = "$m1" ] && ok ||
            bad "$f np=$np: exit $(cat $t/rg.rc) '$(msg rg)', one rank: $(cat $t/one.rc) '$m1'"
    done
done
run one 1 $t/tok95.mtx
grep -q "tok95.mtx:[0-9]*: column index is not a number" <<<"$(msg one)" && ok || bad "tok95: $(msg one)"
run one 1 $t/unsym.mtx
grep -q "not symmetric: a(1,$((1 + 121)))" <<<"$(msg one)" && ok || bad "unsym: $(msg one)"
echo "bad files: the same message and exit on 2 and 4 ranks as on one"

# ---- ranks that cannot see the file (another host, no shared file system)
# get their spans' bytes from rank 0: CLSOLVE_READ_STREAM=1 makes every rank
# but 0 act so
runs() {
    local name=$1 np=$2
    shift 2
    CLSOLVE_READ_STREAM=1 CLSOLVE_TRACE=1 "${MPIRUN[@]}" -x CLSOLVE_READ_STREAM -x CLSOLVE_TRACE \
        -np "$np" "$CLSOLVE" solve "$@" --json -o "$t/$name.x" >"$t/$name.json" 2>"$t/$name.err"
    echo $? >"$t/$name.rc"
}
for f in sym crlf dups general; do
    run r0 3 $t/$f.mtx --read rank0 --min-rows-per-part 1
    runs st 3 $t/$f.mtx --read ranged --min-rows-per-part 1
    [ "$(cat $t/st.rc)" = 0 ] && cmp -s $t/r0.x $t/st.x && ok || bad "$f streamed: exit $(cat $t/st.rc) $(msg st)"
    grep -q "sent by rank 0" $t/st.err && ok || bad "$f: the spans were not sent by rank 0"
done
for f in bad70 tok40 long short unsym; do
    run one 1 $t/$f.mtx --read rank0
    runs st 4 $t/$f.mtx --read ranged --min-rows-per-part 1
    [ "$(cat $t/st.rc)" = "$(cat $t/one.rc)" ] && [ "$(msg st)" = "$(msg one)" ] && ok ||
        bad "$f streamed: exit $(cat $t/st.rc) '$(msg st)', one rank: '$(msg one)'"
done
echo "ranks without the file: their bytes from rank 0, the same x and messages"

# ---- the binary CSR form: every rank reads its rows' bytes (the row
# pointers for the layout); bad columns reported at the file's row
"$CLSOLVE" gen poisson3d 11 -o $t/p.bin >/dev/null
$PY - "$t" <<'PY'
import struct, sys
t = sys.argv[1]
b = bytearray(open(t + "/p.bin", "rb").read())
n, m, nnz = struct.unpack_from("<qqq", b, 8)
rp = struct.unpack_from("<%dq" % (n + 1), b, 32)
col0 = 32 + 8 * (n + 1)
def bad(name, row, what):
    c = bytearray(b)
    k = rp[row] + 1  # the row's second entry
    if what == "range":
        struct.pack_into("<i", c, col0 + 4 * k, n + 5)
    elif what == "order":
        struct.pack_into("<i", c, col0 + 4 * k, struct.unpack_from("<i", c, col0 + 4 * (k - 1))[0])
    else:  # a row pointer that decreases
        struct.pack_into("<q", c, 32 + 8 * row, rp[row + 1] + 1)
    open(t + "/" + name, "wb").write(c)
bad("bincol.bin", n - 3, "range")
bad("binord.bin", n // 2, "order")
bad("binrp.bin", n // 3, "rowptr")
PY
for np in 1 2 4; do
    run r0 $np $t/p.bin --read rank0 --min-rows-per-part 1
    run rg $np $t/p.bin --read ranged --min-rows-per-part 1
    [ "$(cat $t/rg.rc)" = 0 ] && cmp -s $t/r0.x $t/rg.x && [ "$(info r0)" = "$(info rg)" ] && ok ||
        bad "binary np=$np: exit $(cat $t/rg.rc) $(msg rg)"
done
for f in bincol binord binrp; do
    run one 1 $t/$f.bin --read rank0
    run rg 4 $t/$f.bin --min-rows-per-part 1
    [ -n "$(msg one)" ] && [ "$(cat $t/rg.rc)" = "$(cat $t/one.rc)" ] && [ "$(msg rg)" = "$(msg one)" ] && ok ||
        bad "$f np=4: exit $(cat $t/rg.rc) '$(msg rg)', one rank: $(cat $t/one.rc) '$(msg one)'"
done
echo "binary form: ranged = rank 0's read; bad columns at the file's row from any rank"

# ---- what is not read in ranges
gzip -kf $t/sym.mtx
run gz0 2 $t/sym.mtx --read rank0 --min-rows-per-part 1
run gza 2 $t/sym.mtx.gz --min-rows-per-part 1
[ "$(cat $t/gza.rc)" = 0 ] && cmp -s <(grep -v '^%' $t/gz0.x) <(grep -v '^%' $t/gza.x) && ok || bad "gzip, --read auto: exit $(cat $t/gza.rc) $(msg gza)"
# errors.md: MPI-READ-RANGED
run gzr 2 $t/sym.mtx.gz --read ranged
[ "$(cat $t/gzr.rc)" = 3 ] && grep -q "cannot be read in ranges" <<<"$(msg gzr)" && ok ||
    bad "gzip, --read ranged: exit $(cat $t/gzr.rc) '$(msg gzr)'"
expect_exit 2 "$CLSOLVE" solve $t/sym.mtx --read bogus
grep -q "not auto, rank0, everywhere or ranged" "$TEST_TMP/err" && ok || bad "--read bogus: $(cat $TEST_TMP/err)"
run ev 3 $t/sym.mtx --read-everywhere --min-rows-per-part 1
run e0 3 $t/sym.mtx --read rank0 --min-rows-per-part 1
cmp -s $t/ev.x $t/e0.x && ok || bad "--read-everywhere: x differs"
echo "gzip falls back; --read ranged refuses it; --read bogus is a usage error"

echo "$checks checks, $fails failed"
[ "$fails" -eq 0 ]
