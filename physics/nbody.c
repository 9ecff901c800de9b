/*
 * nbody.c: the N-body host driver (model in nbody.h, kernel in
 * kernels/nbody.cl).
 *
 * Device state: positions+mass and velocities as float4, two of each; a
 * step reads one pair and writes the other (every body reads every
 * position), then the roles swap. The tile (work-group) size is a build
 * option; with tile 0 the driver builds the kernel for each power of two
 * from 64 to 1024 the device takes (work-group limit, local memory), times
 * one step of min(n, 32768) bodies with profiling events (best of two after
 * a warm-up) and keeps the fastest. The sweep is cheap (a few steps) and the
 * programs land in the binary cache.
 *
 * Reported: interactions per second n^2 steps / kernel time, GFLOP/s at 20
 * flops per interaction (Nyland's count), and the total momentum drift
 * |P_end - P_start| / sum_i m_i |v_i| (pairwise forces cancel exactly in
 * exact arithmetic, so with damping 1 the drift measures float rounding).
 */
#include "nbody.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "job.h"

void nbody_init(nbody_system *s)
{
    memset(s, 0, sizeof *s);
}

void nbody_free(nbody_system *s)
{
    free(s->x);
    free(s->v);
    free(s->m);
    nbody_init(s);
}

static int nbody_oom(cls_error *err)
{
    return cls_fail(err, CLS_EOTHER, "nbody: out of memory");
}

static int nbody_alloc(nbody_system *s, int64_t n, cls_error *err)
{
    nbody_init(s);
    if (n < 0 || n > INT32_MAX)
        return cls_fail(err, CLS_EUSAGE, "%lld bodies is outside [1, %d]", (long long)n,
                        INT32_MAX);
    size_t c = (size_t)(n ? n : 1);
    s->x = malloc(3 * c * sizeof *s->x);
    s->v = malloc(3 * c * sizeof *s->v);
    s->m = malloc(c * sizeof *s->m);
    if (!s->x || !s->v || !s->m) {
        nbody_free(s);
        return nbody_oom(err);
    }
    s->n = n;
    return CLS_OK;
}

/* splitmix64: a seedable generator independent of the C library */
static uint64_t nbody_rng(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double nbody_uniform(uint64_t *st) /* [0, 1) */
{
    return (double)(nbody_rng(st) >> 11) * (1.0 / 9007199254740992.0);
}

int nbody_random(nbody_system *s, int64_t n, uint64_t seed, cls_error *err)
{
    if (n < 1)
        return cls_fail(err, CLS_EUSAGE, "--random needs at least 1 body");
    int rc = nbody_alloc(s, n, err);
    if (rc)
        return rc;
    uint64_t st = seed;
    for (int64_t i = 0; i < n; i++) {
        double p[3], r2;
        do {
            for (int c = 0; c < 3; c++)
                p[c] = 2.0 * nbody_uniform(&st) - 1.0;
            r2 = p[0] * p[0] + p[1] * p[1] + p[2] * p[2];
        } while (r2 > 1.0);
        for (int c = 0; c < 3; c++) {
            s->x[3 * i + c] = p[c];
            s->v[3 * i + c] = 0.1 * nbody_uniform(&st) - 0.05;
        }
        s->m[i] = (0.5 + nbody_uniform(&st)) / (double)n;
    }
    return CLS_OK;
}

/* ---- CSV ------------------------------------------------------------------- */

static const char *const nbody_cols[7] = {"x", "y", "z", "vx", "vy", "vz", "m"};

/* Splits s at commas into at most 8 trimmed fields, in place. */
static int nbody_fields(char *s, char **f)
{
    int n = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (n == 8)
            return 9;
        f[n++] = s;
        char *c = strchr(s, ',');
        char *end = c ? c : s + strlen(s);
        char *t = end;
        while (t > s && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r'))
            t--;
        *t = '\0';
        if (!c)
            return n;
        s = c + 1;
    }
}

int nbody_read_csv_buf(const char *buf, size_t len, const char *name, nbody_system *s,
                       cls_error *err)
{
    nbody_init(s);
    if (!name)
        name = "(bodies)";
    int64_t cap = 0, n = 0;
    char *line = NULL;
    size_t line_cap = 0, pos = 0;
    long long lineno = 0;
    int seen_data = 0, rc = CLS_OK;
    while (pos < len) {
        const char *p = buf + pos;
        const char *nl = memchr(p, '\n', len - pos);
        size_t L = nl ? (size_t)(nl - p) : len - pos;
        pos += L + (nl ? 1 : 0);
        lineno++;
        if (memchr(p, '\0', L)) {
            rc = cls_fail_line(err, CLS_EINPUT, lineno, "%s:%lld: NUL byte in a text file", name,
                               lineno);
            break;
        }
        if (L + 1 > line_cap) {
            size_t nc = line_cap ? line_cap : 256;
            while (nc < L + 1)
                nc *= 2;
            char *q = realloc(line, nc);
            if (!q) {
                rc = nbody_oom(err);
                break;
            }
            line = q;
            line_cap = nc;
        }
        memcpy(line, p, L);
        line[L] = '\0';
        char *h = strchr(line, '#');
        if (h)
            *h = '\0';
        char *t = line;
        while (*t && isspace((unsigned char)*t))
            t++;
        if (!*t)
            continue;
        char *f[9];
        int nf = nbody_fields(t, f);
        char *endp;
        if (!seen_data && isalpha((unsigned char)f[0][0]) && (strtod(f[0], &endp), endp == f[0])) {
            /* the header: exactly the seven names */
            if (nf != 7) {
                rc = cls_fail_line(err, CLS_EINPUT, lineno,
                                   "%s:%lld: header has %d columns, expected x,y,z,vx,vy,vz,m",
                                   name, lineno, nf > 8 ? 9 : nf);
                break;
            }
            for (int c = 0; c < 7; c++)
                if (strcmp(f[c], nbody_cols[c])) {
                    rc = cls_fail_line(err, CLS_EINPUT, lineno,
                                       "%s:%lld: header column %d is '%s', expected '%s' "
                                       "(columns x,y,z,vx,vy,vz,m)", name, lineno, c + 1, f[c],
                                       nbody_cols[c]);
                    break;
                }
            if (rc)
                break;
            seen_data = 1;
            continue;
        }
        seen_data = 1;
        if (nf != 7) {
            rc = cls_fail_line(err, CLS_EINPUT, lineno,
                               "%s:%lld: expected 7 comma-separated values (x,y,z,vx,vy,vz,m), "
                               "got %s%d", name, lineno, nf > 8 ? "more than " : "",
                               nf > 8 ? 8 : nf);
            break;
        }
        double val[7];
        for (int c = 0; c < 7 && !rc; c++) {
            char *end;
            errno = 0;
            val[c] = strtod(f[c], &end);
            if (end == f[c] || *end)
                rc = cls_fail_line(err, CLS_EINPUT, lineno, "%s:%lld: %s: '%s' is not a number",
                                   name, lineno, nbody_cols[c], f[c]);
            else if (!isfinite(val[c]))
                rc = cls_fail_line(err, CLS_EINPUT, lineno,
                                   "%s:%lld: %s: '%s' is not a finite number", name, lineno,
                                   nbody_cols[c], f[c]);
        }
        if (rc)
            break;
        if (val[6] < 0.0) {
            rc = cls_fail_line(err, CLS_EINPUT, lineno, "%s:%lld: mass %g is negative", name,
                               lineno, val[6]);
            break;
        }
        if (n == INT32_MAX) {
            rc = cls_fail_line(err, CLS_EINPUT, lineno, "%s:%lld: more than %d bodies", name,
                               lineno, INT32_MAX);
            break;
        }
        if (n == cap) {
            int64_t nc = cap ? 2 * cap : 1024;
            double *x = realloc(s->x, 3 * (size_t)nc * sizeof *x);
            if (x)
                s->x = x;
            double *v = realloc(s->v, 3 * (size_t)nc * sizeof *v);
            if (v)
                s->v = v;
            double *m = realloc(s->m, (size_t)nc * sizeof *m);
            if (m)
                s->m = m;
            if (!x || !v || !m) {
                rc = nbody_oom(err);
                break;
            }
            cap = nc;
        }
        for (int c = 0; c < 3; c++) {
            s->x[3 * n + c] = val[c];
            s->v[3 * n + c] = val[3 + c];
        }
        s->m[n] = val[6];
        n++;
    }
    free(line);
    if (!rc && n == 0)
        rc = cls_fail_line(err, CLS_EINPUT, lineno ? lineno : 1, "%s:%lld: no bodies", name,
                           lineno ? lineno : 1);
    if (rc) {
        nbody_free(s);
        return rc;
    }
    s->n = n;
    return CLS_OK;
}

int nbody_read_csv(const char *path, nbody_system *s, cls_error *err)
{
    nbody_init(s);
    FILE *f = fopen(path, "rb");
    if (!f)
        return cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t nc = cap ? 2 * cap : 1 << 16;
            char *q = realloc(buf, nc);
            if (!q) {
                free(buf);
                fclose(f);
                return nbody_oom(err);
            }
            buf = q;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (!got)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return cls_fail(err, CLS_EOTHER, "%s: read error", path);
    }
    int rc = nbody_read_csv_buf(buf, len, path, s, err);
    free(buf);
    return rc;
}

int nbody_write_csv(const char *path, const nbody_system *s, cls_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return cls_fail(err, CLS_EOTHER, "%s: cannot create: %s", path, strerror(errno));
    fputs("x,y,z,vx,vy,vz,m\n", f);
    for (int64_t i = 0; i < s->n; i++)
        fprintf(f, "%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", s->x[3 * i], s->x[3 * i + 1],
                s->x[3 * i + 2], s->v[3 * i], s->v[3 * i + 1], s->v[3 * i + 2], s->m[i]);
    int bad = ferror(f);
    if (fclose(f) || bad)
        return cls_fail(err, CLS_EOTHER, "%s: write error", path);
    return CLS_OK;
}

/* ---- CPU reference ------------------------------------------------------- */

void nbody_accel_ref_one(const nbody_system *s, double eps, int64_t i, double a[3])
{
    double e2 = eps * eps, ax = 0, ay = 0, az = 0;
    const double *xi = s->x + 3 * i;
    for (int64_t j = 0; j < s->n; j++) {
        double rx = s->x[3 * j] - xi[0], ry = s->x[3 * j + 1] - xi[1],
               rz = s->x[3 * j + 2] - xi[2];
        double d2 = rx * rx + ry * ry + rz * rz + e2;
        double inv = 1.0 / sqrt(d2);
        double f = s->m[j] * inv * inv * inv;
        ax += rx * f;
        ay += ry * f;
        az += rz * f;
    }
    a[0] = ax;
    a[1] = ay;
    a[2] = az;
}

void nbody_accel_ref(const nbody_system *s, double eps, double *acc)
{
    for (int64_t i = 0; i < s->n; i++)
        nbody_accel_ref_one(s, eps, i, acc + 3 * i);
}

void nbody_step_ref(nbody_system *s, double dt, double eps, double damping)
{
    double *a = malloc(3 * (size_t)(s->n ? s->n : 1) * sizeof *a);
    if (!a)
        return;
    nbody_accel_ref(s, eps, a);
    for (int64_t i = 0; i < 3 * s->n; i++) {
        s->v[i] = (s->v[i] + a[i] * dt) * damping;
        s->x[i] += s->v[i] * dt;
    }
    free(a);
}

void nbody_momentum(const nbody_system *s, double p[3])
{
    p[0] = p[1] = p[2] = 0.0;
    for (int64_t i = 0; i < s->n; i++)
        for (int c = 0; c < 3; c++)
            p[c] += s->m[i] * s->v[3 * i + c];
}

/* ---- device ---------------------------------------------------------------- */

struct nbody_gpu {
    ocl_ctx *ctx;
    cl_program prog;
    cl_kernel k;
    cl_mem pos[2], vel[2], acc;
    int cur;
    int n;
    size_t tile;
};

size_t nbody_gpu_tile(const nbody_gpu *g)
{
    return g->tile;
}

void nbody_gpu_free(nbody_gpu *g)
{
    if (!g)
        return;
    if (g->k)
        clReleaseKernel(g->k);
    if (g->prog)
        clReleaseProgram(g->prog);
    cl_mem ms[] = {g->pos[0], g->pos[1], g->vel[0], g->vel[1], g->acc};
    for (size_t i = 0; i < 5; i++)
        if (ms[i])
            clReleaseMemObject(ms[i]);
    free(g);
}

static int nbody_build(ocl_ctx *ctx, size_t tile, cl_program *prog, cl_kernel *k,
                       cls_error *err)
{
    char opts[96];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DTILE=%zu", tile);
    const char *src[] = {"nbody.cl"};
    int rc = ocl_build_program(ctx, src, 1, opts, prog, err);
    if (rc)
        return rc;
    rc = ocl_create_kernel(*prog, "nbody_step", k, err);
    if (rc) {
        clReleaseProgram(*prog);
        *prog = NULL;
        return rc;
    }
    size_t kmax = 0;
    cl_int st = clGetKernelWorkGroupInfo(*k, ctx->dev.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax,
                                         &kmax, NULL);
    if (st != CL_SUCCESS || kmax < tile) {
        clReleaseKernel(*k);
        clReleaseProgram(*prog);
        *k = NULL;
        *prog = NULL;
        return cls_fail(err, CLS_EOTHER, "nbody: tile %zu exceeds the kernel's work-group limit",
                        tile);
    }
    return CLS_OK;
}

/* Enqueues one step from buffer pair `from` into the other; optional event. */
static int nbody_enqueue(nbody_gpu *g, cl_kernel k, size_t tile, int n, int from, float eps2,
                         float dt, float damping, int write_acc, cl_event *ev, cls_error *err)
{
    int to = 1 - from;
    cl_int ni = n, wa = write_acc;
    cl_int st = CL_SUCCESS;
    st |= clSetKernelArg(k, 0, sizeof(cl_mem), &g->pos[from]);
    st |= clSetKernelArg(k, 1, sizeof(cl_mem), &g->vel[from]);
    st |= clSetKernelArg(k, 2, sizeof(cl_mem), &g->pos[to]);
    st |= clSetKernelArg(k, 3, sizeof(cl_mem), &g->vel[to]);
    st |= clSetKernelArg(k, 4, sizeof(cl_mem), &g->acc);
    st |= clSetKernelArg(k, 5, sizeof ni, &ni);
    st |= clSetKernelArg(k, 6, sizeof eps2, &eps2);
    st |= clSetKernelArg(k, 7, sizeof dt, &dt);
    st |= clSetKernelArg(k, 8, sizeof damping, &damping);
    st |= clSetKernelArg(k, 9, sizeof wa, &wa);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clSetKernelArg(nbody_step) failed");
    size_t global = ((size_t)n + tile - 1) / tile * tile;
    if (global == 0)
        global = tile;
    st = clEnqueueNDRangeKernel(g->ctx->queue, k, 1, NULL, &global, &tile, 0, NULL, ev);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER,
                        "clEnqueueNDRangeKernel(nbody_step, %zu, tile %zu) failed: %s (%d)",
                        global, tile, ocl_errstr(st), (int)st);
    return CLS_OK;
}

/* Times one step of m bodies with this tile: best of two after a warm-up. */
static int nbody_time_tile(nbody_gpu *g, cl_kernel k, size_t tile, int m, double *best,
                           cls_error *err)
{
    *best = INFINITY;
    for (int rep = 0; rep < 3; rep++) {
        cl_event ev = NULL;
        int rc = nbody_enqueue(g, k, tile, m, g->cur, 1e-4f, 0.0f, 1.0f, 0, &ev, err);
        if (rc)
            return rc;
        double t = ocl_event_seconds(ev);
        clReleaseEvent(ev);
        if (t < 0)
            return cls_fail(err, CLS_EOTHER, "nbody: profiling the tile sweep failed");
        if (rep > 0 && t < *best)
            *best = t;
    }
    return CLS_OK;
}

int nbody_gpu_create(ocl_ctx *ctx, const nbody_system *s, int tile, nbody_gpu **out,
                     cls_error *err)
{
    *out = NULL;
    if (s->n < 1 || s->n > INT32_MAX)
        return cls_fail(err, CLS_EUSAGE, "%lld bodies", (long long)s->n);
    nbody_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return nbody_oom(err);
    g->ctx = ctx;
    g->n = (int)s->n;
    size_t n = (size_t)s->n;
    float *pos = malloc(4 * n * sizeof *pos), *vel = malloc(4 * n * sizeof *vel);
    int rc = CLS_OK;
    if (!pos || !vel) {
        rc = nbody_oom(err);
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < 3; c++) {
            pos[4 * i + c] = (float)s->x[3 * i + c];
            vel[4 * i + c] = (float)s->v[3 * i + c];
        }
        pos[4 * i + 3] = (float)s->m[i];
        vel[4 * i + 3] = 0.0f;
    }
    cl_int st;
    for (int b = 0; b < 2; b++) {
        g->pos[b] = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                   16 * n, pos, &st);
        if (st == CL_SUCCESS)
            g->vel[b] = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                       16 * n, vel, &st);
        if (st != CL_SUCCESS)
            break;
    }
    if (st == CL_SUCCESS)
        g->acc = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, 16 * n, NULL, &st);
    free(pos);
    free(vel);
    pos = vel = NULL;
    if (st != CL_SUCCESS) {
        rc = cls_fail(err, CLS_EOTHER, "clCreateBuffer(nbody, %zu bytes) failed: %s (%d)",
                      16 * n, ocl_errstr(st), (int)st);
        goto fail;
    }
    if (tile > 0) {
        g->tile = (size_t)tile;
        if ((rc = nbody_build(ctx, g->tile, &g->prog, &g->k, err)))
            goto fail;
    } else {
        int m = g->n < 32768 ? g->n : 32768;
        double best_t = INFINITY;
        for (size_t t = 64; t <= 1024; t *= 2) {
            if (t > ctx->dev.max_work_group || 16 * t > ctx->dev.local_mem)
                break;
            cl_program p = NULL;
            cl_kernel k = NULL;
            cls_error e2;
            if (nbody_build(ctx, t, &p, &k, &e2))
                continue; /* this tile does not fit the kernel: skip it */
            double tt;
            rc = nbody_time_tile(g, k, t, m, &tt, err);
            if (rc) {
                clReleaseKernel(k);
                clReleaseProgram(p);
                goto fail;
            }
            if (tt < best_t) {
                best_t = tt;
                if (g->k) {
                    clReleaseKernel(g->k);
                    clReleaseProgram(g->prog);
                }
                g->k = k;
                g->prog = p;
                g->tile = t;
            } else {
                clReleaseKernel(k);
                clReleaseProgram(p);
            }
        }
        if (!g->k) {
            rc = cls_fail(err, CLS_EOTHER, "nbody: no tile size from 64 to 1024 fits this device");
            goto fail;
        }
    }
    *out = g;
    return CLS_OK;
fail:
    free(pos);
    free(vel);
    nbody_gpu_free(g);
    return rc;
}

int nbody_gpu_accel(nbody_gpu *g, double eps, float *acc, cls_error *err)
{
    int rc = nbody_enqueue(g, g->k, g->tile, g->n, g->cur, (float)(eps * eps), 0.0f, 1.0f, 1,
                           NULL, err);
    if (rc)
        return rc;
    cl_int st = clEnqueueReadBuffer(g->ctx->queue, g->acc, CL_TRUE, 0, 16 * (size_t)g->n, acc,
                                    0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(nbody accelerations)");
    return CLS_OK;
}

int nbody_gpu_run(nbody_gpu *g, int64_t steps, double dt, double eps, double damping,
                  double *kernel_s, cls_error *err)
{
    double total = 0.0;
    for (int64_t s = 0; s < steps; s++) {
        cl_event ev = NULL;
        int rc = nbody_enqueue(g, g->k, g->tile, g->n, g->cur, (float)(eps * eps), (float)dt,
                               (float)damping, 0, &ev, err);
        if (rc)
            return rc;
        g->cur = 1 - g->cur;
        /* waiting on each step's event costs a little host latency, not
         * device time: the kernel is long next to it for any n worth timing */
        double t = ocl_event_seconds(ev);
        clReleaseEvent(ev);
        if (t < 0)
            return cls_fail(err, CLS_EOTHER, "nbody: step %lld failed on the device",
                            (long long)s);
        total += t;
    }
    if (kernel_s)
        *kernel_s = total;
    return CLS_OK;
}

int nbody_gpu_download(nbody_gpu *g, nbody_system *s, cls_error *err)
{
    size_t n = (size_t)g->n;
    float *pos = malloc(16 * n), *vel = malloc(16 * n);
    if (!pos || !vel) {
        free(pos);
        free(vel);
        return nbody_oom(err);
    }
    cl_int st = clEnqueueReadBuffer(g->ctx->queue, g->pos[g->cur], CL_TRUE, 0, 16 * n, pos, 0,
                                    NULL, NULL);
    if (st == CL_SUCCESS)
        st = clEnqueueReadBuffer(g->ctx->queue, g->vel[g->cur], CL_TRUE, 0, 16 * n, vel, 0,
                                 NULL, NULL);
    if (st == CL_SUCCESS)
        for (size_t i = 0; i < n && (int64_t)i < s->n; i++)
            for (int c = 0; c < 3; c++) {
                s->x[3 * i + c] = pos[4 * i + c];
                s->v[3 * i + c] = vel[4 * i + c];
            }
    free(pos);
    free(vel);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(nbody state)");
    return CLS_OK;
}

/* ---- the whole job --------------------------------------------------------- */

void nbody_options_default(nbody_options *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->steps = 10;
    o->dt = 1e-3;
    o->softening = 1e-2;
    o->damping = 1.0;
    o->check = 1;
    o->device = "auto";
}

static int nbody_check_options(const nbody_options *o, cls_error *err)
{
    if (!o->bodies_path && o->random_n < 1)
        return cls_fail(err, CLS_EUSAGE, "give --bodies FILE or --random N");
    if (o->bodies_path && o->random_n)
        return cls_fail(err, CLS_EUSAGE, "give --bodies or --random, not both");
    if (o->random_n > INT32_MAX)
        return cls_fail(err, CLS_EUSAGE, "at most %d bodies", INT32_MAX);
    if (o->steps < 0)
        return cls_fail(err, CLS_EUSAGE, "steps must be >= 0");
    if (!isfinite(o->dt) || o->dt < 0)
        return cls_fail(err, CLS_EUSAGE, "dt must be finite and >= 0");
    if (!(o->softening > 0) || !isfinite(o->softening))
        return cls_fail(err, CLS_EUSAGE, "softening must be > 0 (it keeps the "
                        "self-interaction and close encounters finite)");
    if (!(o->damping >= 0 && o->damping <= 1))
        return cls_fail(err, CLS_EUSAGE, "damping must be in [0, 1]");
    if (o->tile != 0 && (o->tile < 1 || o->tile > 1024 || (o->tile & (o->tile - 1))))
        return cls_fail(err, CLS_EUSAGE, "tile must be a power of two up to 1024");
    return CLS_OK;
}

int nbody_run(const nbody_options *o, nbody_report *r, cls_error *err)
{
    memset(r, 0, sizeof *r);
    r->accel_rel_error = NAN;
    r->momentum_drift = NAN;
    int rc = nbody_check_options(o, err);
    if (rc)
        return rc;
    nbody_system s;
    nbody_init(&s);
    rc = o->bodies_path ? nbody_read_csv(o->bodies_path, &s, err)
                        : nbody_random(&s, o->random_n, o->seed, err);
    if (rc)
        return rc;
    ocl_ctx ctx;
    int have_ctx = 0;
    nbody_gpu *g = NULL;
    float *acc = NULL;
    r->bodies = s.n;
    r->steps = o->steps;
    if ((rc = ocl_pick_device(o->device ? o->device : "auto", &r->device, err)))
        goto done;
    if ((rc = ocl_ctx_create(&r->device, &ctx, err)))
        goto done;
    have_ctx = 1;
    if ((rc = nbody_gpu_create(&ctx, &s, o->tile, &g, err)))
        goto done;
    r->tile = nbody_gpu_tile(g);
    if (o->check) {
        /* up to 256 bodies spread over the index range against the double sum */
        acc = malloc(16 * (size_t)s.n);
        if (!acc) {
            rc = nbody_oom(err);
            goto done;
        }
        if ((rc = nbody_gpu_accel(g, o->softening, acc, err)))
            goto done;
        int64_t k = s.n < 256 ? s.n : 256;
        double num = 0, den = 0;
        for (int64_t t = 0; t < k; t++) {
            int64_t i = t * s.n / k;
            double a[3];
            nbody_accel_ref_one(&s, o->softening, i, a);
            for (int c = 0; c < 3; c++) {
                double d = (double)acc[4 * i + c] - a[c];
                num += d * d;
                den += a[c] * a[c];
            }
        }
        r->accel_rel_error = den > 0 ? sqrt(num / den) : sqrt(num);
        r->checked_bodies = k;
    }
    nbody_momentum(&s, r->momentum0);
    double w0 = cls_now();
    if ((rc = nbody_gpu_run(g, o->steps, o->dt, o->softening, o->damping, &r->kernel_s, err)))
        goto done;
    r->wall_s = cls_now() - w0;
    if ((rc = nbody_gpu_download(g, &s, err)))
        goto done;
    nbody_momentum(&s, r->momentum1);
    double scale = 0;
    for (int64_t i = 0; i < s.n; i++)
        scale += s.m[i] * sqrt(s.v[3 * i] * s.v[3 * i] + s.v[3 * i + 1] * s.v[3 * i + 1] +
                               s.v[3 * i + 2] * s.v[3 * i + 2]);
    double dp = sqrt((r->momentum1[0] - r->momentum0[0]) * (r->momentum1[0] - r->momentum0[0]) +
                     (r->momentum1[1] - r->momentum0[1]) * (r->momentum1[1] - r->momentum0[1]) +
                     (r->momentum1[2] - r->momentum0[2]) * (r->momentum1[2] - r->momentum0[2]));
    r->momentum_drift = scale > 0 ? dp / scale : dp;
    double inter = (double)s.n * (double)s.n * (double)o->steps;
    r->ms_per_step = o->steps ? 1e3 * r->kernel_s / (double)o->steps : 0.0;
    r->interactions_per_s = r->kernel_s > 0 ? inter / r->kernel_s : 0.0;
    r->gflops = 20.0 * r->interactions_per_s * 1e-9;
    if (o->out_csv)
        rc = nbody_write_csv(o->out_csv, &s, err);
done:
    free(acc);
    nbody_gpu_free(g);
    if (have_ctx)
        ocl_ctx_release(&ctx);
    nbody_free(&s);
    return rc;
}

static json_t *nbody_report_object(const nbody_options *o, const nbody_report *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "kind", json_string("nbody"));
    json_object_set_new(j, "input", o->bodies_path ? json_string(o->bodies_path)
                                                   : json_string("random"));
    if (!o->bodies_path)
        json_object_set_new(j, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(j, "bodies", json_integer(r->bodies));
    json_object_set_new(j, "steps", json_integer(r->steps));
    json_object_set_new(j, "dt", json_real(o->dt));
    json_object_set_new(j, "softening", json_real(o->softening));
    json_object_set_new(j, "damping", json_real(o->damping));
    json_object_set_new(j, "tile", json_integer((json_int_t)r->tile));
    json_object_set_new(j, "ms_per_step", json_real(r->ms_per_step));
    json_object_set_new(j, "interactions_per_s", json_real(r->interactions_per_s));
    json_object_set_new(j, "gflops", json_real(r->gflops));
    json_object_set_new(j, "flops_per_interaction", json_integer(20));
    json_object_set_new(j, "kernel_s", json_real(r->kernel_s));
    json_object_set_new(j, "wall_s", json_real(r->wall_s));
    json_object_set_new(j, "momentum_start", json_pack("[f, f, f]", r->momentum0[0],
                                                       r->momentum0[1], r->momentum0[2]));
    json_object_set_new(j, "momentum_end", json_pack("[f, f, f]", r->momentum1[0],
                                                     r->momentum1[1], r->momentum1[2]));
    json_object_set_new(j, "momentum_drift",
                        isfinite(r->momentum_drift) ? json_real(r->momentum_drift)
                                                    : json_null());
    if (isfinite(r->accel_rel_error)) {
        json_object_set_new(j, "accel_rel_error", json_real(r->accel_rel_error));
        json_object_set_new(j, "accel_checked_bodies", json_integer(r->checked_bodies));
    }
    json_object_set_new(j, "device",
                        json_pack("{s:i, s:s, s:s, s:s}", "index", r->device.index, "name",
                                  r->device.name, "platform", r->device.platform_name, "type",
                                  ocl_type_name(r->device.type)));
    return j;
}

char *nbody_report_json(const nbody_options *o, const nbody_report *r)
{
    json_t *j = nbody_report_object(o, r);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    return s;
}

/* Options of an nbody job: {"random": N, "seed", "steps", "dt", "softening",
 * "damping", "tile", "check"}; the input file, when given, is the bodies CSV. */
static int nbody_job_options(const char *json, nbody_options *o, cls_error *err)
{
    if (!json || !*json)
        return CLS_OK;
    json_error_t je;
    json_t *j = json_loads(json, 0, &je);
    if (!j)
        return cls_fail(err, CLS_EUSAGE, "nbody options: line %d: %s", je.line, je.text);
    int rc = CLS_OK;
    if (!json_is_object(j)) {
        rc = cls_fail(err, CLS_EUSAGE, "nbody options: not a JSON object");
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
    {
        if (!strcmp(key, "dt") || !strcmp(key, "softening") || !strcmp(key, "damping")) {
            if (!json_is_number(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "nbody options: '%s' must be a number", key);
                goto done;
            }
            double x = json_number_value(v);
            *(!strcmp(key, "dt") ? &o->dt : !strcmp(key, "softening") ? &o->softening
                                                                      : &o->damping) = x;
        } else if (!strcmp(key, "random") || !strcmp(key, "seed") || !strcmp(key, "steps") ||
                   !strcmp(key, "tile")) {
            if (!json_is_integer(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "nbody options: '%s' must be an integer", key);
                goto done;
            }
            json_int_t x = json_integer_value(v);
            if (!strcmp(key, "random"))
                o->random_n = x;
            else if (!strcmp(key, "seed"))
                o->seed = (uint64_t)x;
            else if (!strcmp(key, "steps"))
                o->steps = x;
            else if (x < 0 || x > 1024) {
                rc = cls_fail(err, CLS_EUSAGE, "nbody options: 'tile' out of range");
                goto done;
            } else
                o->tile = (int)x;
        } else if (!strcmp(key, "check")) {
            if (!json_is_boolean(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "nbody options: 'check' must be true or false");
                goto done;
            }
            o->check = json_is_true(v);
        } else {
            rc = cls_fail(err, CLS_EUSAGE, "nbody options: unknown option '%s'", key);
            goto done;
        }
    }
done:
    json_decref(j);
    return rc;
}

int nbody_job_run(const char *options_json, const char *input_path, const char *out_dir,
                  const char *device, char **result_json, cls_error *err)
{
    *result_json = NULL;
    nbody_options o;
    nbody_options_default(&o);
    int rc = nbody_job_options(options_json, &o, err);
    if (rc)
        return rc;
    if (input_path) {
        o.bodies_path = input_path;
        o.random_n = 0; /* an uploaded file wins over a random option */
    }
    o.device = device ? device : "auto";
    char out[4096];
    if (out_dir) {
        snprintf(out, sizeof out, "%s/bodies.csv", out_dir);
        o.out_csv = out;
    }
    nbody_report r;
    if ((rc = nbody_run(&o, &r, err)))
        return rc;
    json_t *j = nbody_report_object(&o, &r);
    json_object_set_new(j, "files", out_dir ? json_pack("[s]", "bodies.csv") : json_array());
    *result_json = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    return *result_json ? CLS_OK : nbody_oom(err);
}
