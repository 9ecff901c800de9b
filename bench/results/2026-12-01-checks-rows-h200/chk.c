#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "common/parallel.h"
#include "matrices/gen.h"
#include "solver/solve.h"
typedef struct chk_range {
    int64_t bad_val;   /* first entry that is NaN or Inf, or -1 */
    double maxabs;     /* max |a_ij| of the range */
    int64_t bad_row;   /* first failing row, or -1 */
    int64_t bad_entry; /* the entry at fault in that row (-1: the diagonal) */
} chk_range;

typedef struct chk_ctx {
    const csr_matrix *A;
    chk_range *r;
    double maxabs; /* pass 2: over the whole matrix */
    int pass;
    int mirrored;          /* pass 2: the diagonal only (solve_check_input_stored) */
    double *rowsum, *dinv; /* solve_check_more's, or NULL */
} chk_ctx;

static void chk_rows(void *arg, int range, int64_t i0, int64_t i1)
{
    const chk_ctx *c = arg;
    const csr_matrix *A = c->A;
    chk_range *r = &c->r[range];
    if (c->pass == 1) {
        r->bad_val = -1;
        r->maxabs = 0.0;
        for (int64_t i = i0; i < i1; i++) { /* row by row: each row's sum on the way */
            double s = 0.0;
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                if (!isfinite(A->val[k])) {
                    r->bad_val = k;
                    return;
                }
                if (fabs(A->val[k]) > r->maxabs)
                    r->maxabs = fabs(A->val[k]);
                s += A->val[k] * 1.0;
            }
            if (c->rowsum)
                c->rowsum[i] = s;
        }
        return;
    }
    r->bad_row = -1;
    for (int64_t i = i0; i < i1; i++) {
        int64_t d = csr_find(A, i, i);
        if (!(d >= 0 && A->val[d] > 0.0)) {
            r->bad_row = i;
            r->bad_entry = -1;
            return;
        }
        if (c->dinv)
            c->dinv[i] = 1.0 / A->val[d];
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1] && !c->mirrored; k++) {
            int64_t j = A->col[k];
            if (j <= i)
                continue;
            int64_t t = csr_find(A, j, i);
            double aji = t < 0 ? 0.0 : A->val[t];
            if (fabs(A->val[k] - aji) > SOLVE_SYM_RTOL * c->maxabs) {
                r->bad_row = i;
                r->bad_entry = k;
                return;
            }
        }
    }
}


static int old_check_stored(const csr_matrix *A, const double *b, int64_t nb, const char *name,
                             int mirrored, solve_check_more *more, cls_error *err)
{
    int rc = solve_check_shape(A->nrows, A->ncols, name, err);
    if (rc)
        return rc;
    if (b && nb != A->nrows)
        return cls_fail(err, CLS_EINPUT,
                        "right-hand side has %lld entries but the matrix has %lld rows",
                        (long long)nb, (long long)A->nrows);
    const int64_t grain = 16384;
    int t = cls_parallel_ranges(A->nrows, grain);
    chk_ctx c = {A,
                 calloc((size_t)t, sizeof(chk_range)),
                 0.0,
                 1,
                 mirrored != 0,
                 more ? more->rowsum : NULL,
                 more ? more->dinv : NULL};
    if (!c.r)
        return cls_fail(err, CLS_EOTHER, "out of memory checking the matrix");
    cls_parallel_for(A->nrows, grain, chk_rows, &c);
    for (int q = 0; q < t; q++) {
        if (c.r[q].bad_val >= 0) {
            free(c.r);
            return solve_fail_nonfinite(name, err);
        }
        if (c.r[q].maxabs > c.maxabs)
            c.maxabs = c.r[q].maxabs;
    }
    if (b) {
        int rc = solve_check_vector(b, nb, "right-hand side", err);
        if (rc) {
            free(c.r);
            return rc;
        }
    }
    c.pass = 2;
    cls_parallel_for(A->nrows, grain, chk_rows, &c);
    chk_range bad = {-1, 0.0, -1, -1};
    for (int q = 0; q < t && bad.bad_row < 0; q++) /* ranges in row order */
        if (c.r[q].bad_row >= 0)
            bad = c.r[q];
    free(c.r);
    if (bad.bad_row < 0) {
        if (more)
            more->amax = c.maxabs;
        return CLS_OK;
    }
    const int64_t i = bad.bad_row;
    if (bad.bad_entry < 0) {
        int64_t d = csr_find(A, i, i);
        return solve_fail_diagonal(name, i, d >= 0, d < 0 ? 0.0 : A->val[d], err);
    }
    const int64_t k = bad.bad_entry, j = A->col[k];
    int64_t tk = csr_find(A, j, i);
    return solve_fail_symmetry(name, i, j, A->val[k], tk < 0 ? 0.0 : A->val[tk], err);
}


static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc,char**argv){csr_matrix A;cls_error e;int n=argc>1?atoi(argv[1]):200;
if(gen_matrix(GEN_POISSON3D,n,&A,&e)){puts(e.msg);return 1;}
double*rs=malloc(A.nrows*8),*di=malloc(A.nrows*8);
for(int r=0;r<5;r++){solve_check_more m1={-1,rs,di},m2={-1,rs,di};
double t0=now();int a=old_check_stored(&A,NULL,0,"x",1,&m1,&e);double t1=now();int b=solve_check_input_stored(&A,NULL,0,"x",1,&m2,&e);double t2=now();
printf("old %.1f ms (%d)  new %.1f ms (%d)\n",1e3*(t1-t0),a,1e3*(t2-t1),b);}
return 0;}
