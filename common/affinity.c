/*
 * affinity.c: a rank that its launcher bound to fewer CPUs than its share
 * of the node widens itself to that share (see affinity.h for when and why).
 *
 * The share: the node's online CPUs cut into as many contiguous slices as
 * the launcher started ranks on the node, slice `local rank`. The kernel
 * intersects the mask with the cgroup's cpuset, so a container's limit
 * stands. A mask already as wide as the share (mpirun's bind-to-socket for
 * -np > 2, a Slurm --cpus-per-task, a user's taskset under --bind-to none)
 * is kept as it is: only a narrower one is widened.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "affinity.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The node-local rank and rank count the launcher set: Open MPI's, then
 * MPICH's (Hydra); 0 when neither is there (not under mpirun). */
static int affinity_local(int *rank, int *size)
{
    static const char *const names[][2] = {
        {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
        {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const char *r = getenv(names[k][0]), *s = getenv(names[k][1]);
        if (!r || !s || !*r || !*s)
            continue;
        char *e1, *e2;
        long rv = strtol(r, &e1, 10), sv = strtol(s, &e2, 10);
        if (*e1 || *e2 || sv < 1 || rv < 0 || rv >= sv)
            continue;
        *rank = (int)rv;
        *size = (int)sv;
        return 1;
    }
    return 0;
}

/* "a-b" or "a" of a CPU set's members, in `out` */
static void affinity_list(const cpu_set_t *set, int n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int c = 0; c < n && len + 24 < cap;) {
        if (!CPU_ISSET(c, set)) {
            c++;
            continue;
        }
        int e = c;
        while (e + 1 < n && CPU_ISSET(e + 1, set))
            e++;
        len += (size_t)snprintf(out + len, cap - len, e > c ? "%s%d-%d" : "%s%d", len ? "," : "", c,
                                e);
        c = e + 1;
    }
}

int cls_affinity_share(char *msg, size_t cap)
{
    if (msg && cap)
        msg[0] = '\0';
    const char *mode = getenv("CLSOLVE_BINDING");
    if (mode && !strcmp(mode, "keep"))
        return 0;
    int rank, size;
    if (!affinity_local(&rank, &size))
        return 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online < 1 || online > CPU_SETSIZE)
        return 0;
    int n = (int)online;
    cpu_set_t now;
    CPU_ZERO(&now);
    if (sched_getaffinity(0, sizeof now, &now) != 0)
        return 0;
    int lo = (int)((long)n * rank / size), hi = (int)((long)n * (rank + 1) / size);
    if (hi <= lo)
        hi = lo + 1;
    if (CPU_COUNT(&now) >= hi - lo)
        return 0; /* as wide as its share already */
    cpu_set_t want;
    CPU_ZERO(&want);
    for (int c = lo; c < hi && c < n; c++)
        CPU_SET(c, &want);
    char before[128], after[128];
    affinity_list(&now, n, before, sizeof before);
    if (sched_setaffinity(0, sizeof want, &want) != 0)
        return 0;
    cpu_set_t got;
    CPU_ZERO(&got);
    if (sched_getaffinity(0, sizeof got, &got) != 0)
        got = want;
    affinity_list(&got, n, after, sizeof after);
    if (msg && cap)
        snprintf(msg, cap,
                 "local rank %d of %d was bound to CPUs %s by its launcher; it runs on CPUs %s, "
                 "its share of the node's %d (CLSOLVE_BINDING=keep keeps the launcher's binding)",
                 rank, size, before, after, n);
    return 1;
}
