/*
 * test_admission.c: the estimates and verdicts of net/admission.c on
 * made-up machines (issue 17): the default limits from memory; a declared
 * count never taken beyond what the text backs; the host's total (never)
 * and free memory (wait); devices: one per rank when it fits, more per rank
 * when one is too small in memory or in its largest allocation, never when
 * all of a rank's devices are too small, with the figures; the devices a
 * rank uses for each --device spec.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "net/admission.h"

#define MB ((uint64_t)1 << 20)
#define GB ((uint64_t)1 << 30)

static json_t *device(const char *type, uint64_t mem, uint64_t alloc)
{
    return json_pack("{s:s, s:I, s:I}", "type", type, "global_mem_bytes", (json_int_t)mem,
                     "max_alloc_bytes", (json_int_t)alloc);
}

/* ranks x (ngpu GPUs of gpu_mem, one CPU of 64 GB), all with spec */
static json_t *cluster(int ranks, int ngpu, uint64_t gpu_mem, uint64_t gpu_alloc, const char *spec)
{
    json_t *per = json_array();
    for (int r = 0; r < ranks; r++) {
        json_t *devs = json_array();
        for (int g = 0; g < ngpu; g++)
            json_array_append_new(devs, device("gpu", gpu_mem, gpu_alloc));
        json_array_append_new(devs, device("cpu", 64 * GB, 16 * GB));
        json_array_append_new(per, json_pack("{s:i, s:i, s:s, s:o}", "rank", r, "local_rank", r,
                                             "device_spec", spec, "devices", devs));
    }
    return json_pack("{s:i, s:o}", "ranks", ranks, "per_rank", per);
}

static mm_header coord(int64_t n, int64_t m, int64_t entries, mm_symmetry sym)
{
    mm_header h = {.layout = MM_COORDINATE,
                   .field = MM_REAL,
                   .symmetry = sym,
                   .rows = n,
                   .cols = m,
                   .entries = entries,
                   .size_line = 2};
    return h;
}

int main(void)
{
    adm_limits l;
    adm_default_limits(24 * GB, 4 * GB, &l); /* the devices bind */
    CHECK(l.max_nnz == (int64_t)(4 * GB / 24) && l.max_matrix_bytes == (uint64_t)l.max_nnz * 64);
    adm_default_limits(24 * GB, 0, &l);
    CHECK(l.max_nnz == (int64_t)(24 * GB / 2 / 40));

    char why[512];
    adm_estimate e;
    adm_machine m = {.host_total = 16 * GB, .host_available = 12 * GB, .nranks = 1};
    /* a declaration the text does not back: 4 KB of text holds 1,000 entries */
    mm_header h = coord(1000000, 1000000, 1000000000, MM_GENERAL);
    CHECK(adm_decide(&h, 4000, &m, &e, why, sizeof why) == ADM_RUN && e.entries == 1000);
    /* unknown text: the declaration, then: more than the host has */
    CHECK(adm_decide(&h, -1, &m, &e, why, sizeof why) == ADM_NEVER);
    CHECK_MSG(strstr(why, "the host has 16384 MB") && strstr(why, "1000000000 entries"), "%s", why);
    /* fits the host but not what is free now: wait */
    h = coord(10000000, 10000000, 200000000, MM_GENERAL); /* ~5.8 GB */
    m.host_available = 4 * GB;
    CHECK(adm_decide(&h, 200000000LL * 12, &m, &e, why, sizeof why) == ADM_WAIT);
    CHECK_MSG(strstr(why, "waits for memory") && strstr(why, "4096 MB are free now"), "%s", why);
    m.host_available = 12 * GB;
    CHECK(adm_decide(&h, 200000000LL * 12, &m, &e, why, sizeof why) == ADM_RUN);
    /* the bomb: 100 x 100 declaring 300 M, 2.3 GB of text: a block and the sums */
    mm_header b = coord(100, 100, 300000000, MM_GENERAL);
    CHECK(adm_decide(&b, 2343600070LL, &m, &e, why, sizeof why) == ADM_RUN);
    CHECK_MSG(e.host_bytes < 600 * MB && e.nnz == 10000, "bomb: %llu MB, nnz %lld",
              (unsigned long long)(e.host_bytes / MB), (long long)e.nnz);

    /* devices: 2 ranks, 2 GPUs of 1 GB each (256 MB per allocation) */
    m.host_total = 256 * GB;
    m.host_available = 200 * GB;
    m.nranks = 2;
    m.cluster = cluster(2, 2, GB, 256 * MB, "gpu");
    h = coord(2000000, 2000000, 10000000, MM_GENERAL); /* 10 M: 5 M per rank */
    CHECK(adm_decide(&h, 10000000LL * 20, &m, &e, why, sizeof why) == ADM_RUN &&
          e.devices_per_rank == 1);
    /* 60 M: 30 M per GPU fits 1 GB (784 MB) but its 360 MB buffer not one allocation */
    h = coord(4000000, 4000000, 60000000, MM_GENERAL);
    CHECK(adm_decide(&h, 60000000LL * 20, &m, &e, why, sizeof why) == ADM_RUN);
    CHECK_MSG(e.devices_per_rank == 2, "devices per rank %d", e.devices_per_rank);
    /* 200 M: too much for all four GPUs */
    h = coord(8000000, 8000000, 200000000, MM_GENERAL);
    CHECK(adm_decide(&h, 200000000LL * 20, &m, &e, why, sizeof why) == ADM_NEVER);
    CHECK_MSG(strstr(why, "on each of 4 devices (2 per rank)") &&
                  strstr(why, "the smallest of those devices has 1024 MB"),
              "%s", why);
    json_decref(m.cluster);
    /* the same on the CPUs (64 GB each): one per rank */
    m.cluster = cluster(2, 2, GB, 256 * MB, "cpu");
    CHECK(adm_decide(&h, 200000000LL * 20, &m, &e, why, sizeof why) == ADM_RUN &&
          e.devices_per_rank == 1);
    json_decref(m.cluster);

    /* which devices a rank takes */
    json_t *c = cluster(2, 3, GB, GB / 4, "gpu");
    uint64_t mem[16], alloc[16];
    int maxd = 0;
    CHECK(adm_cluster_devices(c, 1, mem, alloc, 16, &maxd) == 2 && maxd == 3);
    CHECK(mem[0] == GB && mem[1] == GB);
    json_decref(c);
    c = cluster(1, 2, GB, GB / 4, "2"); /* an index: the CPU */
    CHECK(adm_cluster_devices(c, 1, mem, alloc, 16, &maxd) == 1 && mem[0] == 64 * GB && maxd == 1);
    json_decref(c);
    c = cluster(1, 0, GB, GB, "gpu"); /* no GPU on the rank */
    CHECK(adm_cluster_devices(c, 1, mem, alloc, 16, &maxd) == 0);
    CHECK(adm_cluster_device_total(c) == 64 * GB);
    json_decref(c);
    return check_done("test_admission");
}
