/*
 * timer.h: a monotonic wall clock in seconds, for the times every job reports.
 */
#ifndef CLS_COMMON_TIMER_H
#define CLS_COMMON_TIMER_H

#include <time.h>

static inline double cls_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
