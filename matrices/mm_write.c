/*
 * mm_write.c: the Matrix Market writer (the contract in mm.h): a sparse
 * matrix, a vector (x), a k-column block, and x's text for the daemon's
 * download (mm_text_format).
 *
 * Formatting was the cost, not the disk: snprintf's %.17g takes 200-270
 * ns a value, so x of 8 M rows took 0.3-0.4 s on every core. Values go
 * through cls_fmt_g17 (the same bytes, 45 ns) and exact integers (most
 * generated matrices) through a hand-written loop. The rows or indices are
 * cut into jobs of about WR_CHUNK entries, a round of one job a thread
 * formatted on the pool (common/parallel.h); a thread of its own writes
 * round r in order while round r+1 is formatted, and hands its pages to
 * the disk (sync_file_range) so that the final fsync has little left.
 *
 * A file appears whole or not at all: it is written to PATH.tmp.XXXXXX
 * beside the target (mode 0644), fsync'ed and renamed over it, then the
 * directory is fsync'ed so the rename survives a crash; on any error the
 * temporary is unlinked and the target is untouched.
 */
#define _GNU_SOURCE /* sync_file_range */
#include "mm.h"

#include "../common/numfmt.h"
#include "../common/parallel.h"
#include "../common/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static inline char *fmt_u64(char *p, uint64_t x)
{
    char t[24];
    int k = 0;
    do {
        t[k++] = (char)('0' + x % 10);
        x /= 10;
    } while (x);
    while (k)
        *p++ = t[--k];
    return p;
}

/* %.17g (cls_fmt_g17: printf's bytes without printf), with exact integers
 * (the common case in generated matrices) formatted by hand: for |v| < 1e15
 * "%.17g" prints them without exponent or point, so the output is the
 * same. */
static inline char *fmt_double(char *p, double v)
{
    if (fabs(v) < 1e15 && v == (double)(int64_t)v && !(v == 0.0 && signbit(v))) {
        int64_t iv = (int64_t)v;
        if (iv < 0) {
            *p++ = '-';
            return fmt_u64(p, (uint64_t)(-iv));
        }
        return fmt_u64(p, (uint64_t)iv);
    }
    return cls_fmt_g17(p, v);
}

typedef struct wjob {
    const csr_matrix *A;
    const double *x;
    int64_t lo, hi; /* rows (matrix) or indices (vector) */
    int sym;
    char *buf;
    size_t cap, len;
    int failed;
} wjob;

/* entries per formatting job: a round of one job a thread is then about
 * 1-4 MB of text a thread, small enough that the rounds' writes overlap
 * the formatting of the next round, large enough that a round's start
 * costs nothing beside it */
#define WR_CHUNK ((int64_t)1 << 16)
#define WR_MAXJOBS 64

static void *wjob_run(void *arg)
{
    wjob *W = arg;
    size_t need;
    if (W->A) {
        const csr_matrix *A = W->A;
        need = (size_t)(A->rowptr[W->hi] - A->rowptr[W->lo]) * 64 + 1;
    } else {
        need = (size_t)(W->hi - W->lo) * 32 + 1;
    }
    if (W->cap < need) {
        char *nb = realloc(W->buf, need);
        if (!nb) {
            W->failed = 1;
            return NULL;
        }
        W->buf = nb;
        W->cap = need;
    }
    char *p = W->buf;
    if (W->A) {
        const csr_matrix *A = W->A;
        for (int64_t i = W->lo; i < W->hi; i++) {
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                if (W->sym && A->col[k] > i)
                    continue;
                p = fmt_u64(p, (uint64_t)i + 1);
                *p++ = ' ';
                p = fmt_u64(p, (uint64_t)A->col[k] + 1);
                *p++ = ' ';
                p = fmt_double(p, A->val[k]);
                *p++ = '\n';
            }
        }
    } else {
        for (int64_t i = W->lo; i < W->hi; i++) {
            p = fmt_double(p, W->x[i]);
            *p++ = '\n';
        }
    }
    W->len = (size_t)(p - W->buf);
    return NULL;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t r = write(fd, p, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Header text: banner, comment lines ("% " + each line), size line. */
static char *make_header(const char *banner, const char *comment, const char *size_line)
{
    size_t n = strlen(banner) + strlen(size_line) + 8;
    if (comment)
        n += 3 * strlen(comment) + 8;
    char *s = malloc(n), *p = s;
    if (!s)
        return NULL;
    p += sprintf(p, "%s\n", banner);
    if (comment && *comment) {
        const char *c = comment;
        for (;;) {
            const char *e = strchr(c, '\n');
            size_t k = e ? (size_t)(e - c) : strlen(c);
            *p++ = '%';
            if (k && c[0] != '%')
                *p++ = ' ';
            memcpy(p, c, k);
            p += k;
            *p++ = '\n';
            if (!e || !e[1])
                break;
            c = e + 1;
        }
    }
    p += sprintf(p, "%s\n", size_line);
    return s;
}

/* the jobs [b, e) of a round, on one of the pool's threads */
static void wjob_range(void *ctx, int range, int64_t b, int64_t e)
{
    (void)range;
    wjob *W = ctx;
    for (int64_t i = b; i < e; i++)
        wjob_run(&W[i]);
}

/* A round's writer: its jobs' text in order at offset at (the file's
 * position), then the pages handed to the disk when early is set. */
typedef struct {
    int fd, early;
    wjob *W;
    int used;
    off_t at;
    int rc, err;
} wwriter;

/* CLSOLVE_WRITE_EARLY=0: no sync_file_range (for measuring) */
static int wr_early(void)
{
    const char *s = getenv("CLSOLVE_WRITE_EARLY");
    return !(s && strcmp(s, "0") == 0);
}

static void *wwriter_run(void *arg)
{
    wwriter *w = arg;
    off_t start = w->at, len = 0;
    for (int t = 0; t < w->used; t++) {
        if (write_all(w->fd, w->W[t].buf, w->W[t].len)) {
            w->rc = -1;
            w->err = errno;
            return NULL;
        }
        len += (off_t)w->W[t].len;
    }
#ifdef SYNC_FILE_RANGE_WRITE
    if (w->early && len)
        sync_file_range(w->fd, start, len,
                        SYNC_FILE_RANGE_WRITE); /* a hint: errors come at fsync */
#else
    (void)start;
#endif
    return NULL;
}

/* Writes header + body (formatted in parallel rounds) to a temporary file
 * beside path, fsyncs it and renames it over path. */
static int write_file(const char *path, const char *header, const csr_matrix *A,
                      const double *x, int64_t n, int sym, cls_error *err)
{
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 16);
    if (!tmp)
        return cls_fail(err, CLS_EOTHER, "%s: out of memory", path);
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".tmp.XXXXXX", 12);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return cls_fail(err, CLS_EOTHER, "%s: cannot create: %s", path, strerror(e));
    }
    fchmod(fd, 0644);
    int rc = CLS_OK, e = 0;
    const char *what = "write failed";
    if (write_all(fd, header, strlen(header))) {
        e = errno;
        rc = CLS_EOTHER;
    }

    /* Rounds of one job a thread (~WR_CHUNK entries each), formatted on the
     * pool; round r is written by a thread of its own while round r+1 is
     * formatted, and its pages are handed to the disk (sync_file_range)
     * so that the fsync at the end finds most of them written. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu > 0 ? (int)(ncpu > WR_MAXJOBS ? WR_MAXJOBS : ncpu) : 1;
    wjob W[2][WR_MAXJOBS];
    memset(W, 0, sizeof W);
    int64_t nitems = A ? A->nrows : n;
    int64_t pos = 0;
    off_t at = (off_t)strlen(header);
    wwriter wr = {.fd = fd, .early = wr_early()};
    pthread_t wt;
    int writing = 0, cur = 0;
    size_t bytes = 0;
    while (rc == CLS_OK && pos < nitems) {
        int used = 0;
        for (; used < nt && pos < nitems; used++) {
            int64_t hi;
            if (A) {
                /* smallest hi with rowptr[hi] - rowptr[pos] >= WR_CHUNK */
                int64_t target = A->rowptr[pos] + WR_CHUNK, l = pos + 1, r = nitems;
                while (l < r) {
                    int64_t mid = l + (r - l) / 2;
                    if (A->rowptr[mid] >= target)
                        r = mid;
                    else
                        l = mid + 1;
                }
                hi = l;
            } else {
                hi = pos + WR_CHUNK < nitems ? pos + WR_CHUNK : nitems;
            }
            W[cur][used].A = A;
            W[cur][used].x = x;
            W[cur][used].lo = pos;
            W[cur][used].hi = hi;
            W[cur][used].sym = sym;
            W[cur][used].failed = 0;
            pos = hi;
        }
        cls_parallel_for(used, 1, wjob_range, W[cur]);
        if (writing) {
            pthread_join(wt, NULL);
            writing = 0;
            if (wr.rc) {
                e = wr.err;
                rc = CLS_EOTHER;
                break;
            }
        }
        for (int t = 0; t < used; t++)
            if (W[cur][t].failed) {
                rc = CLS_EOTHER;
                what = "out of memory";
            }
        if (rc)
            break;
        wr.W = W[cur];
        wr.used = used;
        wr.at = at;
        for (int t = 0; t < used; t++)
            at += (off_t)W[cur][t].len;
        bytes += (size_t)(at - wr.at);
        if (pthread_create(&wt, NULL, wwriter_run, &wr) == 0)
            writing = 1;
        else
            wwriter_run(&wr);
        if (!writing && wr.rc) {
            e = wr.err;
            rc = CLS_EOTHER;
        }
        cur ^= 1;
    }
    if (writing) {
        pthread_join(wt, NULL);
        if (wr.rc && rc == CLS_OK) {
            e = wr.err;
            rc = CLS_EOTHER;
        }
    }
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < WR_MAXJOBS; t++)
            free(W[b][t].buf);
    if (cls_trace_on()) {
        char line[160];
        snprintf(line, sizeof line, "mm_write: %.1f MB formatted and written", (double)bytes / 1e6);
        cls_trace(line);
    }
    if (rc == CLS_OK && fsync(fd)) {
        e = errno;
        rc = CLS_EOTHER;
        what = "fsync failed";
    }
    if (rc == CLS_OK)
        cls_trace("mm_write: fsync done");
    if (close(fd) && rc == CLS_OK) {
        e = errno;
        rc = CLS_EOTHER;
    }
    if (rc == CLS_OK && rename(tmp, path)) {
        e = errno;
        rc = CLS_EOTHER;
        what = "rename failed";
    }
    if (rc) {
        unlink(tmp);
        free(tmp);
        if (strcmp(what, "out of memory") == 0)
            return cls_fail(err, rc, "%s: %s", path, what);
        return cls_fail(err, rc, "%s: %s: %s", path, what, strerror(e));
    }
    free(tmp);
    /* make the rename durable */
    char *dir = strdup(path);
    if (dir) {
        char *slash = strrchr(dir, '/');
        const char *d = ".";
        if (slash) {
            if (slash == dir)
                slash[1] = '\0';
            else
                *slash = '\0';
            d = dir;
        }
        int dfd = open(d, O_RDONLY | O_DIRECTORY);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    return CLS_OK;
}

char *mm_array_header(int64_t n, int64_t k, const char *comment)
{
    char size[64];
    snprintf(size, sizeof size, "%lld %lld", (long long)n, (long long)(k > 1 ? k : 1));
    return make_header("%%MatrixMarket matrix array real general", comment, size);
}

int mm_text_format(mm_text *t, const double *x, int64_t n, cls_error *err)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu > 0 ? (int)(ncpu > MM_TEXT_PIECES ? MM_TEXT_PIECES : ncpu) : 1;
    const int64_t grain = 4096; /* values per thread at least: a thread costs more below */
    if ((int64_t)nt > (n + grain - 1) / grain)
        nt = (int)((n + grain - 1) / grain);
    if (nt < 1)
        nt = 1;
    wjob W[MM_TEXT_PIECES];
    memset(W, 0, sizeof W);
    for (int i = 0; i < nt; i++) { /* each piece's buffer kept from the last call */
        W[i].x = x;
        W[i].lo = n * i / nt;
        W[i].hi = n * (i + 1) / nt;
        W[i].buf = t->piece[i];
        W[i].cap = t->cap[i];
    }
    cls_parallel_for(nt, 1, wjob_range, W);
    int failed = 0;
    for (int i = 0; i < nt; i++) {
        failed |= W[i].failed;
        t->piece[i] = W[i].buf;
        t->cap[i] = W[i].cap;
        t->len[i] = W[i].failed ? 0 : W[i].len;
    }
    t->n = failed ? 0 : nt;
    return failed ? cls_fail(err, CLS_EOTHER, "out of memory formatting %lld values", (long long)n)
                  : CLS_OK;
}

void mm_text_free(mm_text *t)
{
    for (int i = 0; i < MM_TEXT_PIECES; i++)
        free(t->piece[i]);
    memset(t, 0, sizeof *t);
}

int mm_format_values(const double *x, int64_t n, char **out, size_t *len, cls_error *err)
{
    mm_text t;
    memset(&t, 0, sizeof t);
    *out = NULL;
    *len = 0;
    int rc = mm_text_format(&t, x, n, err);
    size_t total = 0;
    for (int i = 0; i < t.n; i++)
        total += t.len[i];
    char *buf = rc ? NULL : malloc(total ? total : 1);
    if (!rc && !buf)
        rc = cls_fail(err, CLS_EOTHER, "out of memory formatting %lld values", (long long)n);
    for (size_t i = 0, at = 0; buf && i < (size_t)t.n; at += t.len[i], i++)
        memcpy(buf + at, t.piece[i], t.len[i]);
    mm_text_free(&t);
    if (!rc) {
        *out = buf;
        *len = total;
    }
    return rc;
}

int mm_write_vector(const char *path, const double *x, int64_t n, const char *comment,
                    cls_error *err)
{
    if (n < 0)
        return cls_fail(err, CLS_EUSAGE, "%s: negative vector length", path);
    char size[64];
    snprintf(size, sizeof size, "%lld 1", (long long)n);
    char *hdr = make_header("%%MatrixMarket matrix array real general", comment, size);
    if (!hdr)
        return cls_fail(err, CLS_EOTHER, "%s: out of memory", path);
    int rc = write_file(path, hdr, NULL, x, n, 0, err);
    free(hdr);
    return rc;
}

int mm_write_block(const char *path, const double *x, int64_t n, int64_t k, const char *comment,
                   cls_error *err)
{
    if (n < 0 || k < 1)
        return cls_fail(err, CLS_EUSAGE, "%s: bad block size %lld x %lld", path, (long long)n,
                        (long long)k);
    char size[64];
    snprintf(size, sizeof size, "%lld %lld", (long long)n, (long long)k);
    char *hdr = make_header("%%MatrixMarket matrix array real general", comment, size);
    if (!hdr)
        return cls_fail(err, CLS_EOTHER, "%s: out of memory", path);
    int rc = write_file(path, hdr, NULL, x, n * k, 0, err);
    free(hdr);
    return rc;
}

int mm_write_csr(const char *path, const csr_matrix *A, int symmetric, const char *comment,
                 cls_error *err)
{
    if (symmetric && A->nrows != A->ncols)
        return cls_fail(err, CLS_EUSAGE,
                        "%s: a symmetric file needs a square matrix, not %lld x %lld", path,
                        (long long)A->nrows, (long long)A->ncols);
    int64_t nnz = A->rowptr ? A->rowptr[A->nrows] : 0;
    if (symmetric) {
        nnz = 0;
        for (int64_t i = 0; i < A->nrows; i++)
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
                nnz += A->col[k] <= i;
    }
    char size[96];
    snprintf(size, sizeof size, "%lld %lld %lld", (long long)A->nrows, (long long)A->ncols,
             (long long)nnz);
    char *hdr = make_header(symmetric ? "%%MatrixMarket matrix coordinate real symmetric"
                                      : "%%MatrixMarket matrix coordinate real general",
                            comment, size);
    if (!hdr)
        return cls_fail(err, CLS_EOTHER, "%s: out of memory", path);
    int rc = write_file(path, hdr, A->nrows ? A : NULL, NULL, 0, symmetric, err);
    free(hdr);
    return rc;
}
