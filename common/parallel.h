/*
 * parallel.h: a parallel for over an index range on the host's cores, for
 * the set-up loops a solve runs over every row or entry (the SELL-C-sigma
 * build, the diagonal, the true residual): on a 16-core GPU host they cost
 * seconds single-threaded at 10^8 entries, more than the solve.
 *
 * cls_parallel_for(n, grain, fn, ctx) calls fn(ctx, range, begin, end) on
 * disjoint ranges that cover [0, n), each at least `grain` long (but the
 * last), from up to CLS_THREADS threads (default: the online CPUs, at most
 * 64); the calling thread takes part. The threads are a pool started at
 * the first call (parallel.c), or, where another call holds the pool,
 * threads of the call's own. Ranges are contiguous and fixed by n and the
 * thread count, so a loop that only writes its own range's outputs gives
 * the same result on any machine. If a thread cannot be started, its
 * range runs on the caller: never an error.
 */
#ifndef CLS_COMMON_PARALLEL_H
#define CLS_COMMON_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

/* range: 0 .. cls_parallel_ranges(n, grain) - 1, in index order */
typedef void (*cls_range_fn)(void *ctx, int range, int64_t begin, int64_t end);

/* The number of ranges cls_parallel_for uses for n and grain (>= 1). */
int cls_parallel_ranges(int64_t n, int64_t grain);
void cls_parallel_for(int64_t n, int64_t grain, cls_range_fn fn, void *ctx);

/* memcpy on the host's cores, 2 MiB at least per thread: one core copies
 * 6-10 GB/s, below what a GPU's bus drains or a host's memory gives */
void cls_parallel_memcpy(void *dst, const void *src, size_t bytes);

#endif
