/*
 * eta.c: time left from the residual's rate (see eta.h).
 */
#include "eta.h"

#include <math.h>
#include <string.h>

#define ETA_WINDOW_S 2.0 /* the anchor is 2 to 4 s old */
#define ETA_MIN_S 0.5    /* no estimate from less than this */

void cls_eta_reset(cls_eta *e)
{
    memset(e, 0, sizeof *e);
}

double cls_eta_update(cls_eta *e, double t, int64_t it, int64_t maxiter, double r, double tol)
{
    if (!(r > 0) || !isfinite(r) || !(tol > 0))
        return -1;
    double l = log10(r), lt = log10(tol);
    if (l <= lt)
        return 0;
    if (e->n == 0) {
        e->ta = e->tm = t;
        e->la = e->lm = l;
        e->ia = e->im = it;
        e->n = 1;
        return -1;
    }
    if (t - e->tm >= ETA_WINDOW_S) { /* slide: the middle sample becomes the anchor */
        e->ta = e->tm;
        e->la = e->lm;
        e->ia = e->im;
        e->tm = t;
        e->lm = l;
        e->im = it;
    }
    double dt = t - e->ta;
    if (dt < ETA_MIN_S)
        return -1;
    double rate = (l - e->la) / dt; /* decades per second: < 0 while it converges */
    double eta = rate < 0 ? (lt - l) / rate : -1;
    /* the cap: a solve that converges slower than its iterations run out
       ends at maxiter, so no ETA may reach past it */
    if (maxiter > 0 && it > e->ia) {
        double left = (double)(maxiter > it ? maxiter - it : 0) * dt / (double)(it - e->ia);
        if (eta < 0 || left < eta)
            eta = left;
    }
    return eta;
}
