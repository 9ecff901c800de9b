/*
 * trace.h: CLSOLVE_TRACE=1 prints every traced step of a solve's set-up and
 * start to stderr, "[trace] T s (+D s) WHAT" with T since the first trace
 * of the process and D since the previous one: how the times of --json's
 * phases (docs/api.md) break down, without a profiler. Off by default;
 * the check of the variable is made once.
 */
#ifndef CLS_COMMON_TRACE_H
#define CLS_COMMON_TRACE_H

void cls_trace(const char *what);
/* 1 when CLSOLVE_TRACE is on: a step that sums its own figures (the staged
 * upload's fill and wait) formats them only then */
int cls_trace_on(void);

#endif
