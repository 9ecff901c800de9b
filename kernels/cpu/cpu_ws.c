/*
 * cpu_ws.c: the native CPU workspaces' shared plumbing (design in
 * cpu_ws.h).
 */
#include "cpu_ws.h"
#include "../la_priv.h"
#include "cpu_ops.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t ws_lock = PTHREAD_MUTEX_INITIALIZER;  /* the teams' creation */
static pthread_mutex_t ws_inuse = PTHREAD_MUTEX_INITIALIZER; /* one workspace holds the team */
static cls_team *ws_team, *ws_solo;
static int ws_size;

cls_team *cpu_ws_team(void)
{
    pthread_mutex_lock(&ws_lock);
    if (!ws_team) {
        ws_team = cls_team_create(cls_team_threads());
        ws_size = ws_team ? cls_team_size(ws_team) : 0;
    }
    pthread_mutex_unlock(&ws_lock);
    return ws_team;
}

/* the team of one (the caller, no thread): small systems, and a solve that
 * finds the process's team held by another */
static cls_team *ws_solo_team(void)
{
    pthread_mutex_lock(&ws_lock);
    if (!ws_solo)
        ws_solo = cls_team_create(1);
    pthread_mutex_unlock(&ws_lock);
    return ws_solo;
}

int cpu_ws_threads(void)
{
    pthread_mutex_lock(&ws_lock);
    int n = ws_size;
    pthread_mutex_unlock(&ws_lock);
    return n;
}

int cpu_ws_usable(const la_ctx *la, const la_csr *A, cls_error *err)
{
    if (!(la->ocl->dev.type & CL_DEVICE_TYPE_CPU))
        return cls_fail(err, CLS_EINPUT, "the device is not a CPU");
    if (la->prec != LA_DOUBLE)
        return cls_fail(err, CLS_EINPUT, "precision %s (the native loops are double)",
                        la_precision_str(la->prec));
    if (A->nrows != A->ncols || A->row_offset != 0 || !A->rowptr ||
        (A->nnz > 0 && (!A->col || !A->val)))
        return cls_fail(err, CLS_EINPUT, "the matrix is not one square CSR block");
    return CLS_OK;
}

int cpu_ws_map(cpu_ws *w, cl_mem m, size_t bytes, cl_map_flags fl, void **out, cls_error *err)
{
    *out = NULL;
    if (!bytes)
        return CLS_OK;
    if (w->nmap >= CPU_WS_MAPS)
        return cls_fail(err, CLS_EOTHER, "native loops: too many mapped buffers");
    cl_int st;
    void *p = clEnqueueMapBuffer(w->la->ocl->queue, m, CL_TRUE, fl, 0, bytes, 0, NULL, NULL, &st);
    OCL_CHECK(err, st, "clEnqueueMapBuffer(native loops)");
    w->mem[w->nmap] = m;
    w->ptr[w->nmap++] = p;
    *out = p;
    return CLS_OK;
}

int cpu_ws_map_csr(cpu_ws *w, const la_csr *A, cpu_csr *out, cls_error *err)
{
    void *rp = NULL, *col = NULL, *val = NULL;
    int rc;
    if ((rc = cpu_ws_map(w, A->rowptr, (size_t)(A->nrows + 1) * sizeof(int32_t), CL_MAP_READ, &rp,
                         err)) ||
        (rc = cpu_ws_map(w, A->col, (size_t)A->nnz * sizeof(int32_t), CL_MAP_READ, &col, err)) ||
        (rc = cpu_ws_map(w, A->val, (size_t)A->nnz * sizeof(double), CL_MAP_READ, &val, err)))
        return rc;
    *out = (cpu_csr){.rp = rp, .col = col, .val = val, .n = A->nrows};
    return CLS_OK;
}

int cpu_ws_rows(cpu_ws *w, const int32_t *rp, int64_t n, cls_error *err)
{
    const int want = cls_team_threads();
    cls_team *team = want > 1 && n >= CPU_WS_BLOCK * (int64_t)want ? cpu_ws_team() : NULL;
    if (team && cls_team_size(team) > 1 && pthread_mutex_trylock(&ws_inuse) == 0) {
        w->team = team;
        w->holds_team = 1;
    } else {
        w->team = ws_solo_team();
    }
    if (!w->team)
        return cls_fail(err, CLS_EOTHER, "out of memory starting the native loops' threads");
    w->n = n;
    w->nt = cls_team_size(w->team);
    w->nblk = (n + CPU_WS_BLOCK - 1) / CPU_WS_BLOCK;
    w->bound = malloc((size_t)(w->nt + 1) * sizeof *w->bound);
    w->part = calloc((size_t)(w->nblk ? w->nblk : 1), sizeof *w->part);
    if (!w->bound || !w->part)
        return cls_fail(err, CLS_EOTHER, "out of memory for the native loops' ranges");
    cpu_rows_split(rp, n, w->nt, w->bound);
    for (int t = 1; t < w->nt; t++) { /* whole blocks: the sums' order is the blocks' */
        int64_t b = (w->bound[t] + CPU_WS_BLOCK / 2) / CPU_WS_BLOCK * CPU_WS_BLOCK;
        b = b < w->bound[t - 1] ? w->bound[t - 1] : b > n ? n : b;
        w->bound[t] = b;
    }
    return CLS_OK;
}

double cpu_ws_sum(const cpu_ws *w, int c)
{
    double s = 0;
    for (int64_t b = 0; b < w->nblk; b++)
        s += w->part[b][c];
    return s;
}

void cpu_ws_release(cpu_ws *w)
{
    if (w->la) {
        for (int i = 0; i < w->nmap; i++)
            clEnqueueUnmapMemObject(w->la->ocl->queue, w->mem[i], w->ptr[i], 0, NULL, NULL);
        if (w->nmap)
            clFinish(w->la->ocl->queue);
    }
    if (w->holds_team)
        pthread_mutex_unlock(&ws_inuse);
    free(w->bound);
    free(w->part);
    memset(w, 0, sizeof *w);
}

int cpu_ws_dot(la_ctx *la, const la_vec *a, const la_vec *b, double *out, cls_error *err)
{
    *out = 0.0;
    if (a->n != b->n)
        return cls_fail(err, CLS_EOTHER, "cpu_ws_dot: lengths %lld and %lld", (long long)a->n,
                        (long long)b->n);
    const size_t bytes = (size_t)a->n * sizeof(double);
    cpu_ws w = {.la = la};
    void *pa = NULL, *pb = NULL;
    int rc = cpu_ws_map(&w, a->buf, bytes, CL_MAP_READ, &pa, err);
    if (!rc && b->buf != a->buf)
        rc = cpu_ws_map(&w, b->buf, bytes, CL_MAP_READ, &pb, err);
    if (!rc) {
        const double *x = pa, *y = pb ? pb : pa;
        double s = 0.0;
        for (int64_t lo = 0; lo < a->n; lo += CPU_WS_BLOCK) {
            const int64_t hi = lo + CPU_WS_BLOCK < a->n ? lo + CPU_WS_BLOCK : a->n;
            double blk = 0.0;
            for (int64_t i = lo; i < hi; i++)
                blk += x[i] * y[i];
            s += blk;
        }
        *out = s;
    }
    cpu_ws_release(&w);
    return rc;
}
