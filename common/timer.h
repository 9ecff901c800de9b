/*
 * timer.h: a monotonic wall clock in seconds, for the times every job reports,
 * and deadlines for timed waits.
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

/* The time timeout_s from now on `clock`, for pthread_cond_timedwait (whose
 * condition variable measures on that clock: CLOCK_REALTIME unless set with
 * pthread_condattr_setclock). */
static inline struct timespec cls_deadline(clockid_t clock, double timeout_s)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    long long ns = (long long)(timeout_s * 1e9);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec += (long)(ns % 1000000000LL);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

#endif
