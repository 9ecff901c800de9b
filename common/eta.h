/*
 * eta.h: the time a converging solve still needs, from the rate its
 * residual falls at. The relative residual of CG falls roughly
 * geometrically, so log10 r is nearly linear in time over a few seconds:
 * the rate is taken between the newest sample and an anchor 2 to 4 s older
 * (the anchor moves up every 2 s, so the estimate follows a solve that
 * speeds up or stalls), and the time left is the distance to log10 tol at
 * that rate. Unknown (-1) in the first half second and while the residual
 * does not fall. An iteration cap bounds it: never more than the time the
 * iterations left to maxiter take at the iteration rate of the same
 * window (the solve stops there, converged or not), and that time alone
 * while the residual's rate tells nothing. Used by the daemon's job
 * progress (eta_s) and by the command line's progress lines.
 */
#ifndef CLS_COMMON_ETA_H
#define CLS_COMMON_ETA_H

#include <stdint.h>

typedef struct cls_eta {
    double ta, la;  /* anchor: time (s) and log10 residual */
    double tm, lm;  /* the sample that becomes the next anchor */
    int64_t ia, im; /* their iterations */
    int n;
} cls_eta;

void cls_eta_reset(cls_eta *e);

/* One sample: time t in seconds (any origin), iteration it, relative
 * residual r > 0; maxiter <= 0: no cap known. Returns the seconds left
 * until the solve ends (tol reached or maxiter run), 0 when r <= tol, or
 * -1 when it cannot be told yet. */
double cls_eta_update(cls_eta *e, double t, int64_t it, int64_t maxiter, double r, double tol);

#endif
