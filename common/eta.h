/*
 * eta.h: the time a converging solve still needs, from the rate its
 * residual falls at. The relative residual of CG falls roughly
 * geometrically, so log10 r is nearly linear in time over a few seconds:
 * the rate is taken between the newest sample and an anchor 2 to 4 s older
 * (the anchor moves up every 2 s, so the estimate follows a solve that
 * speeds up or stalls), and the time left is the distance to log10 tol at
 * that rate. Unknown (-1) in the first half second and while the residual
 * does not fall. Used by the daemon's job progress (eta_s) and by the
 * command line's progress lines.
 */
#ifndef CLS_COMMON_ETA_H
#define CLS_COMMON_ETA_H

typedef struct cls_eta {
    double ta, la; /* anchor: time (s) and log10 residual */
    double tm, lm; /* the sample that becomes the next anchor */
    int n;
} cls_eta;

void cls_eta_reset(cls_eta *e);

/* One sample: time t in seconds (any origin), relative residual r > 0.
 * Returns the seconds left to reach tol, 0 when r <= tol, or -1 when it
 * cannot be told yet. */
double cls_eta_update(cls_eta *e, double t, double r, double tol);

#endif
