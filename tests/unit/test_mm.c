/*
 * test_mm.c: the Matrix Market reader and writer.
 *
 * argv[1] is the shared data dir (bad-mtx/, matrices/). Handcrafted files
 * are written to a fresh temporary directory. The real matrices are checked
 * against a deliberately naive reader below (fgets + sscanf + a dense
 * array), so the expectation does not share code with the reader under test.
 */
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "common/timer.h"
#include "matrices/mm.h"

static char tmpdir[256];
static const char *datadir;

/* ------------------------------------------------------------------------ */
/* helpers                                                                   */

static char *tpath(const char *name)
{
    static char bufs[8][512];
    static int k = 0;
    char *p = bufs[k++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

static const char *write_bytes(const char *name, const char *text, size_t n)
{
    const char *p = tpath(name);
    FILE *f = fopen(p, "wb");
    if (!f) {
        perror(p);
        exit(1);
    }
    fwrite(text, 1, n, f);
    fclose(f);
    return p;
}

static const char *write_text(const char *name, const char *text)
{
    return write_bytes(name, text, strlen(text));
}

static const char *write_gz(const char *name, const char *text, size_t n)
{
    const char *p = tpath(name);
    gzFile g = gzopen(p, "wb6");
    if (!g) {
        perror(p);
        exit(1);
    }
    size_t off = 0;
    while (off < n) {
        unsigned k = n - off > (1u << 30) ? (1u << 30) : (unsigned)(n - off);
        gzwrite(g, text + off, k);
        off += k;
    }
    gzclose(g);
    return p;
}

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Reads path expecting CLS_EINPUT at `line` with `needle` in the message,
 * and the message prefixed "PATH:LINE: ". */
static void expect_fail_path(const char *what, const char *path, int threads, long long line,
                             const char *needle)
{
    csr_matrix A;
    cls_error e;
    cls_error_clear(&e);
    mm_read_options o = {.threads = threads};
    int rc = mm_read_csr(path, &o, &A, NULL, NULL, &e);
    CHECK_MSG(rc == CLS_EINPUT, "%s: rc %d, msg '%s'", what, rc, e.msg);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s:%lld: ", path, line);
    CHECK_MSG(strncmp(e.msg, prefix, strlen(prefix)) == 0, "%s: expected prefix '%s', got '%s'",
              what, prefix, e.msg);
    CHECK_MSG(e.line == line, "%s: err.line %lld, expected %lld", what, e.line, line);
    CHECK_MSG(!needle || strstr(e.msg, needle), "%s: '%s' not in '%s'", what, needle, e.msg);
    if (rc == CLS_OK)
        csr_free(&A);
}

static void expect_fail(const char *name, const char *text, long long line, const char *needle)
{
    expect_fail_path(name, write_text(name, text), 1, line, needle);
}

static int read_ok(const char *path, int threads, csr_matrix *A, mm_header *h, mm_read_stats *st)
{
    cls_error e;
    cls_error_clear(&e);
    mm_read_options o = {.threads = threads};
    int rc = mm_read_csr(path, &o, A, h, st, &e);
    CHECK_MSG(rc == CLS_OK, "%s: rc %d: %s", path, rc, e.msg);
    return rc;
}

/* Compares A with a dense row-major n x m expectation where 0 means "no
 * entry" (the small tests use no explicit zeros). */
static void check_dense(const char *what, const csr_matrix *A, int64_t n, int64_t m,
                        const double *d)
{
    CHECK_MSG(A->nrows == n && A->ncols == m, "%s: %lldx%lld, expected %lldx%lld", what,
              (long long)A->nrows, (long long)A->ncols, (long long)n, (long long)m);
    if (A->nrows != n || A->ncols != m)
        return;
    int64_t nz = 0;
    for (int64_t k = 0; k < n * m; k++)
        nz += d[k] != 0.0;
    CHECK_MSG(A->nnz == nz, "%s: nnz %lld, expected %lld", what, (long long)A->nnz,
              (long long)nz);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = A->rowptr[i];
        for (int64_t j = 0; j < m; j++) {
            if (d[i * m + j] == 0.0)
                continue;
            int ok = k < A->rowptr[i + 1] && A->col[k] == j && A->val[k] == d[i * m + j];
            CHECK_MSG(ok, "%s: entry (%lld,%lld) expected %g", what, (long long)i + 1,
                      (long long)j + 1, d[i * m + j]);
            if (ok)
                k++;
        }
    }
}

static int csr_bits_equal(const csr_matrix *A, const csr_matrix *B)
{
    if (A->nrows != B->nrows || A->ncols != B->ncols || A->nnz != B->nnz)
        return 0;
    if (memcmp(A->rowptr, B->rowptr, (size_t)(A->nrows + 1) * sizeof *A->rowptr))
        return 0;
    if (A->nnz && memcmp(A->col, B->col, (size_t)A->nnz * sizeof *A->col))
        return 0;
    if (A->nnz && memcmp(A->val, B->val, (size_t)A->nnz * sizeof *A->val))
        return 0;
    return 1;
}

static const char *BAN = "%%MatrixMarket matrix coordinate real general\n";

/* ------------------------------------------------------------------------ */
/* naive reader: fgets + sscanf + dense, for the real matrices               */

typedef struct naive {
    int64_t n, m, stored, diag, present_count;
    double *d;
    unsigned char *present;
} naive;

static int naive_read(const char *path, naive *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[4096], obj[64], fmt[64], field[64], sym[64];
    if (!fgets(line, sizeof line, f) ||
        sscanf(line, "%%%%MatrixMarket %63s %63s %63s %63s", obj, fmt, field, sym) != 4) {
        fclose(f);
        return -1;
    }
    long long n, m, nz;
    do {
        if (!fgets(line, sizeof line, f)) {
            fclose(f);
            return -1;
        }
    } while (line[0] == '%');
    if (sscanf(line, "%lld %lld %lld", &n, &m, &nz) != 3) {
        fclose(f);
        return -1;
    }
    out->n = n;
    out->m = m;
    out->d = calloc((size_t)(n * m), sizeof *out->d);
    out->present = calloc((size_t)(n * m), 1);
    out->stored = out->diag = out->present_count = 0;
    int pattern = strcmp(field, "pattern") == 0;
    int symm = strcmp(sym, "symmetric") == 0;
    while (fgets(line, sizeof line, f)) {
        long long i, j;
        double v = 1.0;
        if (line[0] == '%')
            continue;
        int got = pattern ? sscanf(line, "%lld %lld", &i, &j)
                          : sscanf(line, "%lld %lld %lf", &i, &j, &v);
        if (got < 2)
            continue;
        i--;
        j--;
        out->stored++;
        out->d[i * m + j] += v;
        out->present[i * m + j] = 1;
        if (i == j)
            out->diag++;
        else if (symm) {
            out->d[j * m + i] += v;
            out->present[j * m + i] = 1;
        }
    }
    fclose(f);
    for (int64_t k = 0; k < n * m; k++)
        out->present_count += out->present[k];
    return 0;
}

static void test_real_matrices(void)
{
    static const char *names[] = {"494_bus.mtx", "1138_bus.mtx", "LFAT5.mtx",
                                  "ani1.mtx",    "dwt_992.mtx",  "west0067.mtx"};
    for (size_t t = 0; t < sizeof names / sizeof names[0]; t++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/matrices/%s", datadir, names[t]);
        naive nv;
        if (naive_read(path, &nv)) {
            CHECK_MSG(0, "naive reader failed on %s", path);
            continue;
        }
        mm_header h, h2;
        cls_error e;
        CHECK_MSG(mm_read_header(path, &h2, &e) == CLS_OK, "%s: header: %s", path, e.msg);
        for (int threads = 1; threads <= 3; threads += 2) {
            csr_matrix A;
            mm_read_stats st;
            if (read_ok(path, threads, &A, &h, &st))
                continue;
            CHECK(h.rows == nv.n && h.cols == nv.m && h.entries == nv.stored);
            CHECK(h2.rows == h.rows && h2.entries == h.entries && h2.size_line == h.size_line);
            CHECK_MSG(st.stored_entries == nv.stored, "%s: stored %lld vs %lld", names[t],
                      (long long)st.stored_entries, (long long)nv.stored);
            int64_t exp_expanded =
                h.symmetry == MM_SYMMETRIC ? 2 * nv.stored - nv.diag : nv.stored;
            CHECK_MSG(st.expanded_nnz == exp_expanded, "%s: expanded %lld vs %lld", names[t],
                      (long long)st.expanded_nnz, (long long)exp_expanded);
            CHECK(st.duplicates == 0);
            CHECK(st.threads == threads);
            CHECK_MSG(A.nnz == nv.present_count, "%s: nnz %lld vs %lld", names[t],
                      (long long)A.nnz, (long long)nv.present_count);
            int bad = 0;
            for (int64_t i = 0; i < A.nrows && !bad; i++)
                for (int64_t k = A.rowptr[i]; k < A.rowptr[i + 1]; k++) {
                    int64_t j = A.col[k];
                    if (!nv.present[i * nv.m + j] || A.val[k] != nv.d[i * nv.m + j] ||
                        (k > A.rowptr[i] && A.col[k - 1] >= j)) {
                        bad = 1;
                        CHECK_MSG(0, "%s: entry (%lld,%lld) = %.17g, naive %.17g", names[t],
                                  (long long)i + 1, (long long)j + 1, A.val[k],
                                  nv.d[i * nv.m + j]);
                        break;
                    }
                }
            if (strcmp(names[t], "494_bus.mtx") == 0) {
                CHECK(A.nrows == 494 && h.entries == 1080 && h.symmetry == MM_SYMMETRIC);
                CHECK(A.nnz == 2 * 1080 - nv.diag);
            }
            if (strcmp(names[t], "dwt_992.mtx") == 0)
                CHECK(h.field == MM_PATTERN && A.val[0] == 1.0);
            csr_free(&A);
        }
        free(nv.d);
        free(nv.present);
    }
}

/* ------------------------------------------------------------------------ */

static void test_bad_mtx(void)
{
    static const char *mangled[] = {"mangle1.mtx", "mangle2.mtx", "mangle3.mtx", "mangle4.mtx"};
    static const char *words[] = {"object 'junk'", "format 'junk'", "field 'junk'",
                                  "symmetry 'junk'"};
    for (int k = 0; k < 4; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/bad-mtx/%s", datadir, mangled[k]);
        expect_fail_path(mangled[k], path, 0, 1, words[k]);
        expect_fail_path(mangled[k], path, 0, 1, "allowed:");
        mm_header h;
        cls_error e;
        CHECK(mm_read_header(path, &h, &e) == CLS_EINPUT && e.line == 1);
    }
    /* 3by0.mtx: "array real general" with size "3 0". A 3 x 0 array holds
     * no values and is a valid (empty) matrix: we parse it as 3 x 0. */
    char path[1024];
    snprintf(path, sizeof path, "%s/bad-mtx/3by0.mtx", datadir);
    csr_matrix A;
    mm_header h;
    mm_read_stats st;
    if (!read_ok(path, 0, &A, &h, &st)) {
        CHECK(A.nrows == 3 && A.ncols == 0 && A.nnz == 0);
        CHECK(h.layout == MM_ARRAY && h.entries == 0 && h.size_line == 2);
        CHECK(A.rowptr[0] == 0 && A.rowptr[3] == 0);
        csr_free(&A);
    }
    /* not a vector: neither n x 1 nor 1 x n */
    double *v;
    int64_t n;
    cls_error e;
    CHECK(mm_read_vector(path, &v, &n, &e) == CLS_EINPUT && e.line == 2);
}

static void test_errors(void)
{
    char big[8192];
    expect_fail("empty.mtx", "", 1, "file is empty");
    expect_fail("nobanner.mtx", "3 3 1\n1 1 1\n", 1, "missing banner");
    expect_fail("nobanner2.mtx", "%MatrixMarket matrix coordinate real general\n", 1,
                "missing banner");
    expect_fail("glued.mtx", "%%MatrixMarketmatrix coordinate real general\n1 1 0\n", 1,
                "malformed banner");
    expect_fail("noobject.mtx", "%%MatrixMarket\n", 1, "missing the object word");
    expect_fail("noformat.mtx", "%%MatrixMarket matrix\n3 3 0\n", 1, "missing the format word");
    expect_fail("nofield.mtx", "%%MatrixMarket matrix coordinate\n3 3 0\n", 1,
                "missing the field word (one of: real, integer, pattern, complex)");
    expect_fail("nosym.mtx", "%%MatrixMarket matrix coordinate real\n3 3 0\n", 1,
                "missing the symmetry word");
    expect_fail("badobj.mtx", "%%MatrixMarket tensor coordinate real general\n1 1 0\n", 1,
                "unknown object 'tensor' in the banner (allowed: matrix)");
    expect_fail("badfmt.mtx", "%%MatrixMarket matrix sparse real general\n1 1 0\n", 1,
                "unknown format 'sparse' in the banner (allowed: coordinate, array)");
    expect_fail("badsym.mtx", "%%MatrixMarket matrix coordinate real symm\n1 1 0\n", 1,
                "general, symmetric, skew-symmetric, hermitian");
    expect_fail("extraword.mtx", "%%MatrixMarket matrix coordinate real general yes\n1 1 0\n",
                1, "unexpected word 'yes'");
    expect_fail("complex.mtx",
                "%%MatrixMarket matrix coordinate complex general\n% c\n2 2 1\n1 1 1 0\n", 1,
                "complex matrices are not supported");
    expect_fail("complexherm.mtx", "%%MatrixMarket matrix array complex hermitian\n1 1\n1 0\n",
                1, "complex matrices are not supported");
    expect_fail("realherm.mtx", "%%MatrixMarket matrix coordinate real hermitian\n2 2 0\n", 1,
                "inconsistent banner: 'real hermitian'");
    expect_fail("arraypat.mtx", "%%MatrixMarket matrix array pattern general\n2 2\n", 1,
                "'array pattern'");
    expect_fail("patskew.mtx", "%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 0\n",
                1, "inconsistent banner");
    expect_fail("symrect.mtx",
                "%%MatrixMarket matrix coordinate real symmetric\n% a\n\n% b\n3 4 1\n1 1 1\n", 5,
                "must be square, but the size line declares 3 x 4");
    expect_fail("skewrect.mtx", "%%MatrixMarket matrix array real skew-symmetric\n3 2\n", 2,
                "must be square");
    expect_fail("size2.mtx", "%%MatrixMarket matrix coordinate real general\n3 3\n1 1 1\n", 2,
                "size line has 2 fields, but a coordinate matrix needs 3");
    expect_fail("size4.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1 1\n1 1 1\n",
                2, "has 4 fields");
    expect_fail("asize3.mtx", "%%MatrixMarket matrix array real general\n3 3 9\n", 2,
                "an array matrix needs 2");
    expect_fail("negsize.mtx", "%%MatrixMarket matrix coordinate real general\n-3 3 1\n", 2,
                "negative number of rows: -3");
    expect_fail("negent.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 -1\n", 2,
                "negative number of entries");
    expect_fail("nansize.mtx", "%%MatrixMarket matrix coordinate real general\n3 x 1\n", 2,
                "number of columns is not a number: 'x'");
    expect_fail("fltsize.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1.5\n", 2,
                "number of entries is not a number: '1.5'");
    expect_fail("bigsize.mtx",
                "%%MatrixMarket matrix coordinate real general\n3 3 9223372036854775808\n", 2,
                "number of entries is too large");
    expect_fail("bigcols.mtx", "%%MatrixMarket matrix coordinate real general\n3 2147483648 1\n",
                2, "columns beyond 2147483647 are not supported");
    expect_fail("bigrows.mtx", "%%MatrixMarket matrix coordinate real general\n2147483648 3 1\n",
                2, "rows beyond 2147483647 are not supported");
    expect_fail("hdreof.mtx", "%%MatrixMarket matrix coordinate real general\n% c\n\n", 3,
                "file ends before the size line");
    expect_fail("hdreof2.mtx", "%%MatrixMarket matrix coordinate real general", 1,
                "file ends before the size line");

    /* entries */
    snprintf(big, sizeof big, "%s5 5 3\n1 1 1\n7 1 1\n2 2 2\n", BAN);
    expect_fail("rowrange.mtx", big, 4, "row index 7 out of range 1..5");
    snprintf(big, sizeof big, "%s5 5 3\n1 1 1\n\n2 0 1\n", BAN);
    expect_fail("col0.mtx", big, 5, "column index 0 out of range 1..5 (indices are 1-based)");
    snprintf(big, sizeof big, "%s5 5 3\n1 1 1\n2 2 2\n-1 2 2\n", BAN);
    expect_fail("rowneg.mtx", big, 5, "row index -1 out of range 1..5");
    snprintf(big, sizeof big, "%s5 5 1\n2147483648 1 1\n", BAN);
    expect_fail("row2p31.mtx", big, 3, "row index 2147483648 out of range 1..5");
    snprintf(big, sizeof big, "%s5 5 1\n1 9223372036854775808 1\n", BAN);
    expect_fail("col2p63.mtx", big, 3, "column index 9223372036854775808 out of range 1..5");
    snprintf(big, sizeof big, "%s5 5 1\n1 18446744073709551617 1\n", BAN);
    expect_fail("col2p64.mtx", big, 3, "column index 18446744073709551617 out of range");
    snprintf(big, sizeof big, "%s5 5 1\n99999999999999999999999999 1 1\n", BAN);
    expect_fail("rowhuge.mtx", big, 3, "out of range 1..5");
    snprintf(big, sizeof big, "%s5 5 1\nx1 1 1\n", BAN);
    expect_fail("rownan.mtx", big, 3, "row index is not a number: 'x1'");
    snprintf(big, sizeof big, "%s5 5 1\n1.0 1 1\n", BAN);
    expect_fail("rowflt.mtx", big, 3, "row index is not a number: '1.0'");
    snprintf(big, sizeof big, "%s%% c\n5 5 10\n1 1 1\n2 2 2\n3 3 3\n", BAN);
    expect_fail("toofew.mtx", big, 6, "file ends after 3 of 10 entries declared on line 3");
    snprintf(big, sizeof big, "%s5 5 10\n1 1 1\n2 2 2\n3 3 3", BAN);
    expect_fail("toofew_nonl.mtx", big, 5, "file ends after 3 of 10 entries declared on line 2");
    snprintf(big, sizeof big, "%s5 5 10\n", BAN);
    expect_fail("noentries.mtx", big, 2, "file ends after 0 of 10 entries declared on line 2");
    snprintf(big, sizeof big, "%s5 5 2\n1 1 1\n2 2 2\n%% c\n\n3 3 3\n4 4 4\n", BAN);
    expect_fail("toomany.mtx", big, 7, "more entries than the 2 declared on line 2");
    snprintf(big, sizeof big, "%s5 5 2\n1 1 1\n2 2\n", BAN);
    expect_fail("noval.mtx", big, 4, "missing value");
    snprintf(big, sizeof big, "%s5 5 2\n1 1 1\n2\n", BAN);
    expect_fail("nocol.mtx", big, 4, "missing column index");
    snprintf(big, sizeof big, "%s5 5 2\n1 1 1\n2 2 2 junk\n", BAN);
    expect_fail("garbage.mtx", big, 4, "unexpected extra field 'junk' after the value");
    snprintf(big, sizeof big, "%s5 5 2\n1 1 1\n2 2 2 3\n", BAN);
    expect_fail("garbage2.mtx", big, 4, "unexpected extra field '3'");
    expect_fail("patval.mtx",
                "%%MatrixMarket matrix coordinate pattern general\n5 5 2\n1 1\n2 2 2.0\n", 4,
                "unexpected extra field '2.0' after the column index");
    static const char *nonfinite[] = {"nan", "NaN", "inf", "-inf", "+Infinity", "1e999",
                                      "-1.5e400"};
    for (size_t k = 0; k < sizeof nonfinite / sizeof *nonfinite; k++) {
        snprintf(big, sizeof big, "%s5 5 2\n1 1 1\n2 2 %s\n", BAN, nonfinite[k]);
        expect_fail("nonfinite.mtx", big, 4, "is not a finite number");
    }
    static const char *notnum[] = {"abc", "1.5x", "0x10", "1e", "1e+", ".", "-", "1..2",
                                   "1,5", "--1", "1e5.5"};
    for (size_t k = 0; k < sizeof notnum / sizeof *notnum; k++) {
        snprintf(big, sizeof big, "%s5 5 2\n1 1 1\n2 2 %s\n", BAN, notnum[k]);
        char needle[64];
        snprintf(needle, sizeof needle, "value is not a number: '%s'", notnum[k]);
        expect_fail("notnum.mtx", big, 4, needle);
    }
    expect_fail("skewdiag.mtx",
                "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 0\n", 4,
                "diagonal entry (2,2) in a skew-symmetric matrix");
    expect_fail("intfrac.mtx",
                "%%MatrixMarket matrix coordinate integer general\n3 3 2\n2 1 1\n2 2 1.5\n", 4,
                "value '1.5' is not an integer");
    expect_fail("intnan.mtx",
                "%%MatrixMarket matrix coordinate integer general\n3 3 2\n2 1 1\n2 2 nan\n", 4,
                "not a finite number");
    expect_fail("atoofew.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n\n3\n", 6,
                "file ends after 3 of 4 values declared on line 2");
    expect_fail("atoomany.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n5\n",
                7, "more values than the 4 declared on line 2");
    expect_fail("aextra.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2 3\n3\n4\n", 4,
                "unexpected extra field '3'");
    expect_fail("abad.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\ninf\n", 6,
                "not a finite number");
    /* a NUL byte in an entry */
    snprintf(big, sizeof big, "%s5 5 2\n1 1 1\n2 2 2", BAN);
    size_t bl = strlen(big);
    big[bl - 1] = '\0';
    expect_fail_path("nul.mtx", write_bytes("nul.mtx", big, bl), 1, 4, "not a number");
    /* line numbers are 1-based lines of the file, CRLF or not */
    expect_fail("crlferr.mtx",
                "%%MatrixMarket matrix coordinate real general\r\n%c\r\n5 5 2\r\n1 1 1\r\n"
                "\r\n9 1 1\r\n",
                6, "row index 9 out of range 1..5");

    /* cannot open: not an input error but an I/O one */
    csr_matrix A;
    cls_error e;
    CHECK(mm_read_csr(tpath("does-not-exist.mtx"), NULL, &A, NULL, NULL, &e) == CLS_EOTHER);
    CHECK(strstr(e.msg, "does-not-exist.mtx") != NULL);
    CHECK(mm_read_csr(tmpdir, NULL, &A, NULL, NULL, &e) == CLS_EOTHER);

    /* truncated and corrupt gzip */
    char *text = malloc(200000);
    size_t n = (size_t)sprintf(text, "%s100 100 10000\n", BAN);
    for (int k = 0; k < 10000; k++)
        n += (size_t)sprintf(text + n, "%d %d %d.%d\n", k % 100 + 1, k / 100 + 1, k, k % 7);
    const char *gz = write_gz("trunc.mtx.gz", text, n);
    struct stat sb;
    stat(gz, &sb);
    CHECK(truncate(gz, sb.st_size / 2) == 0);
    csr_matrix B;
    int rc = mm_read_csr(gz, NULL, &B, NULL, NULL, &e);
    CHECK_MSG(rc == CLS_EINPUT && strncmp(e.msg, gz, strlen(gz)) == 0 && strstr(e.msg, "gzip"),
              "truncated gzip: rc %d '%s'", rc, e.msg);
    gz = write_gz("corrupt.mtx.gz", text, n);
    FILE *f = fopen(gz, "r+b");
    fseek(f, 200, SEEK_SET);
    for (int k = 0; k < 64; k++)
        fputc(0x55 ^ k, f);
    fclose(f);
    rc = mm_read_csr(gz, NULL, &B, NULL, NULL, &e);
    CHECK_MSG(rc == CLS_EINPUT && strstr(e.msg, "gzip"), "corrupt gzip: rc %d '%s'", rc, e.msg);
    if (rc == CLS_OK)
        csr_free(&B);
    free(text);
}

/* Declared sizes are promises, not allocation sizes. Run first, while the
 * process is small, so maxrss deltas mean something. */
static void test_huge_declarations(void)
{
    char text[2048];
    size_t n = (size_t)snprintf(text, sizeof text, "%s5 5 1000000000000\n", BAN);
    while (n < 1000)
        n += (size_t)snprintf(text + n, sizeof text - n, "%d %d 1.5\n", (int)(n % 5) + 1,
                              (int)(n % 3) + 1);
    int entries = -2; /* lines after the banner and the size line */
    for (size_t k = 0; k < n; k++)
        entries += text[k] == '\n';
    char needle[128];
    snprintf(needle, sizeof needle, "file ends after %d of 1000000000000 entries", entries);
    const char *p = write_text("huge-entries.mtx", text);
    const char *pgz = write_gz("huge-entries.gz", text, n);
    struct {
        const char *path, *needle;
        long long line;
    } cases[] = {
        {p, needle, entries + 2},
        {pgz, needle, entries + 2},
        {write_text("huge-rows.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                     "1000000000000 5 3\n1 1 1\n2 2 2\n3 3 3\n"),
         "rows beyond 2147483647", 2},
        {write_text("huge-rows2.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                      "2000000000 5 3\n1 1 1\n2 2 2\n3 3 3\n"),
         "2000000000 rows declared but only 3 entries: refusing to allocate", 2},
        {write_text("huge-rows3.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n"
                                      "2147483647 2147483647 2\n1 1\n2147483647 1\n"),
         "2147483647 rows declared but only 2 entries", 2},
        {write_text("huge-array.mtx",
                    "%%MatrixMarket matrix array real general\n100000 100000\n1\n2\n"),
         "file ends after 2 of 10000000000 values", 4},
        {write_text("huge-array0.mtx", "%%MatrixMarket matrix array real general\n2000000000 0\n"),
         "refusing to allocate", 2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        long before = maxrss_kb();
        double t0 = cls_now();
        expect_fail_path(cases[k].path, cases[k].path, 0, cases[k].line, cases[k].needle);
        double dt = cls_now() - t0;
        long grew = maxrss_kb() - before;
        CHECK_MSG(dt < 1.0, "%s took %.3f s", cases[k].path, dt);
        CHECK_MSG(grew < 64 * 1024, "%s grew maxrss by %ld KB", cases[k].path, grew);
    }
    /* 64-bit counts in the size line are read exactly */
    mm_header h;
    cls_error e;
    const char *q = write_text("hdr64.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                            "5 5 9223372036854775807\n");
    CHECK(mm_read_header(q, &h, &e) == CLS_OK && h.entries == INT64_MAX && h.size_line == 2);
    q = write_text("hdr64b.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                 "2147483647 2147483647 1000000000000");
    CHECK(mm_read_header(q, &h, &e) == CLS_OK && h.entries == 1000000000000LL &&
          h.rows == INT32_MAX && h.cols == INT32_MAX);
}

static int hb(const char *s, const char *name, mm_header *h, cls_error *e)
{
    return mm_parse_header_buf(s, strlen(s), name, h, e);
}

static void test_header_buf(void)
{
    const char *hdr = "%%MatrixMarket matrix coordinate real symmetric\n% comment\n\n"
                      "  4\t4 6  \r\n1 1 1\n";
    size_t full = strlen(hdr) - strlen("1 1 1\n");
    mm_header h;
    cls_error e;
    for (size_t k = 0; k < full; k++) {
        int rc = mm_parse_header_buf(hdr, k, "upload", &h, &e);
        CHECK_MSG(rc == -1, "prefix %zu: rc %d (%s)", k, rc, rc > 0 ? e.msg : "");
    }
    for (size_t k = full; k <= strlen(hdr); k++) {
        int rc = mm_parse_header_buf(hdr, k, "upload", &h, &e);
        CHECK_MSG(rc == CLS_OK, "prefix %zu: rc %d (%s)", k, rc, e.msg);
    }
    CHECK(h.layout == MM_COORDINATE && h.field == MM_REAL && h.symmetry == MM_SYMMETRIC);
    CHECK(h.rows == 4 && h.cols == 4 && h.entries == 6 && h.size_line == 4);
    /* garbage is refused once its first word is whole (white space, or 41
     * bytes: enough to quote it as the local reader does, issue 30), newline
     * or not; until then the check waits for more */
    CHECK(hb("PK\3\4", "upload", &h, &e) == -1);
    CHECK(hb("PK\3\4 ", "upload", &h, &e) == CLS_EINPUT);
    CHECK(strncmp(e.msg, "upload:1: missing banner", 24) == 0);
    CHECK(hb("PK\3\4xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "upload", &h, &e) == CLS_EINPUT);
    CHECK(strncmp(e.msg, "upload:1: missing banner", 24) == 0);
    CHECK(hb("%%Matrix", "upload", &h, &e) == -1);
    CHECK(hb("%%matrixmarket MATRIX Array Integer General\n3 1\n", "u", &h,
                              &e) == CLS_OK &&
          h.layout == MM_ARRAY && h.field == MM_INTEGER && h.entries == 3);
    CHECK(hb("%%MatrixMarket matrix array real symmetric\n4 4\n", "u", &h,
                              &e) == CLS_OK &&
          h.entries == 10);
    CHECK(hb("%%MatrixMarket matrix array real skew-symmetric\n4 4\n", "u",
                              &h, &e) == CLS_OK &&
          h.entries == 6);
    CHECK(hb("%%MatrixMarket matrix coordinate complex hermitian\n4 4 2\n",
                              "u", &h, &e) == CLS_OK &&
          h.field == MM_COMPLEX && h.symmetry == MM_HERMITIAN);
    CHECK(hb("%%MatrixMarket matrix coordinate real general\n3 x", "up", &h,
                              &e) == -1);
    CHECK(hb("%%MatrixMarket matrix coordinate real general\n3 x\n", "up",
                              &h, &e) == CLS_EINPUT &&
          strncmp(e.msg, "up:2: ", 6) == 0);
    CHECK(strcmp(mm_layout_name(MM_ARRAY), "array") == 0);
    CHECK(strcmp(mm_field_name(MM_PATTERN), "pattern") == 0);
    CHECK(strcmp(mm_symmetry_name(MM_SKEW_SYMMETRIC), "skew-symmetric") == 0);
}

static void test_formats(void)
{
    csr_matrix A;
    mm_header h;
    mm_read_stats st;
    /* the same 3 x 3 general matrix written six ways */
    const double d[9] = {1, 0, -2.5, 0, 3, 0, 4e-3, 0, 5};
    const char *variants[] = {
        "%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 1\n1 3 -2.5\n2 2 3\n3 1 "
        "4e-3\n3 3 5\n",
        /* CRLF throughout */
        "%%MatrixMarket matrix coordinate real general\r\n% c\r\n3 3 5\r\n1 1 1\r\n1 3 "
        "-2.5\r\n2 2 3\r\n3 1 4e-3\r\n3 3 5\r\n",
        /* tabs, leading blanks, blank lines and comments anywhere, no final newline */
        "%%MatrixMarket\tmatrix  coordinate\treal general  \n\n%x\n \t\n3\t3\t5\n\n1\t1\t1\n  "
        "\t1 3\t-2.5 \n% between entries\n\n2 2 +3.0\n\r\n3 1 0.004\n3  3  5",
        /* upper case banner words, UTF-8 byte order mark, exponent forms */
        "\xEF\xBB\xBF%%MATRIXMARKET Matrix COORDINATE Real GENERAL\n3 3 5\n3 3 0.5e1\n1 1 "
        "1E0\n1 3 -25e-1\n2 2 .3e1\n3 1 0.0040\n",
        /* array, column-major, zeros dropped */
        "%%MatrixMarket matrix array real general\n3 3\n1\n0\n4e-3\n0\n3\n0\n-2.5\n-0\n5\n",
        /* array values several per line is not allowed, but blank lines are */
        "%%MatrixMarket matrix array real general\n3 3\n1\n\n0\n4e-3\n0\n3\n0\n-2.5\n0.0\n5",
    };
    for (size_t k = 0; k < sizeof variants / sizeof *variants; k++) {
        char name[32];
        snprintf(name, sizeof name, "variant%zu.mtx", k);
        const char *p = write_text(name, variants[k]);
        for (int t = 1; t <= 4; t += 3)
            if (!read_ok(p, t, &A, &h, &st)) {
                check_dense(name, &A, 3, 3, d);
                csr_free(&A);
            }
    }

    /* symmetric: lower triangle, plus one entry above the diagonal (mirrored) */
    const char *p = write_text("sym.mtx", "%%MatrixMarket matrix coordinate real symmetric\n"
                                          "3 3 4\n1 1 1\n2 1 2\n3 2 3\n1 3 4\n");
    const double ds[9] = {1, 2, 4, 2, 0, 3, 4, 3, 0};
    if (!read_ok(p, 2, &A, &h, &st)) {
        check_dense("sym", &A, 3, 3, ds);
        CHECK(st.stored_entries == 4 && st.expanded_nnz == 7 && st.duplicates == 0);
        csr_free(&A);
    }
    p = write_text("skew.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                               "3 3 3\n2 1 2\n3 1 -1\n2 3 5\n");
    const double dk[9] = {0, -2, 1, 2, 0, 5, -1, -5, 0};
    if (!read_ok(p, 1, &A, &h, &st)) {
        check_dense("skew", &A, 3, 3, dk);
        CHECK(st.stored_entries == 3 && st.expanded_nnz == 6);
        csr_free(&A);
    }
    p = write_text("pat.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                              "2 3 3\n1 1\n2 3\n1 2\n");
    const double dp[6] = {1, 1, 0, 0, 0, 1};
    if (!read_ok(p, 1, &A, &h, &st)) {
        check_dense("pattern", &A, 2, 3, dp);
        csr_free(&A);
    }
    p = write_text("patsym.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n"
                                 "3 3 3\n1 1\n3 1\n3 2\n");
    const double dps[9] = {1, 0, 1, 0, 0, 1, 1, 1, 0};
    if (!read_ok(p, 1, &A, &h, &st)) {
        check_dense("pattern symmetric", &A, 3, 3, dps);
        csr_free(&A);
    }
    p = write_text("int.mtx", "%%MatrixMarket matrix coordinate integer symmetric\n"
                              "2 2 3\n1 1 -7\n2 1 +12\n2 2 9007199254740993\n");
    const double di[4] = {-7, 12, 12, 9007199254740992.0};
    if (!read_ok(p, 1, &A, &h, &st)) {
        check_dense("integer", &A, 2, 2, di);
        csr_free(&A);
    }
    p = write_text("asym.mtx", "%%MatrixMarket matrix array real symmetric\n3 3\n"
                               "1\n2\n4\n0\n3\n0\n");
    if (!read_ok(p, 1, &A, &h, &st)) {
        check_dense("array symmetric", &A, 3, 3, ds);
        CHECK(st.stored_entries == 6);
        csr_free(&A);
    }
    p = write_text("askew.mtx", "%%MatrixMarket matrix array real skew-symmetric\n3 3\n"
                                "2\n-1\n-5\n");
    if (!read_ok(p, 1, &A, &h, &st)) {
        check_dense("array skew", &A, 3, 3, dk);
        csr_free(&A);
    }
    p = write_text("aint.mtx", "%%MatrixMarket matrix array integer general\n2 3\n"
                               "1\n0\n1\n0\n0\n1\n");
    if (!read_ok(p, 1, &A, &h, &st)) {
        check_dense("array integer", &A, 2, 3, dp);
        csr_free(&A);
    }
    /* duplicates are summed and counted */
    p = write_text("dup.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 6\n"
                              "1 1 1\n2 1 1\n1 1 2\n2 1 0.5\n2 1 0.25\n2 2 1\n");
    const double dd[4] = {3, 0, 1.75, 1};
    if (!read_ok(p, 1, &A, &h, &st)) {
        check_dense("duplicates", &A, 2, 2, dd);
        CHECK_MSG(st.duplicates == 3, "duplicates %lld", (long long)st.duplicates);
        CHECK(st.stored_entries == 6 && st.expanded_nnz == 6);
        csr_free(&A);
    }
    /* symmetric with both (2,1) and (1,2): each mirror lands on the other */
    p = write_text("dupsym.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n"
                                 "1 1 1\n2 1 2\n1 2 3\n");
    const double dds[4] = {1, 5, 5, 0};
    if (!read_ok(p, 1, &A, &h, &st)) {
        check_dense("symmetric duplicates", &A, 2, 2, dds);
        CHECK(st.duplicates == 2 && st.expanded_nnz == 5);
        csr_free(&A);
    }
    /* empty matrices */
    p = write_text("empty0.mtx", "%%MatrixMarket matrix coordinate real general\n0 0 0\n");
    if (!read_ok(p, 1, &A, &h, &st)) {
        CHECK(A.nrows == 0 && A.nnz == 0);
        csr_free(&A);
    }
    p = write_text("empty1.mtx", "%%MatrixMarket matrix coordinate real general\n4 5 0\n%\n");
    if (!read_ok(p, 3, &A, &h, &st)) {
        CHECK(A.nrows == 4 && A.ncols == 5 && A.nnz == 0 && A.rowptr[4] == 0);
        csr_free(&A);
    }
}

static void test_vectors(void)
{
    double *v;
    int64_t n;
    cls_error e;
    const char *p = write_text("v1.mtx", "%%MatrixMarket matrix array real general\n% b\n4 1\n"
                                         "1.5\n-2\n0\n1e-300\n");
    CHECK(mm_read_vector(p, &v, &n, &e) == CLS_OK);
    if (v) {
        CHECK(n == 4 && v[0] == 1.5 && v[1] == -2 && v[2] == 0 && v[3] == 1e-300);
        free(v);
    }
    p = write_text("v2.mtx", "%%MatrixMarket matrix array integer general\n1 3\n7\n8\n9\n");
    CHECK(mm_read_vector(p, &v, &n, &e) == CLS_OK);
    if (v) {
        CHECK(n == 3 && v[0] == 7 && v[1] == 8 && v[2] == 9);
        free(v);
    }
    p = write_text("v3.mtx", "%%MatrixMarket matrix coordinate real general\n5 1 3\n"
                             "2 1 1.5\n5 1 2\n2 1 1\n");
    CHECK(mm_read_vector(p, &v, &n, &e) == CLS_OK);
    if (v) {
        CHECK(n == 5 && v[0] == 0 && v[1] == 2.5 && v[4] == 2 && v[2] == 0 && v[3] == 0);
        free(v);
    }
    p = write_text("v4.mtx", "%%MatrixMarket matrix array real general\n3 2\n1\n2\n3\n4\n5\n6\n");
    CHECK(mm_read_vector(p, &v, &n, &e) == CLS_EINPUT && e.line == 2 &&
          strstr(e.msg, "n x 1 or 1 x n"));
    p = write_text("v5.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 1 1\n1 1\n");
    CHECK(mm_read_vector(p, &v, &n, &e) == CLS_EINPUT && e.line == 1);
    p = write_text("v6.mtx", "%%MatrixMarket matrix array real general\n3 1\n1\n2\n");
    CHECK(mm_read_vector(p, &v, &n, &e) == CLS_EINPUT && e.line == 4 &&
          strstr(e.msg, "file ends after 2 of 3 values"));
    p = write_text("v7.mtx", "%%MatrixMarket matrix array real general\n0 1\n");
    CHECK(mm_read_vector(p, &v, &n, &e) == CLS_OK && n == 0);
    free(v);
    p = write_text("v8.mtx", "%%MatrixMarket matrix coordinate real general\n"
                             "2000000000 1 1\n1 1 1\n");
    CHECK(mm_read_vector(p, &v, &n, &e) == CLS_EINPUT && strstr(e.msg, "refusing to allocate"));

    /* blocks of right-hand sides: n x k column-major, coordinate, 1 x n */
    int64_t r, k;
    p = write_text("b1.mtx", "%%MatrixMarket matrix array real general\n3 2\n1\n2\n3\n4\n5\n6\n");
    CHECK(mm_read_block(p, 64, &v, &r, &k, &e) == CLS_OK);
    if (v) {
        CHECK(r == 3 && k == 2 && v[0] == 1 && v[2] == 3 && v[3] == 4 && v[5] == 6);
        free(v);
    }
    p = write_text("b2.mtx", "%%MatrixMarket matrix coordinate real general\n3 2 3\n"
                             "3 2 1.5\n1 1 2\n3 2 1\n");
    CHECK(mm_read_block(p, 64, &v, &r, &k, &e) == CLS_OK);
    if (v) {
        CHECK(r == 3 && k == 2 && v[0] == 2 && v[1] == 0 && v[5] == 2.5 && v[3] == 0);
        free(v);
    }
    p = write_text("b3.mtx", "%%MatrixMarket matrix array integer general\n1 3\n7\n8\n9\n");
    CHECK(mm_read_block(p, 64, &v, &r, &k, &e) == CLS_OK);
    if (v) {
        CHECK(r == 3 && k == 1 && v[0] == 7 && v[2] == 9);
        free(v);
    }
    p = write_text("b4.mtx", "%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n4\n5\n6\n");
    CHECK(mm_read_block(p, 2, &v, &r, &k, &e) == CLS_EINPUT && e.line == 2 &&
          strstr(e.msg, "3 right-hand sides (columns) declared: at most 2"));
    p = write_text("b5.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n");
    CHECK(mm_read_block(p, 64, &v, &r, &k, &e) == CLS_EINPUT &&
          strstr(e.msg, "file ends after 3 of 4 values"));
    p = write_text("b6.mtx", "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n");
    CHECK(mm_read_block(p, 64, &v, &r, &k, &e) == CLS_EINPUT && strstr(e.msg, "not symmetric"));
    /* the writer's n x k block reads back bit for bit */
    const double blk[6] = {1.0 / 3, -2e-300, 0.0, 7, 1e300, -0.5};
    char wp[600];
    snprintf(wp, sizeof wp, "%s/bw.mtx", tmpdir);
    CHECK(mm_write_block(wp, blk, 3, 2, "a block", &e) == CLS_OK);
    CHECK(mm_read_block(wp, 64, &v, &r, &k, &e) == CLS_OK);
    if (v) {
        CHECK(r == 3 && k == 2 && !memcmp(v, blk, sizeof blk));
        free(v);
    }
}

/* Random decimal strings in many shapes parse to exactly what strtod says. */
static void test_number_parsing(void)
{
    enum { N = 20000 };
    char *text = malloc((size_t)N * 64 + 256);
    char(*tok)[48] = malloc((size_t)N * sizeof *tok);
    size_t n = (size_t)sprintf(text, "%%%%MatrixMarket matrix array real general\n%d 1\n", N);
    for (int k = 0; k < N; k++) {
        char *s = tok[k];
        int len = 0;
        unsigned r = (unsigned)check_rand();
        if (r & 1)
            s[len++] = (r & 2) ? '-' : '+';
        int nd = 1 + (int)(check_rand() % 25), point = (int)(check_rand() % (unsigned)(nd + 2));
        for (int q = 0; q < nd; q++) {
            if (q == point)
                s[len++] = '.';
            s[len++] = (char)('0' + check_rand() % 10);
        }
        if (check_rand() % 3 == 0)
            len += sprintf(s + len, "%c%d", (check_rand() & 1) ? 'e' : 'E',
                           (int)(check_rand() % 640) - 340);
        s[len] = '\0';
        if (k % 5 == 0) { /* a %.17g of a random double */
            double x;
            uint64_t bits = check_rand();
            memcpy(&x, &bits, sizeof x);
            if (!isfinite(x))
                x = 1.0 / 3.0;
            sprintf(s, "%.17g", x);
        }
        if (isinf(strtod(s, NULL))) /* overflow is an error; tested elsewhere */
            strcpy(s, "-1.25");
        n += (size_t)sprintf(text + n, "%s\n", s);
    }
    const char *p = write_bytes("numbers.mtx", text, n);
    mm_set_block_size(4096);
    for (int t = 1; t <= 3; t += 2) {
        double *v = NULL;
        int64_t len = 0;
        cls_error e;
        int rc = mm_read_vector(p, &v, &len, &e);
        CHECK_MSG(rc == CLS_OK, "numbers: %s", e.msg);
        int bad = 0;
        for (int k = 0; rc == CLS_OK && k < N && bad < 5; k++) {
            double want = strtod(tok[k], NULL);
            if (memcmp(&want, &v[k], sizeof want) != 0) {
                bad++;
                CHECK_MSG(0, "'%s' parsed as %.17g, strtod says %.17g", tok[k], v[k], want);
            }
        }
        free(v);
        (void)t;
    }
    mm_set_block_size(0);
    free(text);
    free(tok);
}

/* Indices of 1..21 digits (leading zeros make long tokens of small values:
 * the SWAR path reads 1..7, 8, 9..15 digits and leaves 16 and more to the
 * per-digit loop) and integer-like values of 1..8 digits, some signed,
 * beside decimals and exponents, near many block ends: the same matrix as
 * a plain file of the same entries, on 1 and 3 threads; an out-of-range
 * index of 8, 9 or 12 digits is reported with its token and its line. */
static void test_digit_runs(void)
{
    enum { NENT = 6000, NROWS = 1999 };
    char *text = malloc((size_t)NENT * 96 + 256), *plain = malloc((size_t)NENT * 64 + 256);
    size_t n = (size_t)sprintf(text, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n",
                               NROWS, NROWS, NENT);
    size_t m = (size_t)sprintf(plain, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n",
                               NROWS, NROWS, NENT);
    static const char *vals[] = {"-1",      "6",        "0",        "-0",         "7",
                                 "1234567", "-1234567", "12345678", "007",        "-12.5",
                                 "3e2",     "1.0",      "+4",       "99999999999"};
    for (int k = 0; k < NENT; k++) {
        int ij[2] = {(int)(check_rand() % NROWS) + 1, (int)(check_rand() % NROWS) + 1};
        for (int q = 0; q < 2; q++) {
            char num[16];
            int len = sprintf(num, "%d", ij[q]);
            int digits = len + (int)(check_rand() % (unsigned)(22 - len)); /* len..21 */
            for (int z = len; z < digits; z++)
                text[n++] = '0';
            n += (size_t)sprintf(text + n, "%s%s", num, (check_rand() & 1) ? "\t" : " ");
        }
        const char *v = vals[check_rand() % (sizeof vals / sizeof *vals)];
        n += (size_t)sprintf(text + n, "%s%s", v, (check_rand() % 4 == 0) ? " \r\n" : "\n");
        m += (size_t)sprintf(plain + m, "%d %d %.17g\n", ij[0], ij[1], strtod(v, NULL));
    }
    const char *pt = write_bytes("digits.mtx", text, n),
               *pp = write_bytes("digits-plain.mtx", plain, m);
    mm_set_block_size(4096);
    csr_matrix ref;
    if (read_ok(pp, 1, &ref, NULL, NULL) == CLS_OK) {
        for (int t = 1; t <= 3; t += 2) {
            csr_matrix A;
            if (read_ok(pt, t, &A, NULL, NULL) == CLS_OK) {
                CHECK_MSG(csr_bits_equal(&A, &ref),
                          "long index tokens, %d threads: not the plain file's matrix", t);
                csr_free(&A);
            }
        }
        csr_free(&ref);
    }
    mm_set_block_size(0);
    static const struct {
        const char *entry, *needle;
    } bad[] = {{"00002000 1 1", "row index 00002000 out of range 1..1999"},
               {"1 123456789 1", "column index 123456789 out of range 1..1999"},
               {"000000002000 5 1", "row index 000000002000 out of range 1..1999"},
               {"12345678 1 1", "row index 12345678 out of range 1..1999"}};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        char f[256];
        snprintf(f, sizeof f,
                 "%%%%MatrixMarket matrix coordinate real general\n%d %d 3\n1 1 1\n%s\n2 2 1\n",
                 NROWS, NROWS, bad[b].entry);
        char name[32];
        snprintf(name, sizeof name, "digits-bad%zu.mtx", b);
        expect_fail(name, f, 4, bad[b].needle);
    }
    free(text);
    free(plain);
}

/* A random 50k-entry file, messy formatting, many blocks: every thread count
 * gives the same matrix, and a planted error the same line. */
static char *make_random_file(int nent, int64_t nrows, size_t *len, long long **linemap)
{
    char *text = malloc((size_t)nent * 120 + 1024);
    long long *lines = malloc((size_t)nent * sizeof *lines);
    size_t n = (size_t)sprintf(text, "%%%%MatrixMarket matrix coordinate real general\n%% "
                                     "random\n%lld %lld %d\n",
                               (long long)nrows, (long long)nrows, nent);
    long long line = 4;
    for (int k = 0; k < nent; k++) {
        unsigned r = (unsigned)check_rand();
        if (r % 17 == 0) {
            n += (size_t)sprintf(text + n, (r & 64) ? "\n" : "%% comment %u\n", r);
            line++;
        }
        const char *sep = (r & 2) ? "\t" : (r & 4) ? "  " : " ";
        long long i = (long long)(check_rand() % (uint64_t)nrows) + 1;
        long long j = (long long)(check_rand() % (uint64_t)nrows) + 1;
        double v;
        switch (r % 5) {
        case 0: v = (double)(int)(check_rand() % 2000) - 1000; break;
        case 1: v = (double)(check_rand() % 100000) / 1000.0; break;
        default: v = (check_uniform() - 0.5) * pow(10.0, (int)(check_rand() % 40) - 20);
        }
        lines[k] = line;
        if (r % 5 == 1)
            n += (size_t)sprintf(text + n, "%lld%s%lld%s%.3f%s", i, sep, j, sep, v,
                                 (r & 8) ? "\r\n" : "\n");
        else
            n += (size_t)sprintf(text + n, "%s%lld%s%lld%s%.17g%s", (r & 16) ? " " : "", i,
                                 sep, j, sep, v, (r & 8) ? " \r\n" : "\n");
        line++;
    }
    *len = n;
    *linemap = lines;
    return text;
}

static void test_threads(void)
{
    const int nent = 50000;
    size_t n;
    long long *lines;
    char *text = make_random_file(nent, 2000, &n, &lines);
    const char *p = write_bytes("random.mtx", text, n);
    const char *pgz = write_gz("random-gz.mtx", text, n); /* no .gz name: magic bytes */
    mm_set_block_size(4096);
    csr_matrix ref;
    mm_read_stats st;
    int have_ref = read_ok(p, 1, &ref, NULL, &st) == CLS_OK;
    CHECK(st.stored_entries == nent && st.bytes == (int64_t)n);
    static const int tc[] = {1, 2, 3, 7};
    for (size_t q = 0; q < 4 && have_ref; q++) {
        csr_matrix A;
        if (!read_ok(p, tc[q], &A, NULL, &st)) {
            CHECK_MSG(csr_bits_equal(&A, &ref), "threads %d differ from 1", tc[q]);
            CHECK(st.threads == tc[q]);
            csr_free(&A);
        }
        if (!read_ok(pgz, tc[q], &A, NULL, &st)) {
            CHECK_MSG(csr_bits_equal(&A, &ref), "gzip, threads %d differ from plain", tc[q]);
            CHECK(st.bytes == (int64_t)n);
            csr_free(&A);
        }
    }
    mm_set_block_size(0);
    if (have_ref) { /* default block size, one block */
        csr_matrix A;
        if (!read_ok(p, 2, &A, NULL, NULL)) {
            CHECK(csr_bits_equal(&A, &ref));
            csr_free(&A);
        }
    }
    /* max_threads caps the count without naming it (dinput's read beside
     * the prewarm): at most that many, the same bits */
    for (int q = 0; q < 3 && have_ref; q++) {
        static const int cap[] = {1, 2, 3}, ask[] = {0, 0, 7};
        mm_read_options o = {.threads = ask[q], .max_threads = cap[q]};
        csr_matrix A;
        cls_error e;
        memset(&st, 0, sizeof st);
        if (mm_read_csr(p, &o, &A, NULL, &st, &e) == CLS_OK) {
            CHECK_MSG(st.threads >= 1 && st.threads <= cap[q] &&
                          (ask[q] == 0 || st.threads == cap[q]),
                      "max_threads %d (threads %d): %d threads used", cap[q], ask[q], st.threads);
            CHECK_MSG(csr_bits_equal(&A, &ref), "max_threads %d differs from 1 thread", cap[q]);
            csr_free(&A);
        } else {
            CHECK_MSG(0, "max_threads %d: %s", cap[q], e.msg);
        }
    }
    mm_set_block_size(4096);

    /* plant errors far into the file */
    const char *bad[] = {"1 99999 1.0", "1 1 abc", "3 4 5 6", "0 1 1", "2 2 nan", "7"};
    for (int round = 0; round < 6; round++) {
        int k = nent / 2 + (int)(check_rand() % (uint64_t)(nent / 2));
        /* find the start of entry k's line */
        long long target = lines[k], line = 1;
        size_t off = 0;
        while (line < target) {
            if (text[off] == '\n')
                line++;
            off++;
        }
        size_t end = off;
        while (text[end] != '\n')
            end++;
        char *t2 = malloc(n + 64);
        memcpy(t2, text, off);
        size_t m = off + (size_t)sprintf(t2 + off, "%s", bad[round]);
        memcpy(t2 + m, text + end, n - end);
        m += n - end;
        char name[32];
        snprintf(name, sizeof name, "planted%d.mtx", round);
        const char *pp = write_bytes(name, t2, m);
        for (size_t q = 0; q < 4; q++) {
            char what[96];
            snprintf(what, sizeof what, "'%s' planted on line %lld, threads %d", bad[round],
                     target, tc[q]);
            expect_fail_path(what, pp, tc[q], target, NULL);
        }
        free(t2);
    }
    /* one entry more than declared: the extra one's line, under every thread count */
    {
        int declared = nent / 2 + (int)(check_rand() % (uint64_t)(nent / 2));
        char *t2 = malloc(n + 64);
        size_t hl = (size_t)(strstr(text, "% random\n") - text) + 9;
        size_t sl = (size_t)(strchr(text + hl, '\n') - text) + 1;
        memcpy(t2, text, hl);
        size_t m = hl + (size_t)sprintf(t2 + hl, "2000 2000 %d\n", declared);
        memcpy(t2 + m, text + sl, n - sl);
        m += n - sl;
        const char *pp = write_bytes("toomany-random.mtx", t2, m);
        for (size_t q = 0; q < 4; q++) {
            char what[96];
            snprintf(what, sizeof what, "too many (declared %d), threads %d", declared, tc[q]);
            expect_fail_path(what, pp, tc[q], lines[declared], "more entries than the");
        }
        free(t2);
    }
    mm_set_block_size(0);
    if (have_ref)
        csr_free(&ref);
    free(text);
    free(lines);
}

/* Plain files longer than the header read are mapped and parsed in place;
 * the same text through the read path (CLSOLVE_MM_NOMAP=1) and through
 * gzip must give the same bits, and an error the same message and line,
 * under every thread count, with mapped blocks (a test block size) or one
 * mapped block (the default), with and without a final newline. */
static void set_nomap(int on)
{
    if (on)
        setenv("CLSOLVE_MM_NOMAP", "1", 1);
    else
        unsetenv("CLSOLVE_MM_NOMAP");
}

static void test_mapped(void)
{
    static const char *sym[] = {"general", "symmetric", "skew-symmetric"};
    static const int tc[] = {1, 2, 3, 7};
    const int nent = 30000, nrows = 900;
    char *text = malloc((size_t)nent * 64 + 1024);
    for (int variant = 0; variant < 6; variant++) {
        int sk = variant % 3, final_nl = variant < 3;
        size_t n = (size_t)sprintf(text, "%%%%MatrixMarket matrix coordinate real %s\n%d %d %d\n",
                                   sym[sk], nrows, nrows, nent);
        for (int k = 0; k < nent; k++) {
            int i = (int)(check_rand() % nrows) + 1, j = (int)(check_rand() % nrows) + 1;
            if (sk && j > i) {
                int t = i;
                i = j;
                j = t;
            }
            if (sk == 2 && i == j) /* skew: keep off the diagonal, in the lower triangle */
                i == 1 ? (i = 2) : (j = i - 1);
            if (k % 997 == 0)
                n += (size_t)sprintf(text + n, "%% comment in the entries\n");
            n += (size_t)sprintf(text + n, "%d %d %.17g\n", i, j,
                                 (check_uniform() - 0.5) * 1e3);
        }
        if (!final_nl)
            n--; /* drop the last '\n' */
        char name[64];
        snprintf(name, sizeof name, "mapped%d.mtx", variant);
        const char *p = write_bytes(name, text, n);
        snprintf(name, sizeof name, "mapped%d.gz", variant);
        const char *pgz = write_gz(name, text, n);
        csr_matrix ref;
        mm_read_stats st;
        set_nomap(1);
        int have_ref = read_ok(p, 1, &ref, NULL, &st) == CLS_OK;
        set_nomap(0);
        if (!have_ref)
            continue;
        CHECK(st.bytes == (int64_t)n && st.stored_entries == nent);
        for (int q = 0; q < 4; q++) {
            for (int mode = 0; mode < 3; mode++) {
                mm_set_block_size(mode == 1 ? 4096 : 0);
                csr_matrix A;
                const char *path = mode == 2 ? pgz : p;
                if (!read_ok(path, tc[q], &A, NULL, &st)) {
                    CHECK_MSG(csr_bits_equal(&A, &ref), "variant %d, mode %d, threads %d differ",
                              variant, mode, tc[q]);
                    CHECK(st.bytes == (int64_t)n && st.stored_entries == nent);
                    csr_free(&A);
                }
            }
        }
        mm_set_block_size(0);
        csr_free(&ref);

        /* errors: one entry short of the declaration; a bad last line */
        for (int bad = 0; bad < 2; bad++) {
            char *t2 = malloc(n + 64);
            memcpy(t2, text, n);
            size_t m = n;
            if (bad == 0) {
                char *sl = strchr(t2, '\n') + 1;
                memcpy(sl + strlen(sl) - strlen(strchr(sl, '\n')) - 5, "30001", 5);
            } else {
                while (m > 0 && t2[m - 1] == '\n')
                    m--;
                while (m > 0 && t2[m - 1] != '\n')
                    m--;
                m += (size_t)sprintf(t2 + m, "1 2 x%s", final_nl ? "\n" : "");
            }
            snprintf(name, sizeof name, "mapped-bad%d-%d.mtx", variant, bad);
            const char *pb = write_bytes(name, t2, m);
            cls_error e0;
            csr_matrix A;
            mm_read_options o1 = {.threads = 1};
            set_nomap(1);
            CHECK(mm_read_csr(pb, &o1, &A, NULL, NULL, &e0) == CLS_EINPUT);
            set_nomap(0);
            CHECK_MSG(strstr(e0.msg, bad ? "value is not a number" : "file ends after"),
                      "%s", e0.msg);
            for (int q = 0; q < 4; q++) {
                for (int blk = 0; blk < 2; blk++) {
                    mm_set_block_size(blk ? 4096 : 0);
                    cls_error e;
                    mm_read_options o = {.threads = tc[q]};
                    CHECK(mm_read_csr(pb, &o, &A, NULL, NULL, &e) == CLS_EINPUT);
                    CHECK_MSG(e.line == e0.line && strcmp(e.msg, e0.msg) == 0,
                              "variant %d bad %d threads %d: '%s' vs read path '%s'", variant,
                              bad, tc[q], e.msg, e0.msg);
                }
            }
            mm_set_block_size(0);
            free(t2);
        }
    }
    free(text);

    /* indices of every length around the 8-byte fast path, with leading
     * zeros and signs, mid-file and at the very end of the file */
    const char *idx = "%%MatrixMarket matrix coordinate real general\n"
                      "1000000 20000000 7\n"
                      "1 1 1\n0000001\t00000000002 2\n999999 2999999 3\n"
                      "+12 0000000000000000000000012 4\n12345 1234567 5\n"
                      "123456 12345678 6\n1000000 20000000 7";
    csr_matrix A;
    for (int nt = 1; nt <= 2; nt++) {
        if (read_ok(write_text("idxlen.mtx", idx), nt, &A, NULL, NULL))
            continue;
        static const int64_t r[7] = {0, 0, 11, 12344, 123455, 999998, 999999};
        static const int32_t c[7] = {0, 1, 11, 1234566, 12345677, 2999998, 19999999};
        static const double v[7] = {1, 2, 4, 5, 6, 3, 7};
        int ok = A.nnz == 7;
        for (int k = 0; ok && k < 7; k++)
            ok = A.rowptr[r[k]] <= k && A.rowptr[r[k] + 1] > k && A.col[k] == c[k] &&
                 A.val[k] == v[k];
        CHECK_MSG(ok, "index lengths, threads %d", nt);
        csr_free(&A);
    }
}

static int no_tmp_left(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *de;
    int ok = 1;
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".tmp."))
            ok = 0;
    closedir(d);
    return ok;
}

static void test_writer(void)
{
    enum { N = 5000 };
    double *x = malloc(N * sizeof *x);
    const double special[] = {0.0,     -0.0,     1e308,         -1e308,      DBL_MAX,
                              -DBL_MAX, DBL_MIN, 4.9406564584124654e-324, 2.2250738585072009e-308,
                              1.0 / 3, 0.1,     -123456789012345678.0,   1e15,        1e16,
                              999999999999999.0, 9007199254740993.0,     -1.0};
    size_t ns = sizeof special / sizeof *special;
    for (int k = 0; k < N; k++) {
        if ((size_t)k < ns) {
            x[k] = special[k];
            continue;
        }
        uint64_t bits = check_rand();
        if (k % 4 == 0)
            bits &= 0x800FFFFFFFFFFFFFULL; /* subnormal */
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v))
            v = (double)(int64_t)bits;
        if (k % 4 == 1)
            v = (double)((int64_t)(check_rand() % 2000001) - 1000000);
        x[k] = v;
    }
    cls_error e;
    const char *p = tpath("vec.mtx");
    CHECK(mm_write_vector(p, x, N, "written by test_mm\nsecond line", &e) == CLS_OK);
    double *y = NULL;
    int64_t n = 0;
    CHECK_MSG(mm_read_vector(p, &y, &n, &e) == CLS_OK, "%s", e.msg);
    CHECK(n == N && y && memcmp(x, y, N * sizeof *x) == 0);
    free(y);
    FILE *f = fopen(p, "r");
    char l1[128], l2[128], l3[128];
    CHECK(fgets(l1, sizeof l1, f) && fgets(l2, sizeof l2, f) && fgets(l3, sizeof l3, f));
    fclose(f);
    CHECK(strcmp(l1, "%%MatrixMarket matrix array real general\n") == 0);
    CHECK(strcmp(l2, "% written by test_mm\n") == 0 && strcmp(l3, "% second line\n") == 0);

    /* random sparse matrix, general and symmetric round trips */
    int64_t rows = 300;
    coo_matrix C;
    coo_init(&C);
    C.nrows = C.ncols = rows;
    C.cap = 6000;
    C.row = malloc((size_t)C.cap * sizeof *C.row);
    C.col = malloc((size_t)C.cap * sizeof *C.col);
    C.val = malloc((size_t)C.cap * sizeof *C.val);
    unsigned char *used = calloc((size_t)(rows * rows), 1);
    for (int k = 0; k < 3000; k++) {
        int32_t i = (int32_t)(check_rand() % (uint64_t)rows),
                j = (int32_t)(check_rand() % (uint64_t)rows);
        if (used[i * rows + j]) /* unique pairs: A is exactly symmetric */
            continue;
        used[i * rows + j] = used[j * rows + i] = 1;
        double v = x[ns + (size_t)k];
        C.row[C.nnz] = i;
        C.col[C.nnz] = j;
        C.val[C.nnz++] = v;
        if (i != j) { /* symmetric twin */
            C.row[C.nnz] = j;
            C.col[C.nnz] = i;
            C.val[C.nnz++] = v;
        }
    }
    csr_matrix A, B;
    CHECK(csr_from_coo(&C, &A, NULL, &e) == CLS_OK);
    free(used);
    p = tpath("gen.mtx");
    CHECK(mm_write_csr(p, &A, 0, NULL, &e) == CLS_OK);
    if (!read_ok(p, 2, &B, NULL, NULL)) {
        CHECK_MSG(csr_bits_equal(&A, &B), "general write/read round trip differs");
        csr_free(&B);
    }
    p = tpath("sym.mtx");
    CHECK(mm_write_csr(p, &A, 1, "symmetric", &e) == CLS_OK);
    mm_header h;
    if (!read_ok(p, 2, &B, &h, NULL)) {
        CHECK(h.symmetry == MM_SYMMETRIC);
        CHECK_MSG(csr_bits_equal(&A, &B), "symmetric write/read round trip differs");
        csr_free(&B);
    }
    /* overwrite an existing file; no temporary files are left behind */
    CHECK(mm_write_csr(p, &A, 0, NULL, &e) == CLS_OK);
    CHECK(no_tmp_left());
    csr_matrix R;
    CHECK(csr_alloc(&R, 2, 3, 0, &e) == CLS_OK);
    CHECK(mm_write_csr(tpath("rect.mtx"), &R, 1, NULL, &e) == CLS_EUSAGE);
    CHECK(mm_write_csr(tpath("rect.mtx"), &R, 0, NULL, &e) == CLS_OK);
    if (!read_ok(tpath("rect.mtx"), 1, &B, NULL, NULL)) {
        CHECK(B.nrows == 2 && B.ncols == 3 && B.nnz == 0);
        csr_free(&B);
    }
    csr_free(&R);
    CHECK(mm_write_vector("/nonexistent-dir/x.mtx", x, 3, NULL, &e) == CLS_EOTHER);

    /* the text rendered without a file (the daemon's downloads: header, then
     * the values formatted on every core, in pieces) is the written file,
     * byte for byte: a vector (special and random values) and a 2-column
     * block, rendered whole and in pieces of 7 and 1,000 values */
    for (int k = 1; k <= 2; k++) {
        p = tpath("render.mtx");
        const int64_t rows = N / k;
        CHECK(k == 1 ? mm_write_vector(p, x, N, "rendered\nsecond", &e) == CLS_OK
                     : mm_write_block(p, x, rows, 2, "rendered\nsecond", &e) == CLS_OK);
        FILE *rf = fopen(p, "rb");
        char *file = malloc(64 * N + 256);
        size_t flen = rf ? fread(file, 1, 64 * N + 256, rf) : 0;
        if (rf)
            fclose(rf);
        for (int piece = 0; piece < 3; piece++) {
            const int64_t step = piece == 0 ? N : piece == 1 ? 7 : 1000;
            char *hdr = mm_array_header(rows, k, "rendered\nsecond");
            size_t at = hdr ? strlen(hdr) : 0;
            int same = hdr && at <= flen && !memcmp(file, hdr, at);
            for (int64_t i = 0; same && i < rows * k; i += step) {
                char *txt = NULL;
                size_t len = 0;
                const int64_t cnt = rows * k - i < step ? rows * k - i : step;
                same = mm_format_values(x + i, cnt, &txt, &len, &e) == CLS_OK && at + len <= flen &&
                       !memcmp(file + at, txt, len);
                at += len;
                free(txt);
            }
            CHECK_MSG(same && at == flen, "rendered %d column(s) in pieces of %lld: not the file",
                      k, (long long)step);
            free(hdr);
        }
        free(file);
    }
    csr_free(&A);
    coo_free(&C);
    free(x);
}

static void rm_tree(void)
{
    DIR *d = opendir(tmpdir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            unlink(tpath(de->d_name));
    closedir(d);
    rmdir(tmpdir);
}

int main(int argc, char **argv)
{
    check_seed("test_mm");
    snprintf(tmpdir, sizeof tmpdir, "%s/test_mm.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_huge_declarations(); /* first: maxrss deltas */
    test_header_buf();
    test_errors();
    test_formats();
    test_vectors();
    test_number_parsing();
    test_digit_runs();
    test_threads();
    test_mapped();
    test_writer();
    datadir = argc > 1 ? argv[1] : NULL;
    struct stat sb;
    char probe[1024];
    snprintf(probe, sizeof probe, "%s/matrices", datadir ? datadir : "");
    int have_data = datadir && stat(probe, &sb) == 0;
    if (have_data) {
        test_bad_mtx();
        test_real_matrices();
    }
    int rc = check_done("test_mm");
    if (!rc)
        rm_tree();
    else
        fprintf(stderr, "test files kept in %s\n", tmpdir);
    if (!rc && !have_data)
        CHECK_SKIP("no shared data dir (%s); handcrafted cases passed", datadir ? datadir : "none");
    return rc;
}
