/*
 * admission.c: estimates, limits and the verdict (see admission.h).
 *
 * The cost model, per stored entry and per row, is deliberately coarse and
 * on the high side:
 *   rank 0: mm_read_memory_estimate (16 B of triplets and 12 B of CSR per
 *           entry, 24 B for symmetric storage, row pointers, the dense sums,
 *           two 64 MiB read buffers) + 12 B per entry of its own parts'
 *           copies + 32 B per row of vectors;
 *   device: 24 B per entry of its part (values, columns, one format copy)
 *           + 80 B per row of its part (ten vectors of the method) + 64 MiB
 *           (programs, reductions, the pool's slack), within 90 % of its
 *           global memory; its largest buffer (12 B per entry: a padded
 *           format's values) within its largest allocation.
 */
#include "admission.h"

#include "../common/sysres.h"
#include "../physics/estimate.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ADM_MB (1024.0 * 1024.0)
#define ADM_HOST_SLACK ((uint64_t)256 << 20) /* left free on rank 0's host */

void adm_memory(uint64_t *total, uint64_t *available)
{
    cls_sysres r;
    cls_sysres_read(&r);
    *total = r.mem_total;
    *available = r.mem_available;
}

void adm_default_limits(uint64_t host_total, uint64_t devices_total, adm_limits *out)
{
    /* reading: 40 B per entry at most (symmetric), in half the host */
    int64_t by_host = host_total ? (int64_t)(host_total / 2 / 40) : INT64_MAX;
    int64_t by_dev = devices_total ? (int64_t)(devices_total / 24) : INT64_MAX;
    int64_t n = by_host < by_dev ? by_host : by_dev;
    if (n == INT64_MAX)
        n = (int64_t)1 << 31;
    if (n < ((int64_t)1 << 20))
        n = (int64_t)1 << 20;
    out->max_nnz = n;
    uint64_t b = (uint64_t)n * 64u;
    out->max_matrix_bytes = b < ((uint64_t)1 << 30) ? ((uint64_t)1 << 30) : b;
}

/* 1 when device d fits spec (auto, cpu, gpu, accelerator; index lists are
 * handled by the caller). */
static int adm_class_fits(const char *spec, json_t *d)
{
    const char *type = json_string_value(json_object_get(d, "type"));
    if (!spec || !strcmp(spec, "auto"))
        return 1;
    return type && !strcasecmp(spec, type); /* the cluster writes "CPU", "GPU" (cluster.c) */
}

/* A rank's candidate devices from its entry of the cluster (per_rank[r]):
 * those of its --device index list, or those of its class; the rank's
 * node-local index in *local (it picks among them by it, as ocl.c does). */
static int adm_rank_candidates(json_t *rk, json_t **cand, int *local)
{
    json_t *devs = json_object_get(rk, "devices");
    const char *spec = json_string_value(json_object_get(rk, "device_spec"));
    int nc = 0;
    *local = (int)json_integer_value(json_object_get(rk, "local_rank"));
    if (spec && isdigit((unsigned char)spec[0])) { /* an index list: those devices */
        const char *p = spec;
        while (*p && nc < ADM_MAX_DEVICES) {
            char *end;
            long i = strtol(p, &end, 10);
            if (end == p)
                break;
            json_t *d = json_array_get(devs, (size_t)i);
            if (d)
                cand[nc++] = d;
            p = *end == ',' ? end + 1 : end;
            if (!*end)
                break;
        }
        return nc;
    }
    size_t i;
    json_t *d;
    json_array_foreach(devs, i, d) if (nc < ADM_MAX_DEVICES && adm_class_fits(spec, d)) cand[nc++] =
        d;
    return nc;
}

int adm_cluster_devices(json_t *cluster, int per_rank, uint64_t *mem, uint64_t *alloc, int cap,
                        int *max_per_rank)
{
    json_t *ranks = json_object_get(cluster, "per_rank");
    size_t nr = json_array_size(ranks), r;
    json_t *rk;
    int filled = 0;
    *max_per_rank = 0;
    if (per_rank < 1)
        per_rank = 1;
    json_array_foreach(ranks, r, rk)
    {
        json_t *cand[ADM_MAX_DEVICES];
        int local;
        int nc = adm_rank_candidates(rk, cand, &local);
        if (nc > *max_per_rank)
            *max_per_rank = nc;
        if (nc == 0)
            return 0; /* a rank without a device: nothing to estimate with */
        for (int k = 0; k < per_rank; k++) {
            size_t slot = r * (size_t)per_rank + (size_t)k;
            if (slot >= (size_t)cap)
                return filled;
            json_t *d = cand[((size_t)local * (size_t)per_rank + (size_t)k) % (size_t)nc];
            uint64_t g = (uint64_t)json_integer_value(json_object_get(d, "global_mem_bytes"));
            json_t *ma = json_object_get(d, "max_alloc_bytes");
            mem[slot] = g;
            /* OpenCL promises at least a quarter of the global memory */
            alloc[slot] = json_is_integer(ma) ? (uint64_t)json_integer_value(ma) : g / 4;
        }
        filled++;
    }
    return nr ? filled : 0;
}

uint64_t adm_cluster_device_total(json_t *cluster)
{
    uint64_t total = 0;
    size_t r, i;
    json_t *rk, *d;
    json_array_foreach(json_object_get(cluster, "per_rank"), r, rk)
        json_array_foreach(json_object_get(rk, "devices"), i, d) total +=
        (uint64_t)json_integer_value(json_object_get(d, "global_mem_bytes"));
    return total;
}

adm_verdict adm_decide(const mm_header *h, int64_t text_bytes, const adm_machine *m,
                       adm_estimate *e, char *why, size_t cap)
{
    memset(e, 0, sizeof *e);
    e->devices_per_rank = 1;
    if (why && cap)
        why[0] = '\0';
    int array = h->layout == MM_ARRAY;
    int64_t entries = h->entries;
    if (text_bytes >= 0 && text_bytes / (array ? 2 : 4) < entries)
        entries = text_bytes / (array ? 2 : 4); /* what the text can hold */
    int sym = h->symmetry != MM_GENERAL;
    int64_t nnz = sym ? 2 * entries : entries;
    int64_t cells = h->rows * h->cols;
    if (!array && cells <= MM_DENSE_MAX_CELLS && nnz > cells)
        nnz = cells; /* duplicates summed: no more than the cells */
    e->entries = entries;
    e->nnz = nnz;
    int nranks = m->nranks > 0 ? m->nranks : 1;
    e->host_bytes = mm_read_memory_estimate(h, entries) + 12u * (uint64_t)nnz / (uint64_t)nranks +
                    32u * (uint64_t)h->rows;
    if (m->host_total && e->host_bytes > m->host_total / 10 * 9) {
        snprintf(why, cap,
                 "needs about %.0f MB of memory on rank 0's host to read and set up (%lld "
                 "entries, %lld rows); the host has %.0f MB",
                 (double)e->host_bytes / ADM_MB, (long long)entries, (long long)h->rows,
                 (double)m->host_total / ADM_MB);
        return ADM_NEVER;
    }
    /* the devices: one per rank, else as many per rank as it takes */
    if (m->cluster) {
        int maxd = 0;
        uint64_t mem[ADM_MAX_DEVICES * 4], alloc[ADM_MAX_DEVICES * 4];
        int fits = 0;
        uint64_t need = 0, big = 0, smallest = 0, smallest_alloc = 0;
        int d = 1;
        for (d = 1; !fits; d++) {
            int got = adm_cluster_devices(m->cluster, d, mem, alloc, ADM_MAX_DEVICES * 4, &maxd);
            if (got <= 0 || d > maxd)
                break;
            int64_t parts = (int64_t)got * d;
            int64_t pn = (nnz + parts - 1) / parts, pr = (h->rows + parts - 1) / parts;
            need = 24u * (uint64_t)pn + 80u * (uint64_t)pr + ((uint64_t)64 << 20);
            big = 12u * (uint64_t)pn;
            smallest = UINT64_MAX;
            smallest_alloc = UINT64_MAX;
            for (int k = 0; k < got * d; k++) {
                if (mem[k] < smallest)
                    smallest = mem[k];
                if (alloc[k] < smallest_alloc)
                    smallest_alloc = alloc[k];
            }
            fits = need <= smallest / 10 * 9 && big <= smallest_alloc;
            if (fits) {
                e->devices_per_rank = d;
                e->device_bytes = need;
                e->largest_buffer = big;
            }
        }
        if (!fits && maxd > 0) {
            snprintf(why, cap,
                     "needs about %.0f MB on each of %d device%s (%d per rank), its largest buffer "
                     "%.0f MB; the smallest of those devices has %.0f MB, %.0f MB in one "
                     "allocation",
                     (double)need / ADM_MB, nranks * maxd, nranks * maxd == 1 ? "" : "s", maxd,
                     (double)big / ADM_MB, (double)smallest / ADM_MB,
                     (double)smallest_alloc / ADM_MB);
            e->device_bytes = need;
            e->largest_buffer = big;
            return ADM_NEVER;
        }
    }
    if (m->host_available && e->host_bytes + ADM_HOST_SLACK > m->host_available) {
        snprintf(why, cap,
                 "waits for memory: needs about %.0f MB on rank 0's host, %.0f MB are free now",
                 (double)e->host_bytes / ADM_MB, (double)m->host_available / ADM_MB);
        return ADM_WAIT;
    }
    return ADM_RUN;
}

/* Rank 0's device as adm_cluster_devices picks it with one device per
 * rank: its JSON (borrowed), or NULL when the cluster says nothing. */
static json_t *adm_rank0_device(json_t *cluster)
{
    json_t *cand[ADM_MAX_DEVICES];
    int local;
    int nc =
        adm_rank_candidates(json_array_get(json_object_get(cluster, "per_rank"), 0), cand, &local);
    return nc ? cand[(size_t)local % (size_t)nc] : NULL;
}

adm_verdict adm_decide_physics(const char *kind, const physics_estimate *e, const adm_machine *m,
                               uint64_t room, int *what, char *why, size_t cap)
{
    *what = ADM_NEED_NONE;
    if (why && cap)
        why[0] = '\0';
    json_t *dev = m->cluster ? adm_rank0_device(m->cluster) : NULL;
    const char *type = json_string_value(json_object_get(dev, "type"));
    /* cluster.c writes the type as ocl_type_name does: "CPU" */
    int on_host = !dev || (type && !strcasecmp(type, "cpu")); /* unknown: count it there too */
    uint64_t host = e->host_bytes + (on_host ? e->device_bytes : 0);
    char what_items[160];
    snprintf(what_items, sizeof what_items, "%lld %s%s%lld frame%s", (long long)e->items,
             !strcmp(kind, "nbody")     ? "bodies"
             : !strcmp(kind, "springs") ? "particles"
             : !strcmp(kind, "deform")  ? "basis rows"
                                        : "vertices",
             ", ", (long long)e->frames, e->frames == 1 ? "" : "s");
    if (m->host_total && host > m->host_total / 10 * 9) {
        *what = ADM_NEED_MEMORY;
        snprintf(why, cap,
                 "needs about %.0f MB of memory on rank 0's host (%s %s: %.0f MB for the run%s); "
                 "the host has %.0f MB",
                 (double)host / ADM_MB, kind, what_items, (double)e->host_bytes / ADM_MB,
                 on_host ? ", the rest for the CPU device's buffers" : "",
                 (double)m->host_total / ADM_MB);
        return ADM_NEVER;
    }
    uint64_t g = dev ? (uint64_t)json_integer_value(json_object_get(dev, "global_mem_bytes")) : 0;
    if (!on_host && g && e->device_bytes > g / 10 * 9) {
        *what = ADM_NEED_MEMORY;
        snprintf(why, cap, "needs about %.0f MB on its device (%s %s); the device has %.0f MB",
                 (double)e->device_bytes / ADM_MB, kind, what_items, (double)g / ADM_MB);
        return ADM_NEVER;
    }
    if (e->output_bytes > room) {
        *what = ADM_NEED_DISK;
        snprintf(why, cap,
                 "writes about %.1f MB of output (%s %s); the data directory's disk has %.1f MB "
                 "free above the reserve (--disk-reserve)",
                 (double)e->output_bytes / ADM_MB, kind, what_items, (double)room / ADM_MB);
        return ADM_NEVER;
    }
    if (m->host_available && host + ADM_HOST_SLACK > m->host_available) {
        snprintf(why, cap,
                 "waits for memory: needs about %.0f MB on rank 0's host, %.0f MB are free now",
                 (double)host / ADM_MB, (double)m->host_available / ADM_MB);
        return ADM_WAIT;
    }
    return ADM_RUN;
}

static pthread_mutex_t adm_mu = PTHREAD_MUTEX_INITIALIZER;
static adm_limits adm_cur = {.max_nnz = (int64_t)1 << 31, .max_matrix_bytes = (uint64_t)1 << 40};

void adm_limits_set(const adm_limits *l)
{
    pthread_mutex_lock(&adm_mu);
    adm_cur = *l;
    pthread_mutex_unlock(&adm_mu);
}

adm_limits adm_limits_get(void)
{
    pthread_mutex_lock(&adm_mu);
    adm_limits l = adm_cur;
    pthread_mutex_unlock(&adm_mu);
    return l;
}
