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

double cls_eta_update(cls_eta *e, double t, double r, double tol)
{
    if (!(r > 0) || !isfinite(r) || !(tol > 0))
        return -1;
    double l = log10(r), lt = log10(tol);
    if (l <= lt)
        return 0;
    if (e->n == 0) {
        e->ta = e->tm = t;
        e->la = e->lm = l;
        e->n = 1;
        return -1;
    }
    if (t - e->tm >= ETA_WINDOW_S) { /* slide: the middle sample becomes the anchor */
        e->ta = e->tm;
        e->la = e->lm;
        e->tm = t;
        e->lm = l;
    }
    double dt = t - e->ta;
    if (dt < ETA_MIN_S)
        return -1;
    double rate = (l - e->la) / dt; /* decades per second: < 0 while it converges */
    if (!(rate < 0))
        return -1;
    return (lt - l) / rate;
}
