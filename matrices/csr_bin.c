/*
 * csr_bin.c: the binary CSR form (csr_bin.h). The arrays are read straight
 * into place by pread(2) on every core (no parse; the page cache copied in
 * parallel, as the text reader parses in parallel), then the rows are
 * checked in parallel ranges, the first bad row named; a big-endian host
 * would have to swap and is refused.
 */
#include "csr_bin.h"

#include "../common/parallel.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return (int64_t)v;
}

int csr_bin_is_magic(const unsigned char *buf, size_t n)
{
    return memcmp(buf, CSR_BIN_MAGIC, n < 8 ? n : 8) == 0;
}

int csr_bin_header(const unsigned char *buf, const char *name, mm_header *h, uint64_t *bytes,
                   cls_error *err)
{
    memset(h, 0, sizeof *h);
    if (!csr_bin_is_magic(buf, 8))
        return cls_fail(err, CLS_EINPUT, "%s: not a binary CSR file (magic %s)", name,
                        CSR_BIN_MAGIC);
    const int64_t rows = le64(buf + 8), cols = le64(buf + 16), nnz = le64(buf + 24);
    /* the sizes must fit the index types: int64 row pointers, int32 columns */
    if (rows < 0 || cols < 0 || nnz < 0 || rows > INT32_MAX || cols > INT32_MAX ||
        nnz > (INT64_MAX - 64) / 16 - rows)
        return cls_fail(err, CLS_EINPUT,
                        "%s: byte 8: the header declares %lld x %lld with %lld entries, not a "
                        "matrix this reader takes (at most 2^31-1 rows and columns)",
                        name, (long long)rows, (long long)cols, (long long)nnz);
    h->layout = MM_COORDINATE;
    h->field = MM_REAL;
    h->symmetry = MM_GENERAL;
    h->rows = rows;
    h->cols = cols;
    h->entries = nnz;
    h->size_line = 1;
    *bytes = (uint64_t)CSR_BIN_HEADER + 8u * (uint64_t)(rows + 1) + 12u * (uint64_t)nnz;
    return CLS_OK;
}

static int read_all(int fd, void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* One array's elements [b, e) read in parallel ranges (pread: the page
 * cache copied by every core, as the text reader parses on every core). */
typedef struct bin_load {
    int fd;
    unsigned char *dst;
    size_t elem;
    off_t off;
    atomic_int failed;
} bin_load;

static void bin_load_range(void *ctx, int range, int64_t b, int64_t e)
{
    (void)range;
    bin_load *L = ctx;
    unsigned char *p = L->dst + (size_t)b * L->elem;
    size_t n = (size_t)(e - b) * L->elem;
    off_t at = L->off + (off_t)((size_t)b * L->elem);
    while (n > 0) {
        ssize_t r = pread(L->fd, p, n, at);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            atomic_store(&L->failed, 1);
            return;
        }
        p += r;
        at += r;
        n -= (size_t)r;
    }
}

static int bin_load_array(int fd, void *dst, int64_t count, size_t elem, off_t off)
{
    bin_load L = {.fd = fd, .dst = dst, .elem = elem, .off = off};
    atomic_init(&L.failed, 0);
    if (count > 0)
        cls_parallel_for(count, (int64_t)((8u << 20) / elem), bin_load_range, &L);
    return atomic_load(&L.failed) ? -1 : 0;
}

/* Row i's checks: 0, or its error in err. */
static int bin_row_check(const csr_matrix *A, const mm_header *h, const char *path, int64_t i,
                         int64_t base, cls_error *err)
{
    const int64_t b = A->rowptr[i], e = A->rowptr[i + 1];
    if ((i == 0 && b != 0) || e < b || e > h->entries)
        return cls_fail(err, CLS_EINPUT,
                        "%s: row %lld: row pointers %lld .. %lld (they start at 0, never "
                        "decrease and end at %lld entries)",
                        path, (long long)(base + i) + 1, (long long)b, (long long)e, (long long)h->entries);
    for (int64_t j = b; j < e; j++) {
        const int32_t c = A->col[j];
        if (c < 0 || c >= h->cols)
            return cls_fail(err, CLS_EINPUT, "%s: row %lld: column %lld out of range 1..%lld", path,
                            (long long)(base + i) + 1, (long long)c + 1, (long long)h->cols);
        if (j > b && c <= A->col[j - 1])
            return cls_fail(err, CLS_EINPUT,
                            "%s: row %lld: column %lld after %lld (columns must increase "
                            "within a row: sorted, no duplicates)",
                            path, (long long)(base + i) + 1, (long long)c + 1, (long long)A->col[j - 1] + 1);
    }
    return CLS_OK;
}

/* The rows checked in parallel ranges; each range keeps its first bad row,
 * so the message is the first bad row's of the whole file. */
typedef struct bin_check {
    const csr_matrix *A;
    const mm_header *h;
    int64_t *first; /* per range: the first bad row, or -1 */
} bin_check;

static void bin_check_range(void *ctx, int range, int64_t b, int64_t e)
{
    bin_check *C = ctx;
    cls_error scratch;
    C->first[range] = -1;
    for (int64_t i = b; i < e; i++)
        if (bin_row_check(C->A, C->h, "", i, 0, &scratch)) {
            C->first[range] = i;
            return;
        }
}

/* Opens the file and checks its header against its size and the memory
 * allowed (0: no limit). *fd is open on success. */
static int bin_open(const char *path, uint64_t max_memory, int *fd, mm_header *hh, cls_error *err)
{
    const uint16_t one = 1;
    *fd = -1;
    if (*(const unsigned char *)&one != 1)
        return cls_fail(err, CLS_EOTHER, "%s: binary CSR needs a little-endian host", path);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return cls_fail(err, CLS_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    unsigned char hb[CSR_BIN_HEADER];
    struct stat st;
    int rc = CLS_OK;
    uint64_t want = 0;
    if (fstat(*fd, &st) != 0 || read_all(*fd, hb, sizeof hb) != 0)
        rc = cls_fail(err, CLS_EINPUT, "%s: byte 0: shorter than the %d-byte header", path,
                      CSR_BIN_HEADER);
    else if (!(rc = csr_bin_header(hb, path, hh, &want, err)) && (uint64_t)st.st_size != want)
        rc = cls_fail(err, CLS_EINPUT,
                      "%s: the file has %lld bytes but its header (%lld x %lld, %lld entries) "
                      "makes %llu",
                      path, (long long)st.st_size, (long long)hh->rows, (long long)hh->cols,
                      (long long)hh->entries, (unsigned long long)want);
    else if (max_memory && want > max_memory)
        rc = cls_fail(err, CLS_EOTHER,
                      "%s: reading this matrix needs %.1f MB; %.1f MB are available", path,
                      (double)want / 1048576.0, (double)max_memory / 1048576.0);
    if (rc) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

/* Rows [0, A->nrows) checked in parallel ranges: the first bad row's error
 * (rows numbered from base + 1 in the message), or CLS_OK. */
static int bin_check_rows(const csr_matrix *A, const mm_header *h, const char *path, int64_t base,
                          cls_error *err)
{
    const int64_t grain = 65536;
    const int nr = cls_parallel_ranges(A->nrows, grain);
    int64_t *first = malloc((size_t)nr * sizeof *first);
    if (!first)
        return cls_fail(err, CLS_EOTHER, "%s: out of memory", path);
    bin_check C = {A, h, first};
    cls_parallel_for(A->nrows, grain, bin_check_range, &C);
    int rc = CLS_OK;
    for (int r = 0; r < nr && !rc; r++)
        if (first[r] >= 0)
            rc = bin_row_check(A, h, path, first[r], base, err);
    free(first);
    return rc;
}

int csr_bin_read_rowptr(const char *path, mm_header *h, int64_t **rowptr, cls_error *err)
{
    int fd;
    *rowptr = NULL;
    int rc = bin_open(path, 0, &fd, h, err);
    if (rc)
        return rc;
    int64_t *rp = malloc((size_t)(h->rows + 1) * sizeof *rp);
    if (!rp)
        rc = cls_fail(err, CLS_EOTHER, "%s: out of memory for the row pointers", path);
    else if (bin_load_array(fd, rp, h->rows + 1, 8, CSR_BIN_HEADER))
        rc = cls_fail(err, CLS_EINPUT, "%s: read failed: %s", path, strerror(errno));
    close(fd);
    for (int64_t i = 0; !rc && i < h->rows; i++)
        if (rp[0] != 0 || rp[i + 1] < rp[i] || rp[i + 1] > h->entries)
            rc = cls_fail(err, CLS_EINPUT, "%s: row %lld: bad row pointers", path,
                          (long long)i + 1);
    if (!rc && rp[h->rows] != h->entries)
        rc = cls_fail(err, CLS_EINPUT, "%s: the last row pointer is not %lld", path,
                      (long long)h->entries);
    if (rc) {
        free(rp);
        return rc;
    }
    *rowptr = rp;
    return CLS_OK;
}

int csr_bin_read_rows(const char *path, const mm_header *h, const int64_t *rowptr, int64_t r0,
                      int64_t r1, csr_matrix *B, cls_error *err)
{
    csr_init(B);
    int fd;
    mm_header hh;
    int rc = bin_open(path, 0, &fd, &hh, err);
    if (rc)
        return rc;
    const int64_t k0 = rowptr[r0], nnz = rowptr[r1] - k0;
    if (hh.rows != h->rows || hh.cols != h->cols || hh.entries != h->entries)
        rc = cls_fail(err, CLS_EOTHER, "%s: the file changed while it was read", path);
    if (!rc)
        rc = csr_alloc(B, r1 - r0, h->cols, nnz, err);
    const off_t o_col = CSR_BIN_HEADER + 8 * (off_t)(h->rows + 1),
                o_val = o_col + 4 * (off_t)h->entries;
    if (!rc && (bin_load_array(fd, B->col, nnz, 4, o_col + 4 * (off_t)k0) ||
                bin_load_array(fd, B->val, nnz, 8, o_val + 8 * (off_t)k0)))
        rc = cls_fail(err, CLS_EINPUT, "%s: read failed: %s", path, strerror(errno));
    close(fd);
    for (int64_t i = r0; !rc && i <= r1; i++)
        B->rowptr[i - r0] = rowptr[i] - k0;
    mm_header hb = *h; /* the block's entries bound its row pointers */
    hb.entries = nnz;
    if (!rc && B->nrows > 0)
        rc = bin_check_rows(B, &hb, path, r0, err);
    if (rc)
        csr_free(B);
    return rc;
}

int csr_bin_read(const char *path, uint64_t max_memory, csr_matrix *A, mm_header *h, cls_error *err)
{
    csr_init(A);
    int fd;
    mm_header hh;
    int rc = bin_open(path, max_memory, &fd, &hh, err);
    if (rc)
        return rc;
    if (!rc)
        rc = csr_alloc(A, hh.rows, hh.cols, hh.entries, err);
    const off_t o_rp = CSR_BIN_HEADER, o_col = o_rp + 8 * (off_t)(hh.rows + 1),
                o_val = o_col + 4 * (off_t)hh.entries;
    if (!rc && (bin_load_array(fd, A->rowptr, hh.rows + 1, 8, o_rp) ||
                bin_load_array(fd, A->col, hh.entries, 4, o_col) ||
                bin_load_array(fd, A->val, hh.entries, 8, o_val)))
        rc = cls_fail(err, CLS_EINPUT, "%s: read failed: %s", path, strerror(errno));
    close(fd);
    /* the row pointers, then each row's columns: in range, increasing */
    if (!rc && hh.rows > 0)
        rc = bin_check_rows(A, &hh, path, 0, err);
    if (!rc && hh.rows == 0 && hh.entries != 0)
        rc = cls_fail(err, CLS_EINPUT, "%s: no rows but %lld entries", path, (long long)hh.entries);
    if (!rc && hh.rows > 0 && A->rowptr[hh.rows] != hh.entries)
        rc = cls_fail(err, CLS_EINPUT, "%s: row %lld: the last row pointer is %lld, not %lld", path,
                      (long long)hh.rows, (long long)A->rowptr[hh.rows], (long long)hh.entries);
    if (rc) {
        csr_free(A);
        return rc;
    }
    if (h)
        *h = hh;
    return CLS_OK;
}

int csr_bin_write(const char *path, const csr_matrix *A, cls_error *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return cls_fail(err, CLS_EOTHER, "%s: cannot create: %s", path, strerror(errno));
    unsigned char hb[CSR_BIN_HEADER];
    memcpy(hb, CSR_BIN_MAGIC, 8);
    const int64_t v[3] = {A->nrows, A->ncols, A->nnz};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 8; i++)
            hb[8 + 8 * k + i] = (unsigned char)((uint64_t)v[k] >> (8 * i));
    int ok = fwrite(hb, 1, sizeof hb, f) == sizeof hb &&
             fwrite(A->rowptr, 8, (size_t)A->nrows + 1, f) == (size_t)A->nrows + 1 &&
             fwrite(A->col, 4, (size_t)A->nnz, f) == (size_t)A->nnz &&
             fwrite(A->val, 8, (size_t)A->nnz, f) == (size_t)A->nnz;
    if (fclose(f) != 0)
        ok = 0;
    return ok ? CLS_OK : cls_fail(err, CLS_EOTHER, "%s: write failed", path);
}
