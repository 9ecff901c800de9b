/*
 * krylov.c: the small pieces of the result every method shares: the
 * residual history, the reasons' names, the result's release. The floor of
 * the Krylov layer: it calls no method (the table is methods.c's).
 */
#include <stddef.h>
#include <stdlib.h>

#include "krylov.h"

const char *cg_reason_name(cg_reason r)
{
    switch (r) {
    case CG_CONVERGED_RTOL:
        return "converged_rtol";
    case CG_CONVERGED_ZERO_RHS:
        return "converged_zero_rhs";
    case CG_DIVERGED_MAXITER:
        return "diverged_maxiter";
    case CG_DIVERGED_INDEFINITE:
        return "diverged_indefinite";
    case CG_DIVERGED_NANORINF:
        return "diverged_nan_or_inf";
    case CG_CANCELLED:
        return "cancelled";
    }
    return "unknown";
}

void cg_result_free(cg_result *res)
{
    if (res) {
        free(res->history);
        res->history = NULL;
        res->nhistory = 0;
    }
}

/* Appends to the residual history, growing geometrically. */
int ksp_history_push(cg_result *res, int64_t *cap, double v, cls_error *err)
{
    if (res->nhistory == *cap) {
        int64_t ncap = *cap ? 2 * *cap : 256;
        double *h = realloc(res->history, (size_t)ncap * sizeof *h);
        if (!h)
            return cls_fail(err, CLS_EOTHER, "out of memory for the residual history");
        res->history = h;
        *cap = ncap;
    }
    res->history[res->nhistory++] = v;
    return CLS_OK;
}
