/*
 * sysres.h: what the machine, and the container around the process, grant
 * it: memory (total and available) and CPUs.
 *
 * /proc/meminfo and the online CPU count describe the host. Inside a
 * container with a memory limit (cgroup v1 or v2) the OOM killer acts at
 * the cgroup's limit, not the host's: admission that read /proc/meminfo
 * admitted what the kernel then killed (issue 27, item 8). So memory is
 * the smaller of the host's and the cgroup's (its limit, and the limit
 * less what the cgroup uses without its reclaimable page cache), and CPUs
 * the smallest of the online count, the affinity mask and the CPU quota
 * (cpu.max, or cpu.cfs_quota_us over cpu.cfs_period_us), rounded up.
 *
 * Every file is opened with fopen, so tests/fault/clsfault.c can stand a
 * test's own /proc/meminfo, /proc/self/cgroup and /sys/fs/cgroup in.
 */
#ifndef CLS_COMMON_SYSRES_H
#define CLS_COMMON_SYSRES_H

#include <stdint.h>

typedef struct cls_sysres {
    uint64_t mem_total;     /* bytes: min(MemTotal, the cgroup limit); 0 unknown */
    uint64_t mem_available; /* bytes: min(MemAvailable, limit - usage); 0 unknown */
    uint64_t cgroup_limit;  /* bytes, 0 when no cgroup memory limit applies */
    int cgroup_version;     /* 1, 2, or 0 when no limit was found */
    double cpu_quota;       /* CPUs the quota allows (2.5: 250 ms per 100 ms); 0 none */
} cls_sysres;

/* Reads the figures now (they change: call it where a decision is made). */
void cls_sysres_read(cls_sysres *r);

/* CPUs to use: online CPUs, capped by the affinity mask and the quota
 * (read at the first call). */
int cls_sysres_cpus(void);

#endif
