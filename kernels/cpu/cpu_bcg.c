/*
 * cpu_bcg.c: the block CG's passes as native loops (design in cpu_bcg.h).
 *
 * Each operation is one cls_team_run: a member takes its rows
 * (cpu_ws.bound) block by block and leaves each block's sums in
 * acc[block], in bcg.cl's record layout (BCG_NACC: the upper triangle a <= b
 * row by row, then the diagonal r_b'r_b); member 0's caller adds the blocks
 * in order and unpacks them as la_bcg.c's bcg_sums does. The row loops run
 * over kw (2, 4 or 8), a constant in each of three instances of a pass
 * (the switches on kw below), so that the compiler unrolls and vectorises
 * them; the k x k mixings read alpha and beta only within k (the columns
 * past k of P and Q are 0, and so is what the host did not write).
 */
#include "cpu_bcg.h"
#include "../la_priv.h"
#include "cpu_ws.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"

#define K8 LA_BCG_MAXK
#define NACC LA_BCG_NACC /* 36 triangle entries, then 8 diagonal ones */
#define NTRI 36

/* the passes (bc_call.op) */
enum { OP_SPMM, OP_GRAM, OP_UPDATE, OP_RESID, OP_DIR, OP_XP, OP_QR, OP_NOPS };

typedef struct cpu_bcg {
    cpu_ws ws;
    cl_mem A_rowptr; /* the matrix mapped (checked against each call's) */
    const int32_t *rp, *col;
    const double *val;
    cl_mem dinv_buf; /* Jacobi's D^-1 mapped, or NULL */
    const double *dinv;
    double *X, *R, *Z, *B, *P, *Q;
    double (*acc)[NACC];   /* per block of rows */
    double alpha[K8 * K8]; /* the last update's, for X += P alpha in the next dir */
    int prof;              /* CLSOLVE_BCG_PROFILE: seconds per pass, on stderr at release */
    double t[OP_NOPS];
    int64_t calls[OP_NOPS];
} cpu_bcg;

/* ----------------------------------------------------------- the passes */

typedef struct bc_call {
    la_bcg *w;
    int op;
    int gram;                 /* OP_SPMM: G = P'Q too */
    const double *U, *V, *wt; /* OP_GRAM: entry (i, a) at U[a * uc + i * ur] */
    int64_t ur, uc, vr, vc;
    const double *zsrc, *d; /* OP_DIR */
    int fresh, xupd;
    int rho; /* OP_UPDATE, OP_RESID: rho = (W R)'R too (la_bcg.rho_fused) */
    double alpha[K8 * K8], beta[K8 * K8];
} bc_call;

/* A block's rows go through in tiles of BT: a row-major tile of P or Q is
 * turned into BT-long columns in a local array (bc_cols_of), so that every
 * mixing is column b += column m times a scalar, contiguous in memory on
 * both sides (vectors along the rows), and turned back (bc_rows_of). Row
 * by row instead, a row's k column-major entries were k scalar loads
 * packed into a vector and unpacked again: 2-4x slower (poisson3d 64).
 * Tiles of 32, 64, 128 and 256 rows measured alike there (within the
 * machine's noise); 32 keeps a pass's tiles in a few KiB of L1. */
#define BT 32

/* t[m * BT + r] = rm[r * kw + m] */
static inline void bc_cols_of(const double *rm, int kw, int tn, double *t)
{
    for (int r = 0; r < tn; r++)
        for (int m = 0; m < kw; m++)
            t[m * BT + r] = rm[(int64_t)r * kw + m];
}

/* rm[r * kw + m] = t[m * BT + r] */
static inline void bc_rows_of(const double *t, int kw, int tn, double *rm)
{
    for (int r = 0; r < tn; r++)
        for (int m = 0; m < kw; m++)
            rm[(int64_t)r * kw + m] = t[m * BT + r];
}

/* s[l] += x_r y_r over r = l mod 8: eight independent sums, which vectorise
 * (one running sum cannot, without reordering it) */
static inline void bc_dot_lanes(const double *x, const double *y, int tn, double *s)
{
    int r = 0;
    for (; r + 8 <= tn; r += 8)
        for (int l = 0; l < 8; l++)
            s[l] += x[r + l] * y[r + l];
    for (; r < tn; r++)
        s[r & 7] += x[r] * y[r];
}

/* a sum's eight lanes, in order */
static inline double bc_lanes(const double *s)
{
    double t = 0.0;
    for (int l = 0; l < 8; l++)
        t += s[l];
    return t;
}

/* G's upper triangle from a tile's columns ut, vt (BT apart), pair by pair
 * into eight lanes each */
static inline void bc_tri_lanes(const double *ut, const double *vt, int k, int tn,
                                double lanes[NTRI][8])
{
    int t = 0;
    for (int x = 0; x < K8; x++)
        for (int y = x; y < K8; y++, t++)
            if (y < k)
                bc_dot_lanes(ut + x * BT, vt + y * BT, tn, lanes[t]);
}

/* the lanes' sums into the record's triangle */
static inline void bc_tri_flush(double lanes[NTRI][8], double *g)
{
    for (int t = 0; t < NTRI; t++)
        g[t] += bc_lanes(lanes[t]);
}

/* Q = A P on rows [lo, hi), kw wide; with gram G = P'Q from each tile's
 * rows while they are in cache */
static inline __attribute__((always_inline)) void
bc_spmm(const cpu_bcg *c, const int kw, int k, int gram, int64_t lo, int64_t hi, double *g)
{
    const double *P = c->P;
    double *Q = c->Q;
    double pt[K8 * BT], qt[K8 * BT], lanes[NTRI][8] = {{0}};
    for (int64_t i0 = lo; i0 < hi; i0 += BT) {
        const int tn = (int)(hi - i0 < BT ? hi - i0 : BT);
        for (int64_t i = i0; i < i0 + tn; i++) {
            double q[K8] = {0};
            for (int32_t e = c->rp[i]; e < c->rp[i + 1]; e++) {
                const double v = c->val[e];
                const double *p = P + (int64_t)c->col[e] * kw;
                for (int a = 0; a < kw; a++)
                    q[a] += v * p[a];
            }
            for (int a = 0; a < kw; a++)
                Q[i * kw + a] = q[a];
        }
        if (gram) {
            bc_cols_of(P + i0 * kw, kw, tn, pt);
            bc_cols_of(Q + i0 * kw, kw, tn, qt);
            bc_tri_lanes(pt, qt, k, tn, lanes);
        }
    }
    if (gram)
        bc_tri_flush(lanes, g);
}

/* rho = (W R)'R of a tile's columns rt (W = diag(d), or I), into the pairs'
 * lanes: bc_gram's arithmetic on the same tiles, so the same bits as the
 * separate pass (la_bcg_gram_cols(R, R, dinv)) that it saves */
static inline void bc_rho_tile(const double *rt, const double *d, int64_t i0, int k, int tn,
                               double lanes[NTRI][8])
{
    double ut[K8 * BT];
    for (int x = 0; x < k; x++)
        for (int r = 0; r < tn; r++)
            ut[x * BT + r] = d ? rt[x * BT + r] * d[i0 + r] : rt[x * BT + r];
    bc_tri_lanes(ut, rt, k, tn, lanes);
}

/* R -= Q alpha (r_b -= sum_m q_m alpha_mb, m in order), or R = B - R
 * (resid: A X in R on entry); r_b'r_b; with rho, also rho = (W R)'R of the
 * new R while its tile is in cache */
static inline __attribute__((always_inline)) void bc_update(const cpu_bcg *c, const bc_call *a,
                                                            const int kw, int k, int64_t ld,
                                                            int64_t lo, int64_t hi, double *g)
{
    double qt[K8 * BT], rt[K8 * BT], lanes[K8][8] = {{0}}, rl[NTRI][8] = {{0}};
    const int resid = a->op == OP_RESID;
    for (int64_t i0 = lo; i0 < hi; i0 += BT) {
        const int tn = (int)(hi - i0 < BT ? hi - i0 : BT);
        if (!resid)
            bc_cols_of(c->Q + i0 * kw, kw, tn, qt);
        for (int b = 0; b < k; b++) {
            double *rb = c->R + b * ld + i0, *tb = rt + b * BT;
            if (resid) {
                const double *bb = c->B + b * ld + i0;
                for (int r = 0; r < tn; r++)
                    tb[r] = bb[r] - rb[r];
            } else {
                for (int r = 0; r < tn; r++)
                    tb[r] = rb[r];
                for (int m = 0; m < k; m++) {
                    const double am = a->alpha[m * K8 + b];
                    const double *qm = qt + m * BT;
                    for (int r = 0; r < tn; r++)
                        tb[r] -= qm[r] * am;
                }
            }
            memcpy(rb, tb, (size_t)tn * sizeof *rb);
            bc_dot_lanes(tb, tb, tn, lanes[b]);
        }
        if (a->rho)
            bc_rho_tile(rt, c->dinv, i0, k, tn, rl);
    }
    for (int b = 0; b < k; b++)
        g[NTRI + b] += bc_lanes(lanes[b]);
    if (a->rho)
        bc_tri_flush(rl, g);
}

/* first X += P alpha with the old P (xupd); then P = Z + P beta, Z = d .*
 * zsrc (p_b = z_b + sum_m p_m beta_mb); fresh: P = Z. P's columns past k
 * stay 0. */
static inline __attribute__((always_inline)) void
bc_dir(const cpu_bcg *c, const bc_call *a, const int kw, int k, int64_t ld, int64_t lo, int64_t hi)
{
    double pt[K8 * BT], vt[K8 * BT];
    memset(vt, 0, sizeof vt);
    for (int64_t i0 = lo; i0 < hi; i0 += BT) {
        const int tn = (int)(hi - i0 < BT ? hi - i0 : BT);
        if (!a->fresh)
            bc_cols_of(c->P + i0 * kw, kw, tn, pt);
        for (int b = 0; b < k; b++) {
            const double *zb = a->zsrc + b * ld + i0;
            double *vb = vt + b * BT;
            if (a->d)
                for (int r = 0; r < tn; r++)
                    vb[r] = a->d[i0 + r] * zb[r];
            else
                for (int r = 0; r < tn; r++)
                    vb[r] = zb[r];
            if (a->xupd) {
                double *xb = c->X + b * ld + i0;
                for (int m = 0; m < k; m++) {
                    const double am = a->alpha[m * K8 + b];
                    const double *pm = pt + m * BT;
                    for (int r = 0; r < tn; r++)
                        xb[r] += pm[r] * am;
                }
            }
            if (!a->fresh)
                for (int m = 0; m < k; m++) {
                    const double bm = a->beta[m * K8 + b];
                    const double *pm = pt + m * BT;
                    for (int r = 0; r < tn; r++)
                        vb[r] += pm[r] * bm;
                }
        }
        bc_rows_of(vt, kw, tn, c->P + i0 * kw);
    }
}

/* rows [i0, i0 + tn) of a block M as BT-apart columns in t: column-major
 * (entry (i, x) at M[x * mc + i], mr = 1) or row-major kw wide */
static inline void bc_tile_of(const double *M, int64_t mr, int64_t mc, int kw, int k, int64_t i0,
                              int tn, double *t)
{
    if (mr != 1) {
        bc_cols_of(M + i0 * kw, kw, tn, t);
        return;
    }
    for (int x = 0; x < k; x++)
        for (int r = 0; r < tn; r++)
            t[x * BT + r] = M[x * mc + i0 + r];
}

/* G = U'WV: column-major U and V (u = U .* wt, as the kernel's) a tile at
 * a time; a row-major U or V (P'Q unfused) through the tile's columns too */
static inline __attribute__((always_inline)) void bc_gram(const bc_call *a, int kw, int k,
                                                          int64_t lo, int64_t hi, double *g)
{
    double ut[K8 * BT], vt[K8 * BT], lanes[NTRI][8] = {{0}};
    for (int64_t i0 = lo; i0 < hi; i0 += BT) {
        const int tn = (int)(hi - i0 < BT ? hi - i0 : BT);
        bc_tile_of(a->U, a->ur, a->uc, kw, k, i0, tn, ut);
        if (a->wt)
            for (int x = 0; x < k; x++)
                for (int r = 0; r < tn; r++)
                    ut[x * BT + r] *= a->wt[i0 + r];
        bc_tile_of(a->V, a->vr, a->vc, kw, k, i0, tn, vt);
        bc_tri_lanes(ut, vt, k, tn, lanes);
    }
    bc_tri_flush(lanes, g);
}

/* one block of rows of a pass; kw a constant in each branch (the loops over
 * it unroll) */
static inline __attribute__((always_inline)) void bc_block(const bc_call *a, int64_t lo, int64_t hi,
                                                           double *g)
{
    la_bcg *w = a->w;
    const cpu_bcg *c = w->cpu;
    const int k = w->k, kw = w->kw;
    const int64_t ld = w->ld;
    switch (a->op) {
    case OP_SPMM:
        kw == 2   ? bc_spmm(c, 2, k, a->gram, lo, hi, g)
        : kw == 4 ? bc_spmm(c, 4, k, a->gram, lo, hi, g)
                  : bc_spmm(c, 8, k, a->gram, lo, hi, g);
        return;
    case OP_UPDATE:
        kw == 2   ? bc_update(c, a, 2, k, ld, lo, hi, g)
        : kw == 4 ? bc_update(c, a, 4, k, ld, lo, hi, g)
                  : bc_update(c, a, 8, k, ld, lo, hi, g);
        return;
    case OP_DIR:
        kw == 2   ? bc_dir(c, a, 2, k, ld, lo, hi)
        : kw == 4 ? bc_dir(c, a, 4, k, ld, lo, hi)
                  : bc_dir(c, a, 8, k, ld, lo, hi);
        return;
    case OP_GRAM:
        kw == 2   ? bc_gram(a, 2, k, lo, hi, g)
        : kw == 4 ? bc_gram(a, 4, k, lo, hi, g)
                  : bc_gram(a, 8, k, lo, hi, g);
        return;
    case OP_RESID:
        bc_update(c, a, 8, k, ld, lo, hi, g); /* kw unused: Q is not read */
        return;
    case OP_XP: /* P = X, row-major (the columns past k 0): A X as the SpMM's */
        for (int64_t i = lo; i < hi; i++)
            for (int m = 0; m < kw; m++)
                c->P[i * kw + m] = m < k ? c->X[m * ld + i] : 0.0;
        return;
    case OP_QR: { /* R = Q, column-major, a tile at a time */
        double qt[K8 * BT];
        for (int64_t i0 = lo; i0 < hi; i0 += BT) {
            const int tn = (int)(hi - i0 < BT ? hi - i0 : BT);
            bc_cols_of(c->Q + i0 * kw, kw, tn, qt);
            for (int b = 0; b < k; b++)
                memcpy(c->R + b * ld + i0, qt + b * BT, (size_t)tn * sizeof(double));
        }
        return;
    }
    }
}

/* The passes are compiled for AVX-512 and AVX2 beside the baseline and the
 * loader picks one (an ifunc): the SpMM's 8 x 8 sums are 8 AVX-512
 * registers, 16 AVX2 ones, and 32 of the baseline's 16. bc_block and what
 * it calls are inlined into each clone (always_inline), or they would stay
 * baseline code. Where the compiler has no target clones, the baseline
 * alone. */
#if defined(__x86_64__) && ((defined(__GNUC__) && __GNUC__ >= 11) || defined(__clang__)) &&        \
    !defined(CLS_NO_CLONES)
#define BC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define BC_CLONES
#endif

BC_CLONES static void bc_member(void *ctx, int id, int nt)
{
    (void)nt;
    const bc_call *a = ctx;
    cpu_bcg *c = a->w->cpu;
    const int64_t lo = c->ws.bound[id], hi = c->ws.bound[id + 1];
    for (int64_t blo = lo; blo < hi; blo += CPU_WS_BLOCK) {
        const int64_t bhi = blo + CPU_WS_BLOCK < hi ? blo + CPU_WS_BLOCK : hi;
        double *g = c->acc[blo / CPU_WS_BLOCK];
        memset(g, 0, sizeof c->acc[0]);
        bc_block(a, blo, bhi, g);
    }
}

/* run a pass; with out, its sums: the blocks in order, unpacked as
 * la_bcg.c's bcg_sums (the triangle into both halves, then the diagonal) */
static void bc_run(bc_call *a, double out[LA_BCG_NSUM])
{
    cpu_bcg *c = a->w->cpu;
    const double t0 = c->prof ? cls_now() : 0.0;
    cls_team_run(c->ws.team, bc_member, a);
    if (c->prof) {
        c->t[a->op] += cls_now() - t0;
        c->calls[a->op]++;
    }
    if (!out)
        return;
    double s[NACC] = {0};
    for (int64_t b = 0; b < c->ws.nblk; b++)
        for (int m = 0; m < NACC; m++)
            s[m] += c->acc[b][m];
    int t = 0;
    for (int x = 0; x < K8; x++)
        for (int y = x; y < K8; y++, t++)
            out[x * K8 + y] = out[y * K8 + x] = s[t];
    for (int b = 0; b < K8; b++)
        out[64 + b] = s[NTRI + b];
}

/* ------------------------------------------------------------ the calls */

/* the host address of block m (one of w's), or NULL */
static double *bc_block_ptr(const la_bcg *w, cl_mem m)
{
    const cpu_bcg *c = w->cpu;
    return m == w->X   ? c->X
           : m == w->R ? c->R
           : m == w->Z ? c->Z
           : m == w->B ? c->B
           : m == w->P ? c->P
           : m == w->Q ? c->Q
                       : NULL;
}

int cpu_bcg_usable(const la_ctx *la, const la_csr *A, cls_error *err)
{
    int rc = cpu_ws_usable(la, A, err);
    if (rc)
        return rc;
    if (A->variant == LA_SPMV_SELL || A->variant == LA_SPMV_BCSR)
        return cls_fail(err, CLS_EINPUT, "the matrix is not in CSR (%s)",
                        la_spmv_variant_name(A->variant));
    return CLS_OK;
}

int cpu_bcg_create(la_bcg *w, const la_csr *A, const la_vec *dinv, cls_error *err)
{
    int rc = cpu_bcg_usable(w->la, A, err);
    if (rc)
        return rc;
    if (A->nrows != w->n)
        return cls_fail(err, CLS_EINPUT, "the matrix has %lld rows, the blocks %lld",
                        (long long)A->nrows, (long long)w->n);
    cpu_bcg *c = calloc(1, sizeof *c);
    if (!c)
        return cls_fail(err, CLS_EOTHER, "out of memory for the native block CG");
    w->cpu = c;
    cpu_ws *ws = &c->ws;
    ws->la = w->la;
    const size_t blk = (size_t)w->ld * (size_t)w->k * sizeof(double);
    const size_t rm = (size_t)w->n * (size_t)w->kw * sizeof(double);
    const cl_map_flags rw = CL_MAP_READ | CL_MAP_WRITE;
    void *pd = NULL, *x, *r, *b, *p, *q, *z = NULL;
    cpu_csr csr;
    if ((rc = cpu_ws_map_csr(ws, A, &csr, err)) ||
        (dinv &&
         (rc = cpu_ws_map(ws, dinv->buf, (size_t)w->n * sizeof(double), CL_MAP_READ, &pd, err))) ||
        (rc = cpu_ws_map(ws, w->X, blk, rw, &x, err)) ||
        (rc = cpu_ws_map(ws, w->R, blk, rw, &r, err)) ||
        (rc = cpu_ws_map(ws, w->B, blk, rw, &b, err)) ||
        (rc = cpu_ws_map(ws, w->P, rm, rw, &p, err)) ||
        (rc = cpu_ws_map(ws, w->Q, rm, rw, &q, err)) ||
        (w->Z && (rc = cpu_ws_map(ws, w->Z, blk, rw, &z, err))) ||
        (rc = cpu_ws_rows(ws, csr.rp, w->n, err)))
        goto fail;
    c->A_rowptr = A->rowptr;
    c->rp = csr.rp;
    c->col = csr.col;
    c->val = csr.val;
    c->dinv_buf = dinv ? dinv->buf : NULL;
    c->dinv = pd;
    c->prof = getenv("CLSOLVE_BCG_PROFILE") != NULL;
    c->X = x, c->R = r, c->B = b, c->P = p, c->Q = q, c->Z = z;
    if (!(c->acc = calloc((size_t)(ws->nblk ? ws->nblk : 1), sizeof *c->acc))) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the native block CG's sums");
        goto fail;
    }
    return CLS_OK;
fail:
    cpu_bcg_release(w);
    return rc;
}

void cpu_bcg_release(la_bcg *w)
{
    cpu_bcg *c = w->cpu;
    if (!c)
        return;
    if (c->prof) {
        static const char *const name[OP_NOPS] = {"spmm", "gram",   "update", "resid",
                                                  "dir",  "x-to-p", "q-to-r"};
        fprintf(stderr, "bcg native profile (%d threads), ms a call:", c->ws.nt);
        for (int o = 0; o < OP_NOPS; o++)
            if (c->calls[o])
                fprintf(stderr, " %s x%lld %.3f;", name[o], (long long)c->calls[o],
                        1e3 * c->t[o] / (double)c->calls[o]);
        fprintf(stderr, "\n");
    }
    cpu_ws_release(&c->ws); /* unmapped: the OpenCL calls see the blocks again */
    free(c->acc);
    free(c);
    w->cpu = NULL;
}

int cpu_bcg_spmm(la_bcg *w, const la_csr *A, double *gram, cls_error *err)
{
    if (A->rowptr != w->cpu->A_rowptr)
        return cls_fail(err, CLS_EOTHER, "native block CG: not the matrix it was made for");
    bc_call a = {.w = w, .op = OP_SPMM, .gram = gram != NULL};
    bc_run(&a, gram);
    return CLS_OK;
}

int cpu_bcg_gram(la_bcg *w, cl_mem U, int ur, int uc, cl_mem V, int vr, int vc, const la_vec *wt,
                 double out[LA_BCG_NSUM], cls_error *err)
{
    bc_call a = {.w = w,
                 .op = OP_GRAM,
                 .U = bc_block_ptr(w, U),
                 .V = bc_block_ptr(w, V),
                 .ur = ur,
                 .uc = uc,
                 .vr = vr,
                 .vc = vc};
    if (wt) {
        if (wt->buf != w->cpu->dinv_buf)
            return cls_fail(err, CLS_EOTHER, "native block CG: a weight it did not map");
        a.wt = w->cpu->dinv;
    }
    if (!a.U || !a.V)
        return cls_fail(err, CLS_EOTHER, "native block CG: a block that is not its own");
    bc_run(&a, out);
    for (int b = 0; b < K8; b++) /* as bcg_gram's records: no diagonal sums */
        out[64 + b] = 0.0;
    return CLS_OK;
}

int cpu_bcg_update(la_bcg *w, const double *alpha, double out[LA_BCG_NSUM])
{
    bc_call a = {.w = w, .op = OP_UPDATE, .rho = w->rho_fused};
    memcpy(a.alpha, alpha, sizeof a.alpha);
    memcpy(w->cpu->alpha, alpha, sizeof w->cpu->alpha); /* for la_bcg_dir's X += P alpha */
    bc_run(&a, out);
    if (!a.rho)
        for (int m = 0; m < K8 * K8; m++) /* the square is not this pass's */
            out[m] = 0.0;
    return CLS_OK;
}

int cpu_bcg_resid(la_bcg *w, double out[LA_BCG_NSUM])
{
    bc_call a = {.w = w, .op = OP_RESID, .rho = w->rho_fused};
    bc_run(&a, out);
    if (!a.rho)
        for (int m = 0; m < K8 * K8; m++)
            out[m] = 0.0;
    return CLS_OK;
}

int cpu_bcg_dir(la_bcg *w, cl_mem zsrc, const la_vec *dinv, const double *beta, int fresh,
                int with_x, cls_error *err)
{
    bc_call a = {.w = w,
                 .op = OP_DIR,
                 .zsrc = bc_block_ptr(w, zsrc),
                 .fresh = fresh,
                 .xupd = with_x && !fresh};
    if (!a.zsrc)
        return cls_fail(err, CLS_EOTHER, "native block CG: a block that is not its own");
    if (dinv) {
        if (dinv->buf != w->cpu->dinv_buf)
            return cls_fail(err, CLS_EOTHER, "native block CG: a diagonal it did not map");
        a.d = w->cpu->dinv;
    }
    if (!fresh)
        memcpy(a.beta, beta, sizeof a.beta);
    memcpy(a.alpha, w->cpu->alpha, sizeof a.alpha);
    bc_run(&a, NULL);
    return CLS_OK;
}

int cpu_bcg_ax(la_bcg *w, const la_csr *A, cls_error *err)
{
    if (A->rowptr != w->cpu->A_rowptr)
        return cls_fail(err, CLS_EOTHER, "native block CG: not the matrix it was made for");
    /* through P and Q, row-major: a restart sets P anew after this (P = Z) */
    bc_call a = {.w = w, .op = OP_XP};
    bc_run(&a, NULL);
    a.op = OP_SPMM;
    bc_run(&a, NULL);
    a.op = OP_QR;
    bc_run(&a, NULL);
    return CLS_OK;
}

/* column c of blk from v (in) or into it: a blocking read or write of v's
 * buffer from or into the block's mapped memory */
static int bc_copy(la_bcg *w, cl_mem blk, int c, cl_mem v, int in, cls_error *err)
{
    double *p = bc_block_ptr(w, blk);
    if (!p)
        return cls_fail(err, CLS_EOTHER, "native block CG: a block that is not its own");
    p += (int64_t)c * w->ld;
    const size_t bytes = (size_t)w->n * sizeof(double);
    cl_command_queue q = w->la->ocl->queue;
    cl_int st = in ? clEnqueueReadBuffer(q, v, CL_TRUE, 0, bytes, p, 0, NULL, NULL)
                   : clEnqueueWriteBuffer(q, v, CL_TRUE, 0, bytes, p, 0, NULL, NULL);
    OCL_CHECK(err, st,
              in ? "clEnqueueReadBuffer(into a native block)"
                 : "clEnqueueWriteBuffer(out of a native block)");
    return CLS_OK;
}

int cpu_bcg_put(la_bcg *w, cl_mem blk, int c, const la_vec *v, cls_error *err)
{
    return bc_copy(w, blk, c, v->buf, 1, err);
}

int cpu_bcg_get(la_bcg *w, cl_mem blk, int c, la_vec *v, cls_error *err)
{
    return bc_copy(w, blk, c, v->buf, 0, err);
}

int cpu_bcg_threads(const la_bcg *w)
{
    return w->cpu ? w->cpu->ws.nt : 0;
}
