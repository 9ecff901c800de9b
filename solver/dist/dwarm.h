/*
 * dwarm.h: the warm set's inside, for dvec.c's dsys_open and dsys_close
 * (the public side, dsys_warm_release_all and dsys_prewarm_*, is in dvec.h).
 */
#ifndef CLS_SOLVER_DWARM_H
#define CLS_SOLVER_DWARM_H

#include "dvec.h"

/* 0 when CLSOLVE_WARM=0 turned the warm set off */
int dwarm_enabled(void);
/* A warm state for p's device, precision and flags into p (its links
 * fixed); 1 if found. */
int dwarm_take(dpart *p, la_precision prec, int flags);
/* p's device state into the warm set; 0 (the caller releases it) if full
 * or the set is off. */
int dwarm_put(dpart *p, la_precision prec, int flags);
/* p's device state at the end of its use: la finished and its pool
 * cleared (no device memory of the job stays), then into the warm set
 * (a healthy state: not failed, no pending event) or released. */
void dwarm_release(dpart *p, la_precision prec, int flags, int failed);

#endif
