/*
 * routes_solution.c: GET /v1/jobs/ID/solution (see routes_solution.h): x as Matrix
 * Market (rendered from solution.bin on every core as it is sent, or the
 * solution.mtx an older job wrote), little-endian float64 (solution.bin), NumPy's
 * .npy (a 64-byte-aligned header, then solution.bin as it is) or JSON
 * (streamed from solution.bin, never loaded whole). ?format= picks one;
 * without it the Accept header does (by q-value; a wildcard or no Accept:
 * Matrix Market; nothing it lists that we make: 406). A finished job's
 * solution never changes (a job runs once; a new solve is a new job), so
 * its answers carry an ETag and Cache-Control: immutable, and
 * If-None-Match is answered 304. A client that accepts gzip gets a large
 * solution compressed as it is read (gzstream.h), under its own ETag.
 * A 200 counts as the fetch that frees a keep=until-fetched job for
 * retention (job_store_mark_fetched); a file that fails its size or CRC
 * check is answered 500 and recorded as damaged (quarantined at the next
 * start).
 */
#include "fileio.h"
#include "routes_solution.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/numfmt.h"
#include "../matrices/mm.h"
#include "gzstream.h"
#include "metrics.h"
#include "http_reply.h"
#include "record.h"
#include "routes_jobs.h"

/* Streams solution.bin as {"id":..,"n":N,"x":[...]} without loading it. */
typedef struct sol_stream {
    int fd;
    int64_t n, next;
    int stage; /* 0 head, 1 values, 2 tail, 3 done */
    char id[IDS_LEN + 1];
    /* the response recorder's copy of the text (record.h), at most 16 MiB */
    char *rec, method[12], path[160];
    const char *route; /* the route table's, static */
    size_t rec_len, rec_cap;
} sol_stream;

static void sol_json_tee(sol_stream *s, const char *buf, size_t n)
{
    if (!s->rec || s->rec_len + n > ((size_t)16 << 20))
        return;
    if (s->rec_len + n > s->rec_cap) {
        size_t nc = (s->rec_len + n) * 2;
        char *p = realloc(s->rec, nc);
        if (!p)
            return;
        s->rec = p;
        s->rec_cap = nc;
    }
    memcpy(s->rec + s->rec_len, buf, n);
    s->rec_len += n;
}

static ssize_t sol_json_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    sol_stream *s = cls;
    size_t w = 0;
    if (s->stage == 0) {
        int k = snprintf(buf, max, "{\"id\":\"%s\",\"n\":%lld,\"x\":[", s->id, (long long)s->n);
        if (k < 0 || (size_t)k >= max)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        w = (size_t)k;
        s->stage = 1;
    }
    while (s->stage == 1 && max - w > 64) {
        if (s->next >= s->n) {
            s->stage = 2;
            break;
        }
        unsigned char b[8 * 256];
        int64_t cnt = s->n - s->next;
        int64_t fit = (int64_t)((max - w) / 28);
        if (cnt > 256)
            cnt = 256;
        if (cnt > fit)
            cnt = fit;
        if (cnt <= 0)
            break;
        ssize_t got = pread(s->fd, b, (size_t)cnt * 8, (off_t)(s->next * 8));
        if (got != cnt * 8)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        for (int64_t i = 0; i < cnt; i++) {
            uint64_t u = 0;
            for (int k = 0; k < 8; k++)
                u |= (uint64_t)b[8 * i + k] << (8 * k);
            double v;
            memcpy(&v, &u, 8);
            if (s->next)
                buf[w++] = ',';
            if (isfinite(v)) { /* 28 bytes a value were reserved: cls_fmt_g17 needs 25 */
                w = (size_t)(cls_fmt_g17(buf + w, v) - buf);
            } else {
                memcpy(buf + w, "null", 4);
                w += 4;
            }
            s->next++;
        }
    }
    if (s->stage == 2 && max - w >= 3) {
        memcpy(buf + w, "]}\n", 3);
        w += 3;
        s->stage = 3;
    }
    if (w == 0 && s->stage == 3)
        return MHD_CONTENT_READER_END_OF_STREAM;
    sol_json_tee(s, buf, w);
    return (ssize_t)w;
}

static void sol_json_free(void *cls)
{
    sol_stream *s = cls;
    if (s->rec && s->stage == 3)
        record_stream_body(s->method, s->route, s->path, 200, "application/json", s->rec,
                           s->rec_len);
    free(s->rec);
    close(s->fd);
    free(s);
}

/* Renders solution.bin as Matrix Market text: the header, then every
 * value as mm_write_vector writes it (the same bytes a written
 * solution.mtx had), MTX_CHUNK values at a time formatted on every core
 * into pieces whose buffers are kept from chunk to chunk (mm_text), never
 * loaded whole. */
#define MTX_CHUNK ((int64_t)1 << 20)
typedef struct mtx_stream {
    int fd;
    int64_t n, next;
    char *hdr;
    size_t hdr_len, hdr_off;
    mm_text text; /* the chunk's text, piece by piece */
    int piece;    /* the piece being sent */
    size_t off;   /* in it */
    unsigned char *raw;
    double *vals;
} mtx_stream;

static size_t take(char *out, size_t room, const char *src, size_t *off, size_t len)
{
    size_t k = len - *off < room ? len - *off : room;
    memcpy(out, src + *off, k);
    *off += k;
    return k;
}

/* gzstream's source: bytes, 0 at the end, -1 on an error */
static ssize_t mtx_source(void *ctx, char *out, size_t max)
{
    mtx_stream *m = ctx;
    size_t w = 0;
    while (w < max) {
        if (m->hdr_off < m->hdr_len) {
            w += take(out + w, max - w, m->hdr, &m->hdr_off, m->hdr_len);
            continue;
        }
        if (m->piece < m->text.n) {
            w += take(out + w, max - w, m->text.piece[m->piece], &m->off, m->text.len[m->piece]);
            if (m->off == m->text.len[m->piece]) {
                m->piece++;
                m->off = 0;
            }
            continue;
        }
        if (m->next >= m->n)
            break;
        const int64_t cnt = m->n - m->next < MTX_CHUNK ? m->n - m->next : MTX_CHUNK;
        size_t got = 0;
        while (got < (size_t)cnt * 8) {
            ssize_t r = pread(m->fd, m->raw + got, (size_t)cnt * 8 - got,
                              (off_t)(m->next * 8 + (int64_t)got));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return -1;
            got += (size_t)r;
        }
        for (int64_t i = 0; i < cnt; i++) {
            uint64_t u = 0;
            for (int k = 0; k < 8; k++)
                u |= (uint64_t)m->raw[8 * i + k] << (8 * k);
            memcpy(&m->vals[i], &u, 8);
        }
        cls_error e;
        if (mm_text_format(&m->text, m->vals, cnt, &e))
            return -1;
        m->piece = 0;
        m->off = 0;
        m->next += cnt;
    }
    return (ssize_t)w;
}

static ssize_t mtx_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    ssize_t n = mtx_source(cls, buf, max);
    return n > 0    ? n
           : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM
                    : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void mtx_free(void *cls)
{
    mtx_stream *m = cls;
    close(m->fd);
    free(m->hdr);
    mm_text_free(&m->text);
    free(m->raw);
    free(m->vals);
    free(m);
}

/* Solutions smaller than this go uncompressed even to a gzip client. */
#define ROUTES_GZIP_MIN (32 * 1024)

/* The JSON stream as a gzstream source. */
static ssize_t sol_json_source(void *ctx, char *buf, size_t max)
{
    ssize_t n = sol_json_reader(ctx, 0, buf, max);
    if (n == MHD_CONTENT_READER_END_OF_STREAM)
        return 0;
    return n == MHD_CONTENT_READER_END_WITH_ERROR ? -1 : n;
}

/* A file read from its start, for gzstream, behind `pre` (the .npy
 * header; empty otherwise). */
typedef struct fd_source {
    int fd;
    size_t pre_len, pre_off;
    char pre[128];
} fd_source;

static ssize_t fd_source_read(void *ctx, char *buf, size_t max)
{
    fd_source *f = ctx;
    if (f->pre_off < f->pre_len) {
        size_t n = f->pre_len - f->pre_off < max ? f->pre_len - f->pre_off : max;
        memcpy(buf, f->pre + f->pre_off, n);
        f->pre_off += n;
        return (ssize_t)n;
    }
    for (;;) {
        ssize_t n = read(f->fd, buf, max);
        if (n >= 0 || errno != EINTR)
            return n < 0 ? -1 : n;
    }
}

static void fd_source_free(void *ctx)
{
    fd_source *f = ctx;
    close(f->fd);
    free(f);
}

/* The .npy body at byte `pos`: the header, then the file (pread: MHD
 * asks by position). */
static ssize_t npy_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    fd_source *f = cls;
    if (pos < f->pre_len) {
        size_t n = f->pre_len - (size_t)pos < max ? f->pre_len - (size_t)pos : max;
        memcpy(buf, f->pre + pos, n);
        return (ssize_t)n;
    }
    for (;;) {
        ssize_t n = pread(f->fd, buf, max, (off_t)(pos - f->pre_len));
        if (n > 0)
            return n;
        if (n == 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (errno != EINTR)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

/* NumPy's format 1.0 header for `n` float64 values in `k` columns stored
 * one after the other (Fortran order): magic, version, header length,
 * then a dict padded with spaces to a multiple of 64 bytes with '\n'. */
static size_t npy_header(char *out, size_t cap, int64_t n, int64_t k)
{
    char dict[96], shape[48];
    if (k > 1)
        snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)(n / k), (long long)k);
    else
        snprintf(shape, sizeof shape, "(%lld,)", (long long)n);
    int dl = snprintf(dict, sizeof dict, "{'descr': '<f8', 'fortran_order': %s, 'shape': %s, }",
                      k > 1 ? "True" : "False", shape);
    size_t total = (10 + (size_t)dl + 1 + 63) / 64 * 64;
    if (total > cap)
        return 0;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    size_t hl = total - 10;
    out[8] = (char)(hl & 0xff);
    out[9] = (char)(hl >> 8);
    memcpy(out + 10, dict, (size_t)dl);
    memset(out + 10 + dl, ' ', total - 10 - (size_t)dl - 1);
    out[total - 1] = '\n';
    return total;
}

/* The job's right-hand-side count (its result's rhs_columns; 1 when the
 * record has none) and, with comment, the line a written solution.mtx
 * carried ("clsolve job ID: converged, N iterations"). */
static int64_t solution_columns(http_call *call, char *comment, size_t cap)
{
    char *text = NULL;
    if (comment && cap)
        snprintf(comment, cap, "clsolve job %s", call->id);
    if (job_store_get_json(call->cfg->store, call->id, &text) || !text)
        return 1;
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    json_t *res = json_object_get(j, "result");
    json_int_t k = json_integer_value(json_object_get(res, "rhs_columns"));
    json_t *it = json_object_get(res, "iterations");
    if (comment && cap && json_is_integer(it))
        snprintf(comment, cap, "clsolve job %s: %s, %lld iterations", call->id,
                 json_is_true(json_object_get(res, "converged")) ? "converged" : "not converged",
                 (long long)json_integer_value(it));
    json_decref(j);
    return k > 1 ? (int64_t)k : 1;
}

int routes_solution_accept(const char *accept)
{
    static const char *const types[] = {"text/plain",
                                        "text/x-matrix-market",
                                        "text/*",
                                        "application/json",
                                        "application/octet-stream",
                                        "application/x-npy",
                                        "*/*"};
    static const int fmts[] = {0, 0, 0, 1, 2, 3, 0};
    int f = http_negotiate(accept, types, fmts, sizeof fmts / sizeof fmts[0]);
    return f < 0 ? -2 : f;
}

/* What to send, from ?format= or else the Accept header: 0 Matrix Market,
 * 1 JSON, 2 float64, 3 .npy; -1 a bad format (400), -2 nothing in Accept
 * we make (406). Accept's media ranges are taken by their q-values
 * (http_negotiate: the first of the highest wins; q=0 refuses one);
 * * / * and text/ * stand for Matrix Market, as does no Accept at all. */
static int solution_format(struct MHD_Connection *c)
{
    const char *format = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    if (format)
        return !strcmp(format, "mtx") || !strcmp(format, "matrix-market") ? 0
               : !strcmp(format, "json")                                  ? 1
               : !strcmp(format, "binary")                                ? 2
               : !strcmp(format, "npy")                                   ? 3
                                                                          : -1;
    const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
    return !accept || !*accept ? 0 : routes_solution_accept(accept);
}

static void solution_cache_headers(struct MHD_Response *r, const char *etag)
{
    MHD_add_response_header(r, "ETag", etag);
    MHD_add_response_header(r, "Cache-Control", "private, max-age=31536000, immutable");
    MHD_add_response_header(r, "Vary", "Accept, Accept-Encoding, Authorization");
}

/* 1 when the file differs from the record's size or CRC-32 (the latter
 * read whole once per run; older records have neither and pass). */
static int solution_damaged(http_call *call, int fd, const struct stat *sb, const char *name)
{
    int64_t bytes;
    uint32_t crc;
    int has_crc, verified;
    if (job_store_file_expect(call->cfg->store, call->id, name, &bytes, &crc, &has_crc, &verified))
        return 0;
    if (bytes >= 0 && (int64_t)sb->st_size != bytes) {
        char why[96];
        snprintf(why, sizeof why, "%s is %lld bytes, the record says %lld", name,
                 (long long)sb->st_size, (long long)bytes);
        fprintf(stderr, "clsolved: job %s: %s\n", call->id, why);
        job_store_file_damaged(call->cfg->store, call->id, why);
        return 1;
    }
    if (!has_crc || verified)
        return 0;
    uint32_t c;
    if (fileio_crc32_fd(fd, (int64_t)sb->st_size, &c))
        return 1;
    if (c != crc) {
        char why[96];
        snprintf(why, sizeof why, "%s has CRC-32 %08x, the record says %08x", name, (unsigned)c,
                 (unsigned)crc);
        fprintf(stderr, "clsolved: job %s: %s\n", call->id, why);
        job_store_file_damaged(call->cfg->store, call->id, why);
        return 1;
    }
    job_store_file_verified(call->cfg->store, call->id, name);
    return 0;
}

enum MHD_Result routes_jobs_solution(http_call *call)
{
    struct MHD_Connection *c = call->conn;
    const char *id = call->id;
    int fmt = solution_format(c);
    if (fmt == -1)
        return http_reply_problem(c, 400, "bad-parameter",
                                  "format: must be mtx, json, binary or npy", 0);
    if (fmt == -2)
        return http_reply_problem(c, 406, "not-acceptable",
                                  "Accept: the solution is sent as text/plain (Matrix Market), "
                                  "application/json, application/octet-stream (little-endian "
                                  "float64) or application/x-npy; ?format= picks one too",
                                  0);
    enum MHD_Result reply; /* ?wait=S: the solution once the job has ended */
    if (routes_wait(call, &reply))
        return reply;
    char dir[PATH_MAX], path[PATH_MAX + 32];
    job_status st;
    if (job_store_job_dir(call->cfg->store, id, dir, sizeof dir, &st))
        return http_reply_unknown_job(c, id);
    snprintf(path, sizeof path, "%s/%s", dir, fmt == 0 ? "solution.mtx" : "solution.bin");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    /* jobs since solution.bin became the one durable copy have no
     * solution.mtx: the text is rendered from solution.bin (older jobs
     * keep the file they wrote, served as it is) */
    int render = 0;
    if (fd < 0 && fmt == 0 && errno == ENOENT) {
        snprintf(path, sizeof path, "%s/solution.bin", dir);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        render = fd >= 0;
    }
    const char *fname = fmt == 0 && !render ? "solution.mtx" : "solution.bin";
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || st == JOB_QUEUED || st == JOB_RUNNING) {
        if (fd >= 0)
            close(fd);
        char d[160];
        snprintf(d, sizeof d, "job %s is %s and has no solution%s", id, job_status_name(st),
                 st == JOB_QUEUED || st == JOB_RUNNING ? " yet" : "");
        return http_reply_problem(c, 409, "no-solution", d, 0);
    }
    /* what was written is what is served: a file whose size (or, read
     * whole once per run, whose CRC-32) differs from the record's is
     * damaged and refused, never sent as a cacheable 200 */
    if (solution_damaged(call, fd, &sb, fname)) {
        close(fd);
        char d[300];
        snprintf(d, sizeof d,
                 "job %s's stored %s does not match what was written (size or checksum): the "
                 "file is damaged; the job's record is kept",
                 id, fname);
        return http_reply_problem(c, 500, "store-damaged", d, 0);
    }
    /* a finished job's solution never changes (a job runs once; a new
     * solve is a new job): cacheable for good, validated by its ETag */
    int gzip =
        gzstream_accepted(c) &&
        (fmt == 1 || render ? sb.st_size / 8 * 24 : (long long)sb.st_size) >= ROUTES_GZIP_MIN;
    char etag[96];
    snprintf(etag, sizeof etag, "\"%s-%s-%lld%s\"", id,
             fmt == 0   ? "mtx"
             : fmt == 1 ? "json"
             : fmt == 3 ? "npy"
                        : "f64",
             (long long)sb.st_size, gzip ? "-gz" : "");
    const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");
    if (inm && (strstr(inm, etag) || !strcmp(inm, "*"))) {
        close(fd);
        struct MHD_Response *nm =
            MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!nm)
            return MHD_NO;
        solution_cache_headers(nm, etag);
        return http_queue(c, 304, nm);
    }
    struct MHD_Response *r;
    if (render) {
        mtx_stream *m = calloc(1, sizeof *m);
        char comment[160];
        const int64_t k = solution_columns(call, comment, sizeof comment);
        const int64_t n = (int64_t)sb.st_size / 8;
        if (m) {
            m->fd = fd;
            m->n = n;
            m->hdr = mm_array_header(k > 1 ? n / k : n, k, comment);
            m->hdr_len = m->hdr ? strlen(m->hdr) : 0;
            m->raw = malloc((size_t)MTX_CHUNK * 8);
            m->vals = malloc((size_t)MTX_CHUNK * sizeof *m->vals);
        }
        if (!m || !m->hdr || !m->raw || !m->vals) {
            if (m)
                mtx_free(m);
            else
                close(fd);
            return MHD_NO;
        }
        r = gzip ? gzstream_response(mtx_source, m, mtx_free)
                 : MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 256 * 1024, mtx_reader, m,
                                                     mtx_free);
        if (!r) {
            if (!gzip)
                mtx_free(m);
            return MHD_NO;
        }
        MHD_add_response_header(r, "Content-Type", "text/plain; charset=us-ascii");
        char cd[96];
        snprintf(cd, sizeof cd, "attachment; filename=\"%s.mtx\"", id);
        MHD_add_response_header(r, "Content-Disposition", cd);
    } else if (fmt == 1) {
        sol_stream *s = calloc(1, sizeof *s);
        if (!s) {
            close(fd);
            return MHD_NO;
        }
        s->fd = fd;
        s->n = (int64_t)sb.st_size / 8;
        memcpy(s->id, id, sizeof s->id);
        if (record_enabled()) {
            s->rec = malloc(1);
            snprintf(s->method, sizeof s->method, "%s", http_current_method());
            snprintf(s->path, sizeof s->path, "%s", http_current_path());
            s->route = http_current_route();
        }
        r = gzip ? gzstream_response(sol_json_source, s, sol_json_free)
                 : MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, sol_json_reader,
                                                     s, sol_json_free);
        if (!r) {
            if (!gzip)
                sol_json_free(s);
            return MHD_NO;
        }
        MHD_add_response_header(r, "Content-Type", "application/json");
    } else if (fmt == 3) {
        fd_source *fs = calloc(1, sizeof *fs);
        if (!fs) {
            close(fd);
            return MHD_NO;
        }
        fs->fd = fd;
        fs->pre_len = npy_header(fs->pre, sizeof fs->pre, (int64_t)sb.st_size / 8,
                                 solution_columns(call, NULL, 0));
        r = gzip ? gzstream_response(fd_source_read, fs, fd_source_free)
                 : MHD_create_response_from_callback(fs->pre_len + (uint64_t)sb.st_size, 256 * 1024,
                                                     npy_reader, fs, fd_source_free);
        if (!r) {
            if (!gzip)
                fd_source_free(fs);
            return MHD_NO;
        }
        MHD_add_response_header(r, "Content-Type", "application/x-npy");
        char cd[96];
        snprintf(cd, sizeof cd, "attachment; filename=\"%s.npy\"", id);
        MHD_add_response_header(r, "Content-Disposition", cd);
    } else {
        if (gzip) {
            fd_source *fs = calloc(1, sizeof *fs);
            if (!fs) {
                close(fd);
                return MHD_NO;
            }
            fs->fd = fd;
            r = gzstream_response(fd_source_read, fs, fd_source_free);
        } else {
            r = MHD_create_response_from_fd((uint64_t)sb.st_size, fd);
            if (!r)
                close(fd);
        }
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, "Content-Type",
                                fmt == 0 ? "text/plain; charset=us-ascii"
                                         : "application/octet-stream");
        char cd[96];
        snprintf(cd, sizeof cd, "attachment; filename=\"%s.%s\"", id, fmt == 0 ? "mtx" : "f64");
        MHD_add_response_header(r, "Content-Disposition", cd);
    }
    if (gzip)
        MHD_add_response_header(r, "Content-Encoding", "gzip");
    solution_cache_headers(r, etag);
    enum MHD_Result q = http_queue(c, 200, r);
    /* the first download of a keep=until-fetched job frees it for
     * retention; the answer was queued first, and the open file is sent
     * whole even if retention removes the job now */
    if (q == MHD_YES && job_store_mark_fetched(call->cfg->store, id))
        job_store_retention(call->cfg->store);
    return q;
}
