/*
 * cpu_ws.h: what every native CPU workspace shares (la_cgn.c's CG,
 * la_pcn.c's preconditioned CG, cpu_bcg.c's block CG): the device buffers mapped for the
 * workspace's life, the process's team of threads, and the rows cut into
 * one range per member in whole blocks of CPU_WS_BLOCK rows.
 *
 * Mapping: on a CPU OpenCL device (PoCL) a buffer lives in host memory and
 * clEnqueueMapBuffer hands that memory out without a copy, so a native
 * loop works on the solve's own buffers and nothing is stored twice; they
 * are unmapped at release (x is then read back as after the kernels).
 *
 * The team: the process's, started on first use with cls_team_threads()
 * members (CLSOLVE_CPU_THREADS, else the CPUs the process may run on) and
 * kept. One workspace holds it at a time; a second solve meanwhile (the
 * daemon's lanes) runs on its caller's thread alone rather than
 * oversubscribing the cores, and so does a system too small to share
 * (under 4,096 rows a member: a wake costs more than its rows).
 *
 * Sums: every pass leaves each block's partial sums in part[block] (each
 * block summed in one order by whichever member owns it) and the blocks
 * are added in block order (cpu_ws_sum), so a solve gives the same bits on
 * any number of threads: the daemon's concurrent jobs, which run on fewer
 * threads than a lone one, give a serial run's answer bit for bit.
 */
#ifndef CLS_KERNELS_CPU_CPU_WS_H
#define CLS_KERNELS_CPU_CPU_WS_H

#include "../../common/team.h"
#include "../la.h"
#include "cpu_ops.h"

#define CPU_WS_BLOCK 4096 /* rows per block of the sums */
#define CPU_WS_MAPS 16

typedef struct cpu_ws {
    la_ctx *la;
    cls_team *team; /* held until cpu_ws_release */
    int holds_team; /* team is the process's (given back at release), not the solo one */
    int nt;         /* its members: every one takes a range (the barriers count them all) */
    int64_t n;
    int64_t *bound;    /* nt + 1 row bounds, whole blocks */
    int64_t nblk;      /* blocks of CPU_WS_BLOCK rows */
    double (*part)[4]; /* per block: up to four sums */
    cl_mem mem[CPU_WS_MAPS];
    void *ptr[CPU_WS_MAPS];
    int nmap;
} cpu_ws;

/* CLS_OK when a native loop can run on la with A: a CPU device, double
 * precision, A one square CSR block with no row offset. Otherwise
 * CLS_EINPUT and the reason in err. */
int cpu_ws_usable(const la_ctx *la, const la_csr *A, cls_error *err);
/* Maps buffer m (bytes 0: nothing) for the workspace's life. */
int cpu_ws_map(cpu_ws *w, cl_mem m, size_t bytes, cl_map_flags fl, void **out, cls_error *err);
/* Maps A's row pointers, columns and values read-only for the workspace's
 * life: *out is the CSR the native loops read (n = A's rows). */
int cpu_ws_map_csr(cpu_ws *w, const la_csr *A, cpu_csr *out, cls_error *err);
/* Takes the team (or the caller's thread alone) and cuts rows [0, n) of
 * rp into the members' ranges of about equal work. */
int cpu_ws_rows(cpu_ws *w, const int32_t *rp, int64_t n, cls_error *err);
/* the sum of component c over the blocks, in block order */
double cpu_ws_sum(const cpu_ws *w, int c);
/* Unmaps every buffer, gives the team back, frees the ranges. */
void cpu_ws_release(cpu_ws *w);
/* *out = a'b over the buffers mapped for the call, summed in blocks of
 * CPU_WS_BLOCK in block order (one thread: a solve's b'b, once): a solve
 * on the native loops then launches no kernel, which on PoCL would compile
 * one at its first launch (ksp_device.c). */
int cpu_ws_dot(la_ctx *la, const la_vec *a, const la_vec *b, double *out, cls_error *err);
/* The process's team (started on first use), and its size (0 before). */
cls_team *cpu_ws_team(void);
int cpu_ws_threads(void);

/* the member's rows [lo, hi) (lo a whole block), block by block: the
 * statement after it runs on rows [blo, bhi) with pt = part[that block] */
#define CPU_WS_BLOCKS(w, lo, hi, blo, bhi, pt)                                                     \
    for (int64_t blo = (lo), bhi = 0;                                                              \
         blo < (hi) && (bhi = blo + CPU_WS_BLOCK < (hi) ? blo + CPU_WS_BLOCK : (hi), 1);           \
         blo = bhi)                                                                                \
        for (double *pt = (w)->part[blo / CPU_WS_BLOCK]; pt; pt = NULL)

#endif
