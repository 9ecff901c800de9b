/*
 * la_cgs.h: the host side of the one-launch CG for small systems
 * (--method cg-small): cg_small.cl's kernels, one work-group per system,
 * many iterations per launch (solver/krylov/cg_small.c holds the
 * recurrence and says when it pays).
 *
 * The contract is la_cgf's (la.h) but for one thing: la_cgs_enqueue
 * launches ONE kernel that runs up to `room` iterations (at most
 * LA_CGS_BATCH, and what the record ring has free), writing one record per
 * iteration into the ring exactly as the fused loops do, and stopping
 * itself on convergence, breakdown or NaN with the same LA_CGF_* codes. So
 * one enqueue adds up to LA_CGS_BATCH records, read back with one
 * non-blocking read per contiguous run of ring slots (la_ring_read_n).
 *
 * The work-group size is the kernel's limit on the device, at most
 * LA_CGS_LOCAL and no more than the rows rounded up to 64; the matrix is
 * read in CSR whatever format it was uploaded in (la_csr keeps the CSR
 * arrays). Vectors live in global memory between launches: r, p, q owned,
 * b, x, the diagonal borrowed. Within a launch, on a GPU, a system of at
 * most LA_SMALL_RPW_MAX rows per work-item whose p and q fit in local
 * memory runs cgs_run_reg, the system in registers; another runs cgs_run,
 * the plain twin (CLSOLVE_CGS_KERNEL=global|reg chooses, for measuring and
 * tests).
 */
#ifndef CLS_KERNELS_LA_CGS_H
#define CLS_KERNELS_LA_CGS_H

#include "la.h"
#include "la_pc.h"

/* Iterations one launch may run: two launches in flight (ksp_device.c)
 * plus the lag must fit the ring's LA_CGF_SLOTS - 1 records. Each launch
 * loads the system into registers again (cg_small_reg.cl) and waits for
 * its start: on an H200, 1138_bus, 24 iterations per launch cost 0.5 us
 * per iteration over the kernel's own clock. CLSOLVE_CGS_BATCH=N (fewer)
 * for measuring. */
#define LA_CGS_BATCH 96
/* The largest work-group the loop asks for (the reductions are trees over
 * it: 4 accumulators per work-item of local memory) */
#define LA_CGS_LOCAL 1024
/* cgs_run_reg's work-group: NVIDIA's compiler allows it no more (its
 * registers: CL_KERNEL_WORK_GROUP_SIZE 256 on an H200, as for cgs_run) */
#define LA_CGS_REG_LOCAL 256

/* A preconditioner the loop applies inside its kernel (cg_small.cl):
 * Chebyshev's recurrence (with the diagonal as dinv), or IC(0)'s triangles
 * by `sweeps` Jacobi sweeps each; all NULL: none or Jacobi. Borrowed. */
typedef struct la_cgs_prec {
    const la_cheb_coef *cheb;
    const la_tri *l, *u;
    int sweeps;
} la_cgs_prec;

typedef struct la_cgs {
    la_ctx *la;
    const la_csr *A;
    la_vec b, x, d;        /* borrowed handles (d.buf NULL without Jacobi) */
    la_vec r, p, q;        /* owned work vectors */
    int deg;               /* Chebyshev's degree inside the loop (0: none or Jacobi) */
    la_cgs_prec pc;        /* the preconditioner inside the loop */
    la_vec z, d0, d1, res; /* its vectors (owned, NULL buffers without it) */
    cl_mem coef;           /* its coefficients (cgs_cheb_rows) */
    cl_mem sc, ctl, hist;
    cl_kernel k_run, k_start;
    size_t ls;   /* the one work-group's size */
    int reg;     /* k_run is cgs_run_reg (cg_small_reg.cl, the system in registers) */
    int shuffle; /* its reductions are warp shuffles */
    int rpw;     /* its rows per work-item */
    int batch;   /* iterations per launch, at most LA_CGS_BATCH */
    la_ring rg;
} la_cgs;

/* Sets the workspace up for A x = b (x updated in place, dinv NULL without
 * Jacobi or Chebyshev; pc (may be NULL) a preconditioner run inside the
 * loop, cgs_run only); the loop stops when r'r <= stop2 (tol^2 b'b). */
int la_cgs_create(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                  const la_cgs_prec *pc, double stop2, la_cgs *w, cls_error *err);
/* (Re)starts from the current x at iteration k: r = b - A x (A at full
 * precision), p = z = D^-1 r. Returns r'r and r'z (blocking). */
int la_cgs_start(la_cgs *w, int64_t k, double *rr, double *rz, cls_error *err);
/* Launches one kernel of up to room iterations (room >= 1) and the reads
 * of their records. */
int la_cgs_enqueue(la_cgs *w, int64_t room, cls_error *err);
/* The next record in order (waits for it). */
int la_cgs_next(la_cgs *w, la_cgf_record *rec, cls_error *err);
/* r'r and r'z of the residual the last iteration left (blocking). */
int la_cgs_last(la_cgs *w, double *rr, double *rz, cls_error *err);
/* The kernel the loop runs and its geometry, for reports ("cgs_run_reg
 * (registers, warp shuffles), 256 work-items, 5 rows per work-item"). */
void la_cgs_describe(const la_cgs *w, char *buf, size_t cap);
/* Waits for every queued read. */
int la_cgs_drain(la_cgs *w, cls_error *err);
void la_cgs_release(la_cgs *w);

#endif
