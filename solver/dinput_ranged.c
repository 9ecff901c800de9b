/*
 * dinput_ranged.c: phase 1's ranged read, where no rank reads the whole
 * file (dsolve.h: read mode "ranged", the default under mpirun).
 *
 *  1. Every rank reads the header and says whether it sees the same plain
 *     coordinate file as rank 0 (print_of: size, header, CRCs of samples
 *     of it). A rank on another host without the file, or with
 *     another file at the path, gets its span's bytes from rank 0 over MPI
 *     and parses them as the others parse theirs (rank 0 only sends bytes:
 *     the parse stays spread over the ranks).
 *  2. Each rank parses the byte span of its share of the lines
 *     (mm_range.h), from its true first line (a prefix sum of the spans'
 *     line counts), so a bad line is reported at its number from any rank;
 *     the declared count is checked on the sums.
 *  3. The layout: each row's entry count (mirrors included) summed over
 *     the ranks, and part_plan on it, as rank 0 plans from the whole
 *     matrix (the same layout, unless the file holds duplicates: they are
 *     counted before they are summed).
 *  4. Each triplet another rank owns goes to it (droute_foreign), mirrors
 *     made as it is packed, and every rank assembles its block's CSR on
 *     all its cores from its own triplets, where the parse left them, and
 *     those that arrived (csr_from_coo_rows_take: duplicates summed in
 *     ascending value order, so the bits are those of the whole-file
 *     read). A file written row by row moves only the records near the
 *     spans' ends.
 *  5. The checks of solve_check_input, spread over the ranks (dcheck.h).
 *
 * Memory per rank: its span's triplets (16 bytes an entry), the packed
 * copy of what other ranks own and what arrives (near nothing for a file
 * written row by row), then its CSR beside the triplets: at the peak
 * about 1.7x its block's CSR for symmetric storage (a stored entry is half
 * of two) and 2.3x for general, against the whole matrix on rank 0 when it
 * reads alone.
 */
#include "dsolve_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/parallel.h"
#include "../common/timer.h"
#include "../common/trace.h"
#include "../matrices/csr_bin.h"
#include "../matrices/mm_range.h"
#include "dist/dcheck.h"
#include "dist/droute.h"

/* what rank 0 and every other rank must see alike */
typedef struct ranged_print {
    int64_t size, data_off, rows, cols, entries;
    int32_t symmetry, field, ok, binary;
    uint32_t crc_head, crc_tail, crc_samples, crc_rowptr;
} ranged_print;

static uint32_t crc_at(int fd, int64_t off, int64_t n)
{
    unsigned char buf[65536];
    if (n > (int64_t)sizeof buf)
        n = (int64_t)sizeof buf;
    ssize_t got = n > 0 ? pread(fd, buf, (size_t)n, (off_t)off) : 0;
    return (uint32_t)crc32(0L, buf, got > 0 ? (uInt)got : 0u);
}

/* A rank's view of the file: its header, its size, and CRCs of its first
 * and last 64 KiB, of 16 pieces of 4 KiB spread over it, and (the binary
 * form) of every row pointer, which each rank holds already. Two files
 * that differ where none of these look pass as one: the samples make a
 * stale copy of another time step (same size, other values) unlikely to. */
static void print_of(const char *path, const mm_header *h, const mm_where *w, const int64_t *rowptr,
                     int ok, ranged_print *p)
{
    memset(p, 0, sizeof *p);
    p->ok = ok;
    p->binary = w->binary;
    if (!ok)
        return;
    struct stat st;
    p->size = stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
    p->data_off = w->data_off;
    p->rows = h->rows;
    p->cols = h->cols;
    p->entries = h->entries;
    p->symmetry = h->symmetry;
    p->field = h->field;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        p->ok = 0;
        return;
    }
    const int64_t size = p->size > 0 ? p->size : 0;
    p->crc_head = crc_at(fd, 0, size);
    int64_t tail = size > 65536 ? size - 65536 : 0;
    p->crc_tail = crc_at(fd, tail, size - tail);
    uint32_t c = 0;
    for (int k = 1; k <= 16 && size > 0; k++) {
        int64_t at = size / 17 * k, n = size - at < 4096 ? size - at : 4096;
        c = (uint32_t)crc32(c, (const Bytef *)&(uint32_t){crc_at(fd, at, n)}, 4);
    }
    p->crc_samples = c;
    if (rowptr)
        p->crc_rowptr = (uint32_t)crc32(0L, (const Bytef *)rowptr,
                                        (uInt)((size_t)(h->rows + 1) * sizeof *rowptr > 1u << 30
                                                   ? 1u << 30
                                                   : (size_t)(h->rows + 1) * sizeof *rowptr));
    close(fd);
}

/* CLSOLVE_READ_STREAM=1: every rank but 0 acts as if it could not see the
 * file (tests: one host stands in for hosts without a shared file) */
static int stream_forced(void)
{
    const char *v = getenv("CLSOLVE_READ_STREAM");
    return v && *v && strcmp(v, "0") != 0;
}

int dsolve_ranged_possible(MPI_Comm comm, const char *a_path, mm_header *h, mm_where *w,
                           int64_t **bin_rowptr, int *stream)
{
    int me;
    MPI_Comm_rank(comm, &me);
    cls_error e;
    cls_error_clear(&e);
    *bin_rowptr = NULL;
    *stream = 0;
    struct stat sb; /* a pipe is not opened here: its bytes are rank 0's read's */
    int ok = (me == 0 || !stream_forced()) && stat(a_path, &sb) == 0 && S_ISREG(sb.st_mode) &&
             mm_read_header_at(a_path, h, w, &e) == CLS_OK && (w->binary || mm_range_ok(h, w));
    /* the binary form: every rank needs every row pointer for the layout;
     * bad ones are left to rank 0's read, which says where */
    if (ok && w->binary)
        ok = csr_bin_read_rowptr(a_path, h, bin_rowptr, &e) == CLS_OK;
    ranged_print mine, root;
    print_of(a_path, h, w, *bin_rowptr, ok, &mine);
    root = mine;
    if (MPI_Bcast(&root, (int)sizeof root, MPI_BYTE, 0, comm) != MPI_SUCCESS)
        return 0;
    int same = mine.ok && memcmp(&mine, &root, sizeof mine) == 0, all = 0;
    if (MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        all = 0;
    if (!all) {
        free(*bin_rowptr);
        *bin_rowptr = NULL;
    }
    if (all || !root.ok || root.binary)
        return all;
    /* rank 0 holds a text file that some rank cannot see (another host, no
     * shared file system): rank 0 sends those ranks their spans' bytes */
    struct {
        mm_header h;
        mm_where w;
    } hw;
    if (me == 0) {
        hw.h = *h;
        hw.w = *w;
    }
    if (MPI_Bcast(&hw, (int)sizeof hw, MPI_BYTE, 0, comm) != MPI_SUCCESS)
        return 0;
    *h = hw.h;
    *w = hw.w;
    *stream = !same;
    return 1;
}

/* each row's entries, mirrors included, counted on every core over the
 * window of rows [lo, hi) this rank's entries touch */
typedef struct count_ctx {
    const coo_matrix *C;
    int32_t *cnt; /* a row's entries here: < 2^31 by plan_layout's guard */
    int64_t lo;
    int32_t *wlo, *whi; /* per range: the rows touched */
    int mirror;
} count_ctx;

static void window_range(void *arg, int range, int64_t k0, int64_t k1)
{
    const count_ctx *c = arg;
    int32_t lo = INT32_MAX, hi = -1;
    for (int64_t k = k0; k < k1; k++) {
        int32_t i = c->C->row[k], j = c->mirror ? c->C->col[k] : i;
        int32_t a = i < j ? i : j, b = i < j ? j : i;
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
    }
    c->wlo[range] = lo;
    c->whi[range] = hi;
}

static void count_range(void *arg, int range, int64_t k0, int64_t k1)
{
    (void)range;
    const count_ctx *c = arg;
    for (int64_t k = k0; k < k1; k++) {
        const int32_t i = c->C->row[k], j = c->C->col[k];
        __atomic_fetch_add(&c->cnt[i - c->lo], 1, __ATOMIC_RELAXED);
        if (c->mirror && i != j)
            __atomic_fetch_add(&c->cnt[j - c->lo], 1, __ATOMIC_RELAXED);
    }
}

static int64_t count_row_nnz(const void *ctx, int64_t i)
{
    return ((const int64_t *)ctx)[i];
}

/* rank 0's sum of the windows, on every core: all[lo + i] (+)= win[i] */
typedef struct sum_ctx {
    int64_t *all;
    const int32_t *win;
    int64_t lo;
    int add;
} sum_ctx;

static void sum_range(void *arg, int range, int64_t i0, int64_t i1)
{
    (void)range;
    const sum_ctx *c = arg;
    int64_t *a = c->all + c->lo;
    if (c->add)
        for (int64_t i = i0; i < i1; i++)
            a[i] += c->win[i];
    else if (c->win)
        for (int64_t i = i0; i < i1; i++)
            a[i] = c->win[i];
    else
        memset(a + i0, 0, (size_t)(i1 - i0) * sizeof *a);
}

static void sum_into(int64_t *all, int64_t lo, int64_t len, const int32_t *win, int add)
{
    sum_ctx c = {all, win, lo, add};
    if (len > 0)
        cls_parallel_for(len, 1 << 16, sum_range, &c);
}

/* 3. The layout. Each rank counts its entries' rows (mirrors included)
 * over the window of rows they touch (for a file written row by row, about
 * its share of the rows); rank 0 sums the windows, plans as it plans from
 * the whole matrix, and gives every rank the bounds. Only rank 0 holds a
 * count per row: the others send about n / ranks of them. */
static int plan_layout(MPI_Comm comm, const coo_matrix *C, int mirror, int64_t n,
                       const dsolve_options *opt, int G, part_layout *L, double *t_count,
                       double *t_sum, cls_error *err)
{
    const double t0 = cls_now();
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    const int64_t grain = 65536;
    const int nr = C->nnz > 0 ? cls_parallel_ranges(C->nnz, grain) : 0;
    count_ctx cc = {.C = C, .mirror = mirror};
    int64_t win[2] = {0, 0}; /* rows [lo, hi) */
    cc.wlo = malloc(((size_t)nr + 1) * sizeof *cc.wlo);
    cc.whi = malloc(((size_t)nr + 1) * sizeof *cc.whi);
    int rc = cc.wlo && cc.whi ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for the layout");
    if (!rc && (mirror ? 2 : 1) * C->nnz >= INT32_MAX) /* the counts are int32 */
        rc = cls_fail(err, CLS_EOTHER,
                      "%lld entries in one rank's share of the file, more than its row counts "
                      "hold; run on more ranks",
                      (long long)C->nnz);
    if (!rc && nr > 0) {
        cls_parallel_for(C->nnz, grain, window_range, &cc);
        int32_t lo = INT32_MAX, hi = -1;
        for (int q = 0; q < nr; q++) {
            lo = cc.wlo[q] < lo ? cc.wlo[q] : lo;
            hi = cc.whi[q] > hi ? cc.whi[q] : hi;
        }
        win[0] = lo;
        win[1] = (int64_t)hi + 1;
    }
    cc.lo = win[0];
    if (!rc && !(cc.cnt = calloc((size_t)(win[1] > win[0] ? win[1] - win[0] : 1), sizeof *cc.cnt)))
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the row counts");
    if (!rc && nr > 0)
        cls_parallel_for(C->nnz, grain, count_range, &cc);
    free(cc.wlo);
    free(cc.whi);
    *t_count = cls_now() - t0;
    int64_t *wins = me == 0 ? malloc(2 * (size_t)size * sizeof *wins) : NULL, *all = NULL;
    int32_t *tmp = NULL;
    if (me == 0 && !rc && !wins)
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the layout");
    if ((rc = dsolve_agree(comm, rc, err)))
        goto out;
    if (MPI_Gather(win, 2, MPI_INT64_T, wins, 2, MPI_INT64_T, 0, comm) != MPI_SUCCESS) {
        rc = dsolve_agree(comm, cls_fail(err, CLS_EOTHER, "MPI_Gather(windows) failed"), err);
        goto out;
    }
    if (me == 0) { /* room for the sum and for the largest window */
        int64_t wmax = 0;
        for (int r = 1; r < size; r++)
            wmax = wins[2 * r + 1] - wins[2 * r] > wmax ? wins[2 * r + 1] - wins[2 * r] : wmax;
        all = malloc((size_t)(n ? n : 1) * sizeof *all);
        tmp = malloc((size_t)(wmax ? wmax : 1) * sizeof *tmp);
        if (!all || !tmp)
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the row counts");
    }
    if ((rc = dsolve_agree(comm, rc, err)))
        goto out;
    if (me != 0) { /* the counts to rank 0, which plans */
        rc = dsolve_send_big(cc.cnt, win[1] - win[0], MPI_INT32_T, sizeof(int32_t), 0, comm, err);
        rc = dsolve_share_layout(comm, n, G, rc, L, err);
        goto out;
    }
    sum_into(all, 0, win[0], NULL, 0); /* zeros outside rank 0's window */
    sum_into(all, win[0], win[1] - win[0], cc.cnt, 0);
    sum_into(all, win[1], n - win[1], NULL, 0);
    for (int r = 1; r < size; r++) {
        const int64_t lo = wins[2 * r], len = wins[2 * r + 1] - lo;
        int rrc = dsolve_recv_big(tmp, len, MPI_INT32_T, sizeof(int32_t), r, comm, err);
        if (!rc)
            rc = rrc;
        if (!rc)
            sum_into(all, lo, len, tmp, 1);
    }
    *t_sum = cls_now() - t0 - *t_count;
    if (!rc)
        rc = part_plan(n, count_row_nnz, all, size, G, opt->min_rows_per_part, DSOLVE_MAX_PARTS, L,
                       err);
    rc = dsolve_share_layout(comm, n, G, rc, L, err);
out:
    free(cc.cnt);
    free(tmp);
    free(all);
    free(wins);
    return rc;
}

/* This rank's span: its bounds (rank 0 cuts the file for every rank) and,
 * where the rank cannot see the file, its bytes from rank 0 (*buf). */
static int span_of(MPI_Comm comm, const char *path, const mm_where *w, int stream, int64_t *b,
                   int64_t *e, char **buf, cls_error *err)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int64_t *cuts = malloc(((size_t)size + 1) * sizeof *cuts);
    int *streamed = malloc((size_t)size * sizeof *streamed), any = 0;
    int rc = cuts && streamed ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for the spans");
    for (int r = 0; me == 0 && !rc && r < size; r++)
        rc = mm_range_span(path, w, r, size, &cuts[r], &cuts[r + 1], err);
    if ((rc = dsolve_agree(comm, rc, err)))
        goto out;
    MPI_Bcast(cuts, size + 1, MPI_INT64_T, 0, comm);
    MPI_Allgather(&stream, 1, MPI_INT, streamed, 1, MPI_INT, comm);
    *b = cuts[me];
    *e = cuts[me + 1];
    for (int r = 0; r < size; r++)
        any |= streamed[r] && cuts[r + 1] > cuts[r];
    if (!any)
        goto out;
    cls_trace("input: spans' bytes sent by rank 0 to the ranks without the file");
    /* rank 0 maps the file; a streamed rank makes room for its bytes */
    void *m = MAP_FAILED;
    if (me == 0) {
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            m = mmap(NULL, (size_t)w->file_size, PROT_READ, MAP_PRIVATE, fd, 0);
            close(fd);
        }
        if (m == MAP_FAILED)
            rc = cls_fail(err, CLS_EOTHER, "%s: cannot map: %s", path, strerror(errno));
    } else if (stream && !(*buf = malloc((size_t)(*e - *b) + 1))) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for %lld bytes of %s", (long long)(*e - *b),
                      path);
    }
    if ((rc = dsolve_agree(comm, rc, err))) {
        if (m != MAP_FAILED)
            munmap(m, (size_t)w->file_size);
        goto out;
    }
    if (me == 0) { /* to every such rank at once: each takes its pages in parallel */
        int nreq = 0;
        for (int r = 1; r < size; r++)
            if (streamed[r])
                nreq += (int)((cuts[r + 1] - cuts[r] + DS_CHUNK - 1) / DS_CHUNK);
        MPI_Request *req = malloc((size_t)(nreq ? nreq : 1) * sizeof *req);
        if (!req) { /* one after another, then */
            for (int r = 1; r < size; r++)
                if (streamed[r] && cuts[r + 1] > cuts[r])
                    rc = dsolve_send_big((const char *)m + cuts[r], cuts[r + 1] - cuts[r], MPI_BYTE,
                                         1, r, comm, err);
        } else {
            int q = 0;
            for (int r = 1; r < size; r++)
                for (int64_t o = cuts[r]; streamed[r] && o < cuts[r + 1]; o += DS_CHUNK) {
                    int64_t c = cuts[r + 1] - o < DS_CHUNK ? cuts[r + 1] - o : DS_CHUNK;
                    MPI_Isend((const char *)m + o, (int)c, MPI_BYTE, r, DS_TAG_SCATTER, comm,
                              &req[q++]);
                }
            if (MPI_Waitall(q, req, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
                rc = cls_fail(err, CLS_EOTHER, "MPI_Isend of the spans' bytes failed");
            free(req);
        }
    }
    if (me != 0 && stream && *e > *b)
        rc = dsolve_recv_big(*buf, *e - *b, MPI_BYTE, 1, 0, comm, err);
    if (m != MAP_FAILED)
        munmap(m, (size_t)w->file_size);
    rc = dsolve_agree(comm, rc, err);
out:
    if (rc) {
        free(*buf);
        *buf = NULL;
    }
    free(cuts);
    free(streamed);
    return rc;
}

/* 2. this rank's span, parsed; the count checked on the sums */
static int parse_span(MPI_Comm comm, const char *path, const mm_header *h, const mm_where *w,
                      int stream, const dsolve_options *opt, coo_matrix *C, cls_error *err)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int64_t b = 0, e = 0, lines = 0;
    char *buf = NULL;
    int rc = span_of(comm, path, w, stream, &b, &e, &buf, err);
    if (rc)
        return rc; /* agreed */
    if (buf)
        lines = mm_range_lines_mem(buf, (size_t)(e - b));
    else
        rc = mm_range_lines(path, b, e, &lines, err);
    if ((rc = dsolve_agree(comm, rc, err))) {
        free(buf);
        return rc;
    }
    int64_t before = 0, total = 0;
    MPI_Exscan(&lines, &before, 1, MPI_INT64_T, MPI_SUM, comm);
    MPI_Allreduce(&lines, &total, 1, MPI_INT64_T, MPI_SUM, comm);
    if (me == 0)
        before = 0; /* MPI_Exscan leaves rank 0's undefined */
    const int64_t first_line = h->size_line + 1 + before;
    mm_read_options ro = {.max_memory = opt->read_max_memory};
    if (me == 0) { /* the daemon's cancel and drain reach rank 0's read */
        ro.progress = opt->read_progress;
        ro.progress_ctx = opt->read_ctx;
    }
    mm_span_result res;
    rc = buf ? mm_read_span_mem(path, &ro, h, buf, (size_t)(e - b), first_line, C, &res, err)
             : mm_read_span(path, &ro, h, b, e, first_line, C, &res, err);
    /* the count: the declared one is passed within the span whose entries
     * cross it, before any bad line after it (the whole-file read's order) */
    int64_t ebefore = 0, etotal = 0;
    MPI_Exscan(&res.entries, &ebefore, 1, MPI_INT64_T, MPI_SUM, comm);
    MPI_Allreduce(&res.entries, &etotal, 1, MPI_INT64_T, MPI_SUM, comm);
    if (me == 0)
        ebefore = 0;
    if (ebefore <= h->entries && ebefore + res.entries > h->entries)
        rc = buf ? mm_span_fail_long_mem(path, h, buf, (size_t)(e - b), first_line,
                                         h->entries - ebefore, err)
                 : mm_span_fail_long(path, h, b, e, first_line, h->entries - ebefore, err);
    free(buf);
    if ((rc = dsolve_agree_plain(comm, rc, err)))
        return rc;
    return mm_check_count(path, h, etotal, h->size_line + total, err); /* alike on every rank */
}

static int64_t rowptr_row_nnz(const void *ctx, int64_t i)
{
    const int64_t *rp = ctx;
    return rp[i + 1] - rp[i];
}

/* The binary form: the layout from the row pointers every rank holds, then
 * each rank reads its rows' columns and values from their offsets. */
static int read_binary(MPI_Comm comm, const char *a_path, const mm_header *h, const int64_t *rowptr,
                       const dsolve_options *opt, int G, part_layout *L, csr_matrix *blk,
                       int64_t *nnz, int64_t *duplicates, cls_error *err)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int rc = solve_check_shape(h->rows, h->cols, a_path, err);
    if (!rc)
        rc = part_plan(h->rows, rowptr_row_nnz, rowptr, size, G, opt->min_rows_per_part,
                       DSOLVE_MAX_PARTS, L, err);
    if ((rc = dsolve_agree(comm, rc, err))) /* alike but for a lack of memory */
        return rc;
    int64_t *rank_begin = malloc(((size_t)size + 1) * sizeof *rank_begin);
    if (rank_begin) {
        for (int r = 0; r <= size; r++)
            rank_begin[r] = L->begin[L->first[r]];
        rc = csr_bin_read_rows(a_path, h, rowptr, rank_begin[me], rank_begin[me + 1], blk, err);
    } else {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the layout");
    }
    if (!rc)
        blk->ncols = h->rows;
    if (!(rc = dsolve_agree_plain(comm, rc, err))) {
        *nnz = h->entries;
        *duplicates = 0;
        cls_trace("input: ranged read of the binary form");
        rc = dcheck_matrix(comm, rank_begin, blk, 0, a_path, err);
    }
    free(rank_begin);
    return rc;
}

int dsolve_read_ranged(MPI_Comm comm, const char *a_path, const mm_header *h, const mm_where *w,
                       const int64_t *bin_rowptr, int stream, const dsolve_options *opt, int G,
                       part_layout *L, csr_matrix *blk, int64_t *nnz, int64_t *duplicates,
                       cls_error *err)
{
    if (w->binary) {
        memset(L, 0, sizeof *L);
        csr_init(blk);
        int rc = read_binary(comm, a_path, h, bin_rowptr, opt, G, L, blk, nnz, duplicates, err);
        if (rc) {
            csr_free(blk);
            part_free(L);
        }
        return rc;
    }
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    coo_matrix C, mine;
    coo_init(&C);
    coo_init(&mine);
    csr_init(blk);
    memset(L, 0, sizeof *L);
    int64_t *rank_begin = NULL, *pnnz = NULL;
    int rc = solve_check_shape(h->rows, h->cols, a_path, err);
    if (rc)
        goto done; /* alike on every rank: the header */
    double t0 = cls_now();
    if ((rc = parse_span(comm, a_path, h, w, stream, opt, &C, err)))
        goto done;
    double t1 = cls_now();
    cls_trace("input: ranged parse");
    /* 3. the layout (rows backed: mm_check_count) */
    const int64_t n = h->rows;
    const int mirror = h->symmetry == MM_SYMMETRIC ? 1 : h->symmetry == MM_SKEW_SYMMETRIC ? -1 : 0;
    double tl_count = 0.0, tl_sum = 0.0;
    if ((rc = plan_layout(comm, &C, mirror, n, opt, G, L, &tl_count, &tl_sum, err)))
        goto done; /* agreed */
    rank_begin = malloc(((size_t)size + 1) * sizeof *rank_begin);
    rc = rank_begin ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for the layout");
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;
    for (int r = 0; r <= size; r++)
        rank_begin[r] = L->begin[L->first[r]];
    double t2 = cls_now();
    /* 4. the triplets other ranks own to them, then this rank's CSR from
     * its own in C and what arrived */
    rc = droute_foreign(comm, rank_begin, &C, mirror, &mine, err);
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;
    double t3 = cls_now();
    const int64_t rb = rank_begin[me], re = rank_begin[me + 1];
    C.ncols = n;
    int64_t expanded = 0, dups = 0;
    rc = csr_from_coo_rows_take(&C, mirror, rb, re, &mine, 0, blk, &expanded, &dups, err);
    if (!rc)
        blk->ncols = n;
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;
    double t4 = cls_now();
    /* the parts' stored entries, now that duplicates are summed */
    pnnz = calloc((size_t)L->nparts, sizeof *pnnz);
    rc = pnnz ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for the layout");
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;
    for (int k = L->first[me]; k < L->first[me + 1]; k++)
        pnnz[k] = blk->rowptr[L->begin[k + 1] - rb] - blk->rowptr[L->begin[k] - rb];
    int64_t sums[2] = {blk->nnz, dups};
    if (MPI_Allreduce(MPI_IN_PLACE, pnnz, L->nparts, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        rc = cls_fail(err, CLS_EOTHER, "MPI_Allreduce(layout) failed");
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;
    memcpy(L->nnz, pnnz, (size_t)L->nparts * sizeof *pnnz);
    *nnz = sums[0];
    *duplicates = sums[1];
    /* 5. the checks */
    rc = dcheck_matrix(comm, rank_begin, blk, mirror != 0, a_path, err);
    double t5 = cls_now();
    char line[240];
    snprintf(line, sizeof line,
             "input: ranged read: parse %.3f s, layout %.3f s (count %.3f, sums %.3f), route "
             "%.3f s, assemble %.3f s, check %.3f s",
             t1 - t0, t2 - t1, tl_count, tl_sum, t3 - t2, t4 - t3, t5 - t4);
    cls_trace(line);
done:
    free(rank_begin);
    free(pnnz);
    coo_free(&C);
    coo_free(&mine);
    if (rc) {
        csr_free(blk);
        part_free(L);
    }
    return rc;
}
