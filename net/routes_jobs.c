/*
 * routes_jobs.c: the job routes (see routes_jobs.h).
 *
 * POST /v1/jobs streams the body to DATA/incoming/ID/ as it arrives,
 * once it has brought ROUTES_PENDING_MAX bytes (or ended): until then the
 * bytes wait in memory and the upload has no directory. Attackers that
 * open hundreds of uploads a second and trickle their bodies (issue 27)
 * made one mkdir, create, unlink and rmdir each in DATA/incoming, and the
 * parent directory's lock and ext4's search of recently deleted inodes
 * held every honest POST (and the threads answering /healthz) for 0.5-2 s;
 * an upload the guard drops early now costs no disk operation, and a
 * small honest one is written in one piece.
 * A raw body is the matrix (or a physics job's input); a multipart body
 * has parts matrix, rhs, x0 (files), options (JSON, at most 64 KiB) and
 * input/mesh (physics). Matrix Market files have their banner and size
 * line checked while they arrive (upload.c). After an error nothing more
 * is stored and the server answers with it (http_server.c: at once, or,
 * when little of the body is left, once it has been dropped). Only a
 * complete, valid upload becomes a job
 * (job_store_accept) and is answered 202. A job reads only what it
 * uploaded: options naming a file on this host are refused (job_files.h).
 * The solution's route is in routes_solution.c.
 */
#include "routes_jobs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/timer.h"

#define ROUTES_PENDING_MAX (64u * 1024u) /* body bytes kept in memory before the upload's files */
#include "admission.h"
#include "../physics/estimate.h"
#include "http_reply.h"
#include "job_files.h"
#include "job_params.h"
#include "job_wait.h"
#include "log.h"
#include "metrics.h"
#include "multipart.h"
#include "problem.h"
#include "preparse.h"
#include "upload.h"

#define OPTIONS_MAX (64 * 1024)
#define ROUTES_BATCH_MAX 1024 /* systems in one POST /v1/batches */

enum part { PART_NONE, PART_MATRIX, PART_RHS, PART_X0, PART_OPTIONS, PART_INPUT };

struct routes_post {
    const http_server_config *cfg;
    char id[IDS_LEN + 1];
    char dir[PATH_MAX];
    job_params params;
    job_inputs in;
    int multipart;
    multipart_parser *mp;
    upload_file file;
    int file_open;
    enum part file_part; /* the part the open file holds */
    enum part part;
    char *opts;
    size_t opts_len;
    uint64_t bytes;
    int materialized; /* DATA/incoming/ID exists (and a raw body's file) */
    char *pending;    /* the body's first bytes until then (ROUTES_PENDING_MAX) */
    size_t pending_len;
    char raw_name[256]; /* a raw body's filename (Content-Disposition) */
    double t0;          /* the request's first call (cls_now): receive_s */
    /* POST /v1/batches: one job per matrix part; the systems before the
     * current one (id, dir, in above) wait here for the end */
    int batch;
    struct batch_sys {
        char id[IDS_LEN + 1];
        char dir[PATH_MAX];
        job_inputs in;
    } *sys;
    int nsys, capsys;
    /* a pending error: answered once the body has been read */
    unsigned err_status;
    char err_slug[32];
    cls_error err;
};

static int routes_fail(routes_post *p, unsigned status, const char *slug, const cls_error *e)
{
    if (p->err_status)
        return CLS_EINPUT;
    p->err_status = status;
    snprintf(p->err_slug, sizeof p->err_slug, "%s", slug);
    p->err = *e;
    if (p->file_open) {
        upload_file_abort(&p->file);
        p->file_open = 0;
    }
    return CLS_EINPUT;
}

/* A failure of upload_file_*: 400 for bad content, 413 over a limit on
 * what the matrix becomes (admission.h), 507 for a full disk. */
static int routes_file_fail(routes_post *p, int rc, const cls_error *e)
{
    if (rc == CLS_EINPUT && p->file.over_limit)
        return routes_fail(p, 413, "matrix-too-large", e);
    if (rc == CLS_EINPUT)
        return routes_fail(p, 400, "bad-matrix-header", e);
    int we = p->file.write_errno;
    if (we == ENOSPC || we == EDQUOT)
        return routes_fail(p, 507, "insufficient-storage", e);
    return routes_fail(p, 500, "internal", e);
}

/* The last path component of an uploaded file name, printable ASCII only,
 * for messages; def when nothing usable is left. */
static void display_name(const char *filename, const char *def, char *out, size_t cap)
{
    const char *b = filename;
    for (const char *q = filename; *q; q++)
        if (*q == '/' || *q == '\\')
            b = q + 1;
    size_t n = 0;
    for (; *b && n + 1 < cap && n < 100; b++) {
        unsigned char ch = (unsigned char)*b;
        if (ch >= 0x20 && ch < 0x7f && ch != '"')
            out[n++] = (char)ch;
    }
    out[n] = '\0';
    if (!n || !strcmp(out, ".") || !strcmp(out, ".."))
        snprintf(out, cap, "%s", def);
}

/* The extension a stored physics input keeps, because its reader is
 * chosen by it: a mesh's format, or a deform job's raw little-endian basis
 * (.f32, .f64; Matrix Market otherwise). Anything else is stored as
 * "input" and read by its content. */
static const char *input_ext(const char *name)
{
    static const char *const keep[] = {".obj", ".off", ".ply", ".f32", ".f64"};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof keep / sizeof keep[0]; i++)
        if (!strcasecmp(dot, keep[i]))
            return keep[i];
    return ""; /* .gz too: .obj.gz style names are read by content */
}

static int open_part_file(routes_post *p, enum part part, const char *filename, cls_error *err)
{
    char path[PATH_MAX], disp[256];
    const char *stored = NULL, *def = NULL;
    int check = 1;
    switch (part) {
    case PART_MATRIX:
        stored = "matrix.mtx";
        def = "matrix.mtx";
        if (p->batch) { /* unnamed systems of a batch: matrix1.mtx, matrix2.mtx, ... */
            snprintf(disp, sizeof disp, "matrix%d.mtx", p->nsys + 1);
            def = disp;
        }
        display_name(filename, def, p->in.matrix_name, sizeof p->in.matrix_name);
        snprintf(disp, sizeof disp, "%.255s", p->in.matrix_name);
        p->in.has_matrix = 1;
        break;
    case PART_RHS:
        stored = "rhs.mtx";
        display_name(filename, "rhs.mtx", p->in.rhs_name, sizeof p->in.rhs_name);
        snprintf(disp, sizeof disp, "%s", p->in.rhs_name);
        p->in.has_rhs = 1;
        break;
    case PART_X0:
        stored = "x0.mtx";
        display_name(filename, "x0.mtx", p->in.x0_name, sizeof p->in.x0_name);
        snprintf(disp, sizeof disp, "%s", p->in.x0_name);
        p->in.has_x0 = 1;
        break;
    case PART_INPUT:
        display_name(filename, "input", p->in.input_name, sizeof p->in.input_name);
        snprintf(p->in.input_file, sizeof p->in.input_file, "input%s", input_ext(p->in.input_name));
        stored = p->in.input_file;
        snprintf(disp, sizeof disp, "%s", p->in.input_name);
        p->in.has_input = 1;
        check = 0;
        break;
    default:
        return cls_fail(err, CLS_EOTHER, "internal: not a file part");
    }
    if (snprintf(path, sizeof path, "%s/%s", p->dir, stored) >= (int)sizeof path)
        return cls_fail(err, CLS_EOTHER, "data directory path too long");
    int rc = upload_file_open(&p->file, path, disp, check, err);
    if (rc)
        return rc;
    p->file.no_sync = p->batch; /* a batch is committed once (job_store_accept_many) */
    p->file.preparse_ok = part == PART_MATRIX && !p->batch; /* preparse.h */
    if (check) {
        adm_limits lim = adm_limits_get();
        p->file.max_entries = lim.max_nnz;
        p->file.max_text = lim.max_matrix_bytes;
    }
    p->file_open = 1;
    p->file_part = part;
    return CLS_OK;
}

/* --- multipart callbacks --- */

/* The current system of a batch (its files closed) joins the finished
 * ones. */
static int batch_push(routes_post *p, cls_error *err)
{
    if (p->nsys >= ROUTES_BATCH_MAX) {
        cls_fail(err, CLS_EINPUT, "a batch holds at most %d systems", ROUTES_BATCH_MAX);
        return routes_fail(p, 413, "batch-too-large", err);
    }
    if (p->nsys == p->capsys) { /* grown as systems arrive (5 KB each) */
        int cap = p->capsys ? 2 * p->capsys : 8;
        struct batch_sys *n = realloc(p->sys, (size_t)cap * sizeof *n);
        if (!n) {
            cls_fail(err, CLS_EOTHER, "out of memory");
            return routes_fail(p, 500, "internal", err);
        }
        p->sys = n;
        p->capsys = cap;
    }
    struct batch_sys *b = &p->sys[p->nsys++];
    memcpy(b->id, p->id, sizeof b->id);
    snprintf(b->dir, sizeof b->dir, "%s", p->dir);
    b->in = p->in;
    memset(&p->in, 0, sizeof p->in);
    p->id[0] = '\0';
    return CLS_OK;
}

/* A batch's next matrix part: the current system joins the finished ones
 * and a new upload directory begins the next. */
static int batch_next_system(routes_post *p, cls_error *err)
{
    if (batch_push(p, err))
        return CLS_EINPUT;
    if (job_store_incoming_new(p->cfg->store, p->id, p->dir, sizeof p->dir, err))
        return routes_fail(p, 500, "internal", err);
    return CLS_OK;
}

static int mp_begin(void *ctx, const char *name, const char *filename, const char *ctype,
                    cls_error *err)
{
    routes_post *p = ctx;
    enum part part = PART_NONE;
    if (!strcmp(name, "matrix") || !strcmp(name, "A"))
        part = PART_MATRIX;
    else if (!strcmp(name, "rhs") || !strcmp(name, "b"))
        part = PART_RHS;
    else if (!strcmp(name, "x0"))
        part = PART_X0;
    else if (!strcmp(name, "options"))
        part = PART_OPTIONS;
    else if (!strcmp(name, "input") || !strcmp(name, "mesh"))
        part = PART_INPUT;
    else {
        cls_fail(err, CLS_EINPUT,
                 "unknown part '%.64s' (known: matrix, rhs, x0, options, input, mesh)", name);
        return routes_fail(p, 400, "bad-multipart", err);
    }
    if (p->batch) {
        /* each matrix part begins a system; rhs and x0 belong to the
         * matrix before them */
        if (part == PART_INPUT) {
            cls_fail(err, CLS_EINPUT, "a batch holds cg systems: parts matrix, rhs, x0, options");
            return routes_fail(p, 400, "bad-multipart", err);
        }
        if ((part == PART_RHS || part == PART_X0) && !p->in.has_matrix) {
            cls_fail(err, CLS_EINPUT, "part '%.64s' must follow the matrix it belongs to", name);
            return routes_fail(p, 400, "bad-multipart", err);
        }
        if (part == PART_MATRIX && p->in.has_matrix && batch_next_system(p, err))
            return CLS_EINPUT;
    }
    int dup = (part == PART_MATRIX && p->in.has_matrix) || (part == PART_RHS && p->in.has_rhs) ||
              (part == PART_X0 && p->in.has_x0) || (part == PART_INPUT && p->in.has_input) ||
              (part == PART_OPTIONS && p->opts);
    if (dup) {
        cls_fail(err, CLS_EINPUT, "part '%.64s' appears twice", name);
        return routes_fail(p, 400, "bad-multipart", err);
    }
    p->part = part;
    if (part == PART_OPTIONS) {
        p->opts = malloc(OPTIONS_MAX + 1);
        p->opts_len = 0;
        if (!p->opts) {
            cls_fail(err, CLS_EOTHER, "out of memory");
            return routes_fail(p, 500, "internal", err);
        }
        return CLS_OK;
    }
    int rc = open_part_file(p, part, filename, err);
    if (rc)
        return routes_fail(p, 500, "internal", err);
    return CLS_OK;
}

static int mp_data(void *ctx, const char *data, size_t len, cls_error *err)
{
    routes_post *p = ctx;
    if (p->part == PART_OPTIONS) {
        if (p->opts_len + len > OPTIONS_MAX) {
            cls_fail(err, CLS_EINPUT, "options part is larger than 64 KiB");
            return routes_fail(p, 413, "options-too-large", err);
        }
        memcpy(p->opts + p->opts_len, data, len);
        p->opts_len += len;
        return CLS_OK;
    }
    int rc = upload_file_write(&p->file, data, len, err);
    return rc ? routes_file_fail(p, rc, err) : CLS_OK;
}

static int mp_end(void *ctx, cls_error *err)
{
    routes_post *p = ctx;
    enum part part = p->part;
    p->part = PART_NONE;
    if (part == PART_OPTIONS) {
        int rc = job_params_apply_json(&p->params, p->opts, p->opts_len, err);
        return rc ? routes_fail(p, 400, "bad-parameter", err) : CLS_OK;
    }
    p->file_open = 0;
    int rc = upload_file_close(&p->file, err);
    if (rc) {
        upload_file_abort(&p->file);
        return routes_file_fail(p, rc, err);
    }
    if (p->file_part == PART_MATRIX)
        p->in.matrix_text_bytes = (int64_t)p->file.text_bytes;
    return CLS_OK;
}

/* --- POST /v1/jobs --- */

/* The filename parameter of a Content-Disposition header (quoted or a
 * token; "" when there is none). display_name() then keeps its last path
 * component in printable ASCII. */
static void raw_filename(const char *cd, char *out, size_t cap)
{
    out[0] = '\0';
    const char *f = NULL;
    for (const char *q = cd; q && *q && !f; q++)
        if (!strncasecmp(q, "filename=", 9))
            f = q;
    if (!f || cap < 2)
        return;
    f += 9;
    size_t n = 0;
    if (*f == '"') {
        for (f++; *f && *f != '"' && n + 1 < cap; f++) {
            if (*f == '\\' && f[1])
                f++;
            out[n++] = *f;
        }
    } else {
        for (; *f && *f != ';' && *f != ' ' && *f != '\t' && n + 1 < cap; f++)
            out[n++] = *f;
    }
    out[n] = '\0';
}

typedef struct query_ctx {
    job_params *p;
    cls_error err;
    int rc;
} query_ctx;

static enum MHD_Result query_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    query_ctx *q = cls;
    if (q->rc)
        return MHD_NO;
    q->rc = job_params_set(q->p, key, value, &q->err);
    return q->rc ? MHD_NO : MHD_YES;
}

static void post_free(routes_post *p)
{
    if (!p)
        return;
    free(p->sys);
    if (p->file_open)
        upload_file_abort(&p->file);
    job_params_free(&p->params);
    free(p->mp);
    free(p->opts);
    free(p->pending);
    free(p);
}

/* The checks made from the headers, before any byte of the body is
 * read; NULL after queueing the refusal (*replied). */
static routes_post *post_begin(struct MHD_Connection *c, const http_server_config *cfg,
                               enum MHD_Result *replied)
{
    if (cfg->draining && *cfg->draining) {
        metrics_upload_rejected();
        *replied = http_reply_problem_hdr(c, 503, "shutting-down",
                                          "the daemon is shutting down and accepts no new jobs", 0,
                                          "Retry-After", "30");
        return NULL;
    }
    if (job_store_full(cfg->store)) {
        metrics_upload_rejected();
        *replied = http_reply_problem_hdr(
            c, 503, "queue-full", "the job queue is full; retry later", 0, "Retry-After", "5");
        return NULL;
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (end == cl || *end || errno) {
            *replied =
                http_reply_problem(c, 400, "bad-request", "Content-Length is not a number", 0);
            return NULL;
        }
        if (n > cfg->max_upload) {
            char d[160];
            snprintf(d, sizeof d, "the upload is %llu bytes; this daemon accepts at most %llu", n,
                     (unsigned long long)cfg->max_upload);
            metrics_upload_rejected();
            *replied = http_reply_problem(c, 413, "upload-too-large", d, 0);
            return NULL;
        }
    }
    {
        /* free-space admission: before any byte is stored (the reserve) */
        char *endp;
        unsigned long long need = cl ? strtoull(cl, &endp, 10) : 0;
        cls_error derr;
        if (job_store_disk_admit(cfg->store, need, &derr)) {
            metrics_upload_rejected();
            *replied = http_reply_problem(c, 507, "insufficient-storage", derr.msg, 0);
            return NULL;
        }
    }
    const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
    if (ce && strcasecmp(ce, "gzip") != 0 && strcasecmp(ce, "identity") != 0) {
        *replied = http_reply_problem(c, 415, "unsupported-encoding",
                                      "Content-Encoding must be gzip or identity", 0);
        return NULL;
    }
    routes_post *p = calloc(1, sizeof *p);
    if (!p) {
        *replied = MHD_NO;
        return NULL;
    }
    p->cfg = cfg;
    p->t0 = cls_now();
    job_params_init(&p->params);
    query_ctx q = {.p = &p->params};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_param, &q);
    if (q.rc) {
        metrics_upload_rejected();
        *replied = http_reply_problem(c, 400, "bad-parameter", q.err.msg, 0);
        post_free(p);
        return NULL;
    }
    cls_error err;
    cls_error_clear(&err);
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (multipart_is_form(ct)) {
        static const multipart_callbacks cb = {mp_begin, mp_data, mp_end};
        p->multipart = 1;
        p->mp = malloc(sizeof *p->mp);
        if (!p->mp) {
            post_free(p);
            *replied = MHD_NO;
            return NULL;
        }
        if (multipart_init(p->mp, ct, &cb, p, &err)) {
            metrics_upload_rejected();
            *replied = http_reply_problem(c, 400, "bad-multipart", err.msg, 0);
            post_free(p);
            return NULL;
        }
    }
    /* a raw body's name, for messages and the job's inputs, from
     * Content-Disposition: attachment; filename="A.mtx" (RFC 6266) */
    if (!p->multipart)
        raw_filename(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Disposition"),
                     p->raw_name, sizeof p->raw_name);
    return p; /* its directory and files come with its first 64 KiB (post_materialize) */
}

/* The bytes of the body, to the multipart parser or the raw body's file. */
static int post_feed(routes_post *p, const char *data, size_t len)
{
    cls_error err;
    cls_error_clear(&err);
    if (p->multipart) {
        int rc = multipart_feed(p->mp, data, len, &err);
        if (rc && !p->err_status)
            routes_fail(p, 400, "bad-multipart", &err);
        return p->err_status ? -1 : 0;
    }
    int rc = upload_file_write(&p->file, data, len, &err);
    if (rc)
        routes_file_fail(p, rc, &err);
    return p->err_status ? -1 : 0;
}

/* The upload's directory (and a raw body's file), then the bytes that
 * waited in memory. -1 with the refusal set. */
static int post_materialize(routes_post *p)
{
    cls_error err;
    cls_error_clear(&err);
    p->materialized = 1;
    if (job_store_incoming_new(p->cfg->store, p->id, p->dir, sizeof p->dir, &err)) {
        routes_fail(p, 500, "internal", &err);
        return -1;
    }
    if (!p->multipart) {
        enum part part = job_params_is_cg(&p->params) ? PART_MATRIX : PART_INPUT;
        if (open_part_file(p, part, p->raw_name, &err)) {
            routes_fail(p, 500, "internal", &err);
            return -1;
        }
    }
    int rc = p->pending_len ? post_feed(p, p->pending, p->pending_len) : 0;
    free(p->pending);
    p->pending = NULL;
    p->pending_len = 0;
    return rc;
}

enum MHD_Result routes_jobs_post(http_call *call)
{
    enum MHD_Result replied = MHD_YES;
    call->upload = post_begin(call->conn, call->cfg, &replied);
    return call->upload ? MHD_YES : replied;
}

enum MHD_Result routes_jobs_post_batch(http_call *call)
{
    enum MHD_Result replied = MHD_YES;
    routes_post *p = post_begin(call->conn, call->cfg, &replied);
    if (p && !p->multipart) {
        post_free(p);
        metrics_upload_rejected();
        return http_reply_problem(call->conn, 415, "bad-multipart",
                                  "a batch is a multipart/form-data body: one part 'matrix' per "
                                  "system (rhs and x0 after their matrix), 'options' for all",
                                  0);
    }
    if (p)
        p->batch = 1;
    call->upload = p;
    return p ? MHD_YES : replied;
}

uint64_t routes_jobs_post_bytes(const routes_post *p)
{
    return p->bytes;
}

void routes_jobs_post_refusal(const routes_post *p, unsigned *status, const char **slug,
                              const char **detail, long long *line)
{
    *status = p->err_status ? p->err_status : 500;
    *slug = p->err_status ? p->err_slug : "internal";
    *detail = p->err.msg;
    *line = p->err_status == 400 || p->err_status == 413 ? p->err.line : 0;
    metrics_upload_rejected();
}

enum MHD_Result routes_jobs_post_data(routes_post *p, const char *data, size_t len)
{
    p->bytes += len;
    metrics_bytes_received(len);
    if (p->err_status)
        return MHD_NO; /* refused: the rest is dropped (http_server.c) */
    cls_error err;
    cls_error_clear(&err);
    if (p->bytes > p->cfg->max_upload) {
        cls_fail(&err, CLS_EINPUT, "the upload exceeds this daemon's limit of %llu bytes",
                 (unsigned long long)p->cfg->max_upload);
        routes_fail(p, 413, "upload-too-large", &err);
        return MHD_NO;
    }
    if ((p->bytes >> 20) != ((p->bytes - len) >> 20) && /* every MiB */
        job_store_disk_admit(p->cfg->store, 0, &err)) {
        routes_fail(p, 507, "insufficient-storage", &err);
        return MHD_NO;
    }
    if (!p->materialized && p->pending_len + len <= ROUTES_PENDING_MAX) {
        if (!p->pending && !(p->pending = malloc(ROUTES_PENDING_MAX))) {
            cls_fail(&err, CLS_EOTHER, "out of memory");
            routes_fail(p, 500, "internal", &err);
            return MHD_NO;
        }
        memcpy(p->pending + p->pending_len, data, len);
        p->pending_len += len;
        return MHD_YES;
    }
    if (!p->materialized && post_materialize(p))
        return MHD_NO;
    return post_feed(p, data, len) ? MHD_NO : MHD_YES;
}

/* every upload directory of p (a batch's systems too) */
static void post_discard(routes_post *p)
{
    preparse_forget(p->file.pre_id); /* its matrix's parse is nobody's now */
    if (p->id[0])
        job_store_incoming_discard(p->cfg->store, p->id);
    for (int i = 0; i < p->nsys; i++)
        job_store_incoming_discard(p->cfg->store, p->sys[i].id);
}

void routes_jobs_post_abort(routes_post *p)
{
    if (p->file_open) {
        upload_file_abort(&p->file);
        p->file_open = 0;
    }
    post_discard(p);
    post_free(p);
}

/* A physics job's admission at POST (issue 27): its estimate from the
 * options and the stored input (physics/estimate.h) against the host, the
 * device and the data directory's room (admission.h). More than the
 * machine has: 413 job-too-large; outputs beyond the free space less
 * --disk-reserve: 507 insufficient-storage; both with the figures. A job
 * that only waits for memory to free is accepted (the scheduler holds it). */
static void physics_admit(routes_post *p)
{
    cls_error err;
    cls_error_clear(&err);
    physics_input_counts in, *inp = NULL;
    if (p->in.has_input) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", p->dir, p->in.input_file) >= (int)sizeof path ||
            physics_estimate_scan(p->params.kind, path, &in, &err))
            return; /* the run fails with the reader's own message */
        inp = &in;
    }
    physics_estimate e;
    if (physics_estimate_job(p->params.kind, p->params.options, inp, &e, &err))
        return;
    adm_machine m = {.nranks = 1, .cluster = http_cluster(p->cfg)};
    adm_memory(&m.host_total, &m.host_available);
    uint64_t room = UINT64_MAX, avail, reserve;
    if (job_store_disk_room(p->cfg->store, &room, &avail, &reserve))
        room = UINT64_MAX;
    int what;
    char why[512];
    if (adm_decide_physics(p->params.kind, &e, &m, room, &what, why, sizeof why) != ADM_NEVER)
        return;
    cls_fail(&err, CLS_EOTHER, "this job %s", why);
    if (what == ADM_NEED_DISK)
        routes_fail(p, 507, "insufficient-storage", &err);
    else
        routes_fail(p, 413, "job-too-large", &err);
}

/* The upload's refusal once its body is read: every upload directory
 * discarded, the problem answered. Frees p. */
static enum MHD_Result post_refuse(struct MHD_Connection *c, routes_post *p)
{
    metrics_upload_rejected();
    post_discard(p);
    enum MHD_Result q =
        http_reply_problem(c, p->err_status, p->err_slug, p->err.msg,
                           p->err_status == 400 || p->err_status == 413 ? p->err.line : 0);
    post_free(p);
    return q;
}

/* POST /v1/batches, the body complete and checked as one job's would be:
 * every system needs its matrix; room for all in the queue or none
 * (503); then each accepted in part order. 202 with the jobs. */
static enum MHD_Result batch_end(struct MHD_Connection *c, routes_post *p)
{
    const http_server_config *cfg = p->cfg;
    cls_error err;
    cls_error_clear(&err);
    if (!job_params_is_cg(&p->params)) {
        cls_fail(&err, CLS_EINPUT, "a batch holds cg systems, not %s jobs", p->params.kind);
        routes_fail(p, 400, "bad-parameter", &err);
    } else if (!p->in.has_matrix) {
        cls_fail(&err, CLS_EINPUT, "no matrix: a batch is one part 'matrix' per system");
        routes_fail(p, 400, "bad-request", &err);
    }
    if (!p->err_status)
        batch_push(p, &err); /* the last system */
    const int n = p->nsys;
    if (p->err_status)
        return post_refuse(c, p);
    const char **ids = malloc((size_t)n * sizeof *ids);
    job_inputs *in = malloc((size_t)n * sizeof *in);
    uint64_t *bytes = malloc((size_t)n * sizeof *bytes);
    char **json = calloc((size_t)n, sizeof *json);
    int rc = ids && in && bytes && json ? CLS_OK : cls_fail(&err, CLS_EOTHER, "out of memory");
    const double receive_s = cls_now() - p->t0;
    for (int i = 0; i < n && !rc; i++) {
        ids[i] = p->sys[i].id;
        in[i] = p->sys[i].in;
        in[i].receive_s = receive_s;
        bytes[i] = p->bytes / (uint64_t)n; /* each system's share of the body */
    }
    if (!rc)
        rc = job_store_accept_many(cfg->store, n, ids, &p->params, in, bytes, json, &err);
    else
        post_discard(p);
    json_t *jobs = json_array();
    int accepted = 0;
    for (int i = 0; json && i < n; i++) {
        accepted += json[i] != NULL;
        json_array_append_new(jobs, json[i] ? json_loads(json[i], 0, NULL) : json_null());
        free(json[i]);
    }
    for (int i = 0; i < accepted; i++)
        metrics_job_submitted();
    free(ids);
    free(in);
    free(bytes);
    free(json);
    if (!rc)
        log_event("batch_submitted",
                  json_pack("{s:i, s:I, s:o}", "systems", n, "bytes", (json_int_t)p->bytes,
                            "parameters", job_params_to_json(&p->params)));
    post_free(p);
    if (rc == JOB_STORE_FULL) {
        metrics_upload_rejected();
        json_decref(jobs);
        char d[160];
        snprintf(d, sizeof d, "the job queue has no room for %d jobs; retry later", n);
        return http_reply_problem_hdr(c, 503, "queue-full", d, 0, "Retry-After", "5");
    }
    if (rc) {
        char d[1200];
        snprintf(d, sizeof d, "%d of %d systems were queued%s: %.900s", accepted, n,
                 accepted ? " (their jobs run; GET /v1/jobs lists them)" : "", err.msg);
        json_decref(jobs);
        return http_reply_problem(c, 500, "internal", d, 0);
    }
    json_t *o = json_pack("{s:i, s:o}", "count", n, "jobs", jobs);
    char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(o);
    return http_reply_hdr(c, 202, "application/json", text, text ? strlen(text) : 0, NULL, NULL);
}

enum MHD_Result routes_jobs_post_end(struct MHD_Connection *c, routes_post *p)
{
    const http_server_config *cfg = p->cfg;
    cls_error err;
    cls_error_clear(&err);
    if (!p->err_status && !p->materialized)
        post_materialize(p);
    if (!p->err_status) {
        if (p->multipart) {
            int rc = multipart_finish(p->mp, &err);
            if (rc)
                routes_fail(p, 400, "bad-multipart", &err);
        } else if (p->file_open) {
            p->file_open = 0;
            int rc = upload_file_close(&p->file, &err);
            if (rc) {
                upload_file_abort(&p->file);
                routes_file_fail(p, rc, &err);
            } else if (p->file_part == PART_MATRIX) {
                p->in.matrix_text_bytes = (int64_t)p->file.text_bytes;
            }
        }
    }
    if (!p->err_status && job_params_finish(&p->params, &err))
        routes_fail(p, 400, "bad-parameter", &err);
    /* every file a job reads is uploaded: no option may name one on this
     * host (job_files.h) */
    if (!p->err_status && job_files_check(p->params.kind, p->params.options, &err))
        routes_fail(p, 400, "bad-parameter", &err);
    if (!p->err_status && job_params_is_cg(&p->params) && !p->in.has_matrix) {
        cls_fail(&err, CLS_EINPUT, "no matrix: send it as the body or as the part 'matrix'");
        routes_fail(p, 400, "bad-request", &err);
    }
    if (!p->err_status && !job_params_is_cg(&p->params) &&
        (p->in.has_matrix || p->in.has_rhs || p->in.has_x0)) {
        cls_fail(&err, CLS_EINPUT, "a %s job takes its file in the part 'input' (or 'mesh')",
                 p->params.kind);
        routes_fail(p, 400, "bad-request", &err);
    }
    if (!p->err_status && !job_params_is_cg(&p->params) && p->in.has_input && p->file.bytes == 0 &&
        !p->multipart) {
        /* a physics job with an empty raw body: no input file */
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", p->dir, p->in.input_file) < (int)sizeof path)
            unlink(path);
        p->in.has_input = 0;
    }
    if (!p->err_status && !job_params_is_cg(&p->params))
        physics_admit(p);
    if (!p->err_status && p->batch)
        return batch_end(c, p);
    if (p->err_status)
        return post_refuse(c, p);
    char *json = NULL;
    p->in.receive_s = cls_now() - p->t0;
    int rc = job_store_accept(cfg->store, p->id, &p->params, &p->in, p->bytes, &json, &err);
    if (rc == JOB_STORE_FULL) {
        metrics_upload_rejected();
        post_free(p);
        return http_reply_problem_hdr(c, 503, "queue-full", "the job queue is full; retry later", 0,
                                      "Retry-After", "5");
    }
    if (rc) {
        post_free(p);
        return http_reply_problem(c, 500, "internal", err.msg, 0);
    }
    metrics_job_submitted();
    log_event("job_submitted", json_pack("{s:s, s:s, s:I, s:s, s:o}", "job", p->id, "kind",
                                         p->params.kind, "bytes", (json_int_t)p->bytes, "input",
                                         p->in.has_matrix  ? p->in.matrix_name
                                         : p->in.has_input ? p->in.input_name
                                                           : "",
                                         "parameters", job_params_to_json(&p->params)));
    char loc[64];
    snprintf(loc, sizeof loc, "/v1/jobs/%s", p->id);
    post_free(p);
    return http_reply_hdr(c, 202, "application/json", json, json ? strlen(json) : 0, "Location",
                          loc);
}

/* --- reading routes --- */

static int param_int(struct MHD_Connection *c, const char *name, long long lo, long long hi,
                     long long def, long long *out, enum MHD_Result *replied)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
    *out = def;
    if (!v)
        return 1;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) {
        char d[160];
        snprintf(d, sizeof d, "%s: '%.32s' is not an integer between %lld and %lld", name, v, lo,
                 hi);
        *replied = http_reply_problem(c, 400, "bad-parameter", d, 0);
        return 0;
    }
    *out = x;
    return 1;
}

enum MHD_Result routes_jobs_list(http_call *call)
{
    struct MHD_Connection *c = call->conn;
    const http_server_config *cfg = call->cfg;
    enum MHD_Result q = MHD_NO;
    long long limit, page;
    if (!param_int(c, "limit", 1, 1000, 50, &limit, &q) ||
        !param_int(c, "page", 1, 1000000000LL, 0, &page, &q))
        return q;
    const char *after = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after");
    const char *status = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "status");
    if (after && !ids_valid(after))
        return http_reply_problem(c, 400, "bad-parameter",
                                  "after: not a job id (32 hexadecimal digits)", 0);
    char *json = NULL;
    cls_error err;
    cls_error_clear(&err);
    int rc = job_store_list_json(cfg->store, (int)limit, after, (int)page, status, &json, &err);
    if (rc)
        return http_reply_problem(c, rc == CLS_EINPUT ? 400 : 500,
                                  rc == CLS_EINPUT ? "bad-parameter" : "internal", err.msg, 0);
    return http_reply_json(c, 200, json);
}

/* ?wait=S (job_wait.h): the parse and the parking that GET /v1/jobs/ID and
 * its solution share. The request is parked by the dispatcher when the
 * job is not final and S > 0, and the handler runs again (call->resumed)
 * when it ends or S seconds passed. */
int routes_wait(http_call *call, enum MHD_Result *reply)
{
    struct MHD_Connection *c = call->conn;
    const char *w = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait");
    if (!w || call->resumed)
        return 0;
    char *end;
    errno = 0;
    double s = strtod(w, &end);
    if (end == w || *end || errno || !(s >= 0 && s <= JOB_WAIT_MAX_S)) {
        char d[160];
        snprintf(d, sizeof d, "wait: '%.32s' is not a number of seconds from 0 to %g", w,
                 JOB_WAIT_MAX_S);
        *reply = http_reply_problem(c, 400, "bad-parameter", d, 0);
        return 1;
    }
    char dir[PATH_MAX];
    job_status st;
    if (job_store_job_dir(call->cfg->store, call->id, dir, sizeof dir, &st)) {
        *reply = http_reply_unknown_job(c, call->id);
        return 1;
    }
    if (s > 0 && !job_status_final(st)) {
        call->wait_s = s;
        *reply = MHD_YES;
        return 1;
    }
    return 0;
}

/* ?wait=S: a long poll. Answered at once when the job is final or S is 0;
 * else when it ends or S seconds passed (routes_wait). */
enum MHD_Result routes_jobs_get(http_call *call)
{
    struct MHD_Connection *c = call->conn;
    char *json;
    enum MHD_Result reply;
    if (routes_wait(call, &reply))
        return reply;
    if (job_store_get_json(call->cfg->store, call->id, &json))
        return http_reply_unknown_job(c, call->id);
    return http_reply_json(c, 200, json);
}

/* 409 naming the job's state: a cancel of a finished job, a DELETE of an
 * active one. The state is also a member (job_status) for programs. */
static enum MHD_Result job_conflict(struct MHD_Connection *c, const char *slug, job_status st,
                                    const char *detail)
{
    char *body = problem_json_ext(409, slug, detail, 0,
                                  json_pack("{s:s}", "job_status", job_status_name(st)));
    if (!body)
        return MHD_NO;
    return http_reply(c, 409, "application/problem+json", body, strlen(body));
}

enum MHD_Result routes_jobs_cancel(http_call *call)
{
    struct MHD_Connection *c = call->conn;
    const http_server_config *cfg = call->cfg;
    const char *id = call->id;
    job_cancel_outcome out;
    job_status st;
    char *json = NULL;
    cls_error err;
    cls_error_clear(&err);
    int rc = job_store_cancel(cfg->store, id, &out, &st, &json, &err);
    if (rc < 0)
        return http_reply_unknown_job(c, id);
    if (rc > 0) {
        free(json);
        return http_reply_problem(c, 500, "internal", err.msg, 0);
    }
    if (out == JOB_CANCEL_FINISHED) {
        free(json);
        char d[160];
        snprintf(d, sizeof d,
                 "job %s already %s: there is nothing to cancel (its results are kept)", id,
                 job_status_name(st));
        return job_conflict(c, "job-finished", st, d);
    }
    log_event(
        out == JOB_CANCEL_DONE ? "job_cancelled" : "job_cancel_requested",
        json_pack("{s:s, s:s}", "job", id, "was", out == JOB_CANCEL_DONE ? "queued" : "running"));
    return http_reply_json(c, 202, json);
}

enum MHD_Result routes_jobs_delete(http_call *call)
{
    struct MHD_Connection *c = call->conn;
    const http_server_config *cfg = call->cfg;
    const char *id = call->id;
    job_status st;
    cls_error err;
    cls_error_clear(&err);
    int rc = job_store_remove(cfg->store, id, &st, &err);
    if (rc < 0)
        return http_reply_unknown_job(c, id);
    if (rc == JOB_REMOVE_FAILED) /* the store could not remove it (or all of its files) */
        return http_reply_problem(c, 500, "internal", err.msg, 0);
    if (rc > 0) {
        char d[200];
        snprintf(d, sizeof d,
                 "job %s is %s: only a finished job can be deleted; cancel it first "
                 "(POST /v1/jobs/%s/cancel)",
                 id, job_status_name(st), id);
        return job_conflict(c, "job-active", st, d);
    }
    log_event("job_deleted", json_pack("{s:s, s:s}", "job", id, "was", job_status_name(st)));
    return http_reply(c, 204, NULL, NULL, 0);
}

/* POST and DELETE of .../pin: one write, pin 1 or 0. */
static enum MHD_Result routes_jobs_pin_set(http_call *call, int pin)
{
    struct MHD_Connection *c = call->conn;
    const http_server_config *cfg = call->cfg;
    const char *id = call->id;
    char *json = NULL;
    cls_error err;
    cls_error_clear(&err);
    int rc = job_store_pin(cfg->store, id, pin, &json, &err);
    if (rc < 0)
        return http_reply_unknown_job(c, id);
    if (rc > 0) {
        free(json);
        return http_reply_problem(c, 500, "internal", err.msg, 0);
    }
    log_event(pin ? "job_pinned" : "job_unpinned", json_pack("{s:s}", "job", id));
    return http_reply_json(c, 200, json);
}

enum MHD_Result routes_jobs_pin(http_call *call)
{
    return routes_jobs_pin_set(call, 1);
}

enum MHD_Result routes_jobs_unpin(http_call *call)
{
    return routes_jobs_pin_set(call, 0);
}

enum MHD_Result routes_jobs_residuals(http_call *call)
{
    struct MHD_Connection *c = call->conn;
    const http_server_config *cfg = call->cfg;
    const char *id = call->id;
    enum MHD_Result q = MHD_NO;
    long long since;
    if (!param_int(c, "since", 0, INT64_MAX / 2, 0, &since, &q))
        return q;
    char *json;
    if (job_store_residuals_json(cfg->store, id, since, &json))
        return http_reply_unknown_job(c, id);
    return http_reply_json(c, 200, json);
}

static int routes_files_cmp(const void *a, const void *b)
{
    return job_files_natural_cmp(*(char *const *)a, *(char *const *)b);
}

/* The listing is in natural order (job_files_natural_cmp): readdir's order
 * is the file system's hash order (frames 50, 0, 200, 150, 100), and a
 * client that plays the frames, or a person reading the list, wants them
 * by step. */
enum MHD_Result routes_jobs_files(http_call *call)
{
    struct MHD_Connection *c = call->conn;
    const http_server_config *cfg = call->cfg;
    const char *id = call->id, *name = call->name;
    char dir[PATH_MAX], out[PATH_MAX + 8];
    job_status st;
    if (job_store_job_dir(cfg->store, id, dir, sizeof dir, &st))
        return http_reply_unknown_job(c, id);
    snprintf(out, sizeof out, "%s/out", dir);
    DIR *d = opendir(out);
    char **names = NULL;
    size_t n = 0, cap = 0;
    int oom = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            if (n == cap) {
                size_t nc = cap ? 2 * cap : 64;
                char **nn = realloc(names, nc * sizeof *names);
                if (!nn) {
                    oom = 1;
                    break;
                }
                names = nn;
                cap = nc;
            }
            if (!(names[n] = strdup(e->d_name))) {
                oom = 1;
                break;
            }
            n++;
        }
        closedir(d);
    }
    if (oom) {
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return http_reply_problem(c, 500, "internal", "out of memory listing the job's files", 0);
    }
    if (n > 1)
        qsort(names, n, sizeof *names, routes_files_cmp);
    json_t *list = json_array();
    char found[256] = "";
    for (size_t i = 0; i < n; i++) {
        char p[PATH_MAX + 300];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", out, names[i]);
        if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
            /* the path below is built from the directory entry, matched
             * against the request, never from the request itself */
            if (name && !strcmp(name, names[i]) && strlen(names[i]) < sizeof found)
                snprintf(found, sizeof found, "%s", names[i]);
            char link[400];
            snprintf(link, sizeof link, "/v1/jobs/%s/files/%s", id, names[i]);
            json_t *f = json_pack("{s:s, s:I, s:s}", "name", names[i], "bytes",
                                  (json_int_t)sb.st_size, "href", link);
            if (f)
                json_array_append_new(list, f);
        }
        free(names[i]);
    }
    free(names);
    if (!name) {
        json_t *o =
            json_pack("{s:s, s:s, s:o}", "id", id, "status", job_status_name(st), "files", list);
        char *s = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        return http_reply_json(c, 200, s);
    }
    json_decref(list);
    if (!found[0])
        return http_reply_problem(c, 404, "not-found", "the job has no output file of that name",
                                  0);
    char p[PATH_MAX + 300];
    snprintf(p, sizeof p, "%s/%s", out, found);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        if (fd >= 0)
            close(fd);
        return http_reply_problem(c, 404, "not-found", "the output file is gone", 0);
    }
    struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)sb.st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/octet-stream");
    enum MHD_Result q = http_queue(c, 200, r);
    /* an output file downloaded is the fetch that frees a keep=until-fetched
     * job for retention (as the solution's, routes_solution.c) */
    if (q == MHD_YES && job_store_mark_fetched(cfg->store, id))
        job_store_retention(cfg->store);
    return q;
}
