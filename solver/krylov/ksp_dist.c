/*
 * ksp_dist.c: what the methods over a partitioned system (dcg.c, dpcg.c,
 * pipecg.c) share before their first iteration: ||b|| in one reduction and
 * the two ends it can mean (ksp_stop_rhs). Below the methods, so that they
 * do not call each other for it.
 */
#include <math.h>

#include "dcg.h"
#include "ksp_stop.h"

int ksp_dist_rhs_norm(dsys *s, const dvec *b, dvec *x, cg_result *res, int64_t *cap, double *bnorm,
                      int *zero_rhs, cls_error *err)
{
    dsum ls;
    double v[4];
    const dvec *bv[1] = {b};
    *zero_rhs = 0;
    dvec_dots_local(s, 1, bv, bv, &ls);
    int rc = dsys_allreduce(s, &ls, v, 0, NULL, err); /* b'b, one reduction */
    if (rc)
        return rc;
    *bnorm = sqrt(v[0]);
    rc = ksp_stop_rhs(*bnorm, res, cap, zero_rhs, err);
    if (*zero_rhs)
        dvec_fill(s, 0.0, x); /* b = 0: x = 0 is exact */
    return rc;
}
