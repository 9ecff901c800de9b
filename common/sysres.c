/*
 * sysres.c: the host's and the cgroup's memory and CPU figures (design in
 * sysres.h). Plain text files, each read whole with fopen; a file that is
 * missing or unreadable means "no limit there", never an error.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "sysres.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SYSRES_CG "/sys/fs/cgroup"

/* the first line of a file; 0 when it cannot be read */
static int sysres_line(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(out, (int)cap, f) != NULL;
    fclose(f);
    if (ok)
        out[strcspn(out, "\n")] = '\0';
    return ok;
}

/* a number file ("max", or a limit near 2^63 as cgroup v1 writes "none",
 * read as 0: no limit) */
static uint64_t sysres_number(const char *path)
{
    char line[64];
    if (!sysres_line(path, line, sizeof line) || !strncmp(line, "max", 3))
        return 0;
    char *end;
    unsigned long long v = strtoull(line, &end, 10);
    if (end == line || v >= ((unsigned long long)1 << 62))
        return 0;
    return (uint64_t)v;
}

/* The number after `key` and `sep` on a line of a "key value" file
 * (memory.stat: sep ' '; /proc/meminfo: sep ':', the value in kB) */
static uint64_t sysres_keyed(const char *path, const char *key, char sep)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    size_t n = strlen(key);
    uint64_t v = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == sep) {
            v = strtoull(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

/* This process's cgroup path for a v1 controller (ctrl "memory" or
 * "cpu") or for v2 (ctrl NULL): the path after the second ':' of its
 * line in /proc/self/cgroup. */
static int sysres_cgroup_path(const char *ctrl, char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return 0;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0'; /* line: the hierarchy id; ctrls: its controllers */
        const char *ctrls = c1 + 1;
        if (!ctrl) {
            found = !strcmp(line, "0") && !*ctrls;
        } else { /* a comma-separated list: "cpu,cpuacct" */
            size_t n = strlen(ctrl);
            for (const char *p = ctrls; *p && !found; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
                found = !strncmp(p, ctrl, n) && (p[n] == ',' || !p[n]);
        }
        if (found)
            snprintf(out, cap, "%s", c2 + 1);
    }
    fclose(f);
    return found;
}

/* The smallest of `file` over dir/path and its ancestors up to dir (a
 * limit set higher up binds too); *at: the directory it was found in. */
static uint64_t sysres_min_up(const char *dir, const char *cgpath, const char *file, char *at,
                              size_t cap)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", cgpath);
    uint64_t best = 0;
    for (;;) {
        char f[1400];
        snprintf(f, sizeof f, "%s%s/%s", dir, strcmp(p, "/") ? p : "", file);
        uint64_t v = sysres_number(f);
        if (v && (!best || v < best)) {
            best = v;
            snprintf(at, cap, "%s%s", dir, strcmp(p, "/") ? p : "");
        }
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) {
            if (!strcmp(p, "/"))
                break;
            snprintf(p, sizeof p, "/");
            continue;
        }
        *slash = '\0';
    }
    return best;
}

static void sysres_cgroup_memory(cls_sysres *r)
{
    char cg[1024], at[1200];
    uint64_t limit = 0, usage = 0, inactive = 0;
    if (sysres_cgroup_path(NULL, cg, sizeof cg) &&
        (limit = sysres_min_up(SYSRES_CG, cg, "memory.max", at, sizeof at))) {
        char f[1300];
        snprintf(f, sizeof f, "%s/memory.current", at);
        usage = sysres_number(f);
        snprintf(f, sizeof f, "%s/memory.stat", at);
        inactive = sysres_keyed(f, "inactive_file", ' ');
        r->cgroup_version = 2;
    } else if (sysres_cgroup_path("memory", cg, sizeof cg) &&
               ((limit = sysres_min_up(SYSRES_CG "/memory", cg, "memory.limit_in_bytes", at,
                                       sizeof at)))) {
        char f[1300];
        snprintf(f, sizeof f, "%s/memory.usage_in_bytes", at);
        usage = sysres_number(f);
        snprintf(f, sizeof f, "%s/memory.stat", at);
        inactive = sysres_keyed(f, "total_inactive_file", ' ');
        r->cgroup_version = 1;
    }
    if (!limit)
        return;
    r->cgroup_limit = limit;
    uint64_t used = usage > inactive ? usage - inactive : usage;
    uint64_t avail = limit > used ? limit - used : 0;
    if (!r->mem_total || limit < r->mem_total)
        r->mem_total = limit;
    if (!r->mem_available || avail < r->mem_available)
        r->mem_available = avail;
}

static double sysres_cpu_quota(void)
{
    char cg[1024], line[128], f[1400];
    if (sysres_cgroup_path(NULL, cg, sizeof cg)) {
        snprintf(f, sizeof f, "%s%s/cpu.max", SYSRES_CG, strcmp(cg, "/") ? cg : "");
        long long q, per;
        if (sysres_line(f, line, sizeof line) && sscanf(line, "%lld %lld", &q, &per) == 2 &&
            q > 0 && per > 0)
            return (double)q / (double)per; /* "max 100000" reads no number: none */
    }
    if (sysres_cgroup_path("cpu", cg, sizeof cg)) {
        const char *d = strcmp(cg, "/") ? cg : "";
        snprintf(f, sizeof f, "%s/cpu%s/cpu.cfs_quota_us", SYSRES_CG, d);
        long long q = sysres_line(f, line, sizeof line) ? atoll(line) : -1;
        snprintf(f, sizeof f, "%s/cpu%s/cpu.cfs_period_us", SYSRES_CG, d);
        long long per = sysres_line(f, line, sizeof line) ? atoll(line) : 0;
        if (q > 0 && per > 0)
            return (double)q / (double)per;
    }
    return 0.0;
}

void cls_sysres_read(cls_sysres *r)
{
    memset(r, 0, sizeof *r);
    r->mem_total = sysres_keyed("/proc/meminfo", "MemTotal", ':') * 1024u;
    r->mem_available = sysres_keyed("/proc/meminfo", "MemAvailable", ':') * 1024u;
    sysres_cgroup_memory(r);
    r->cpu_quota = sysres_cpu_quota();
}

/* Read once: cls_parallel_for asks at every call, and the answer is a
 * handful of file reads */
static int sysres_cpus_n;
static pthread_once_t sysres_cpus_once = PTHREAD_ONCE_INIT;
static void sysres_cpus_read(void);

int cls_sysres_cpus(void)
{
    pthread_once(&sysres_cpus_once, sysres_cpus_read);
    return sysres_cpus_n;
}

static void sysres_cpus_read(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 &&
        (n < 1 || CPU_COUNT(&set) < n))
        n = CPU_COUNT(&set);
    double q = sysres_cpu_quota();
    if (q > 0 && ceil(q) < (double)n)
        n = (long)ceil(q);
    sysres_cpus_n = n > 0 ? (int)n : 1;
}
