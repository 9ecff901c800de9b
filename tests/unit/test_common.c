/*
 * test_common.c: common/numfmt (shortest round-trip doubles, in JSON text
 * too; cls_fmt_g17 byte for byte against snprintf's %.17g on edge cases,
 * ties and a million random doubles), common/eta (the time left, bounded by the iteration cap) and
 * common/affinity (a rank bound to one CPU by its launcher takes its share
 * of the node; CLSOLVE_BINDING=keep and a process not under mpirun keep
 * their masks).
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_COUNT */
#include <float.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/affinity.h"
#include "common/eta.h"
#include "common/numfmt.h"

/* cls_fmt_g17(v) against snprintf's "%.17g": the same bytes */
static int g17_same(double v)
{
    char want[40], got[40];
    snprintf(want, sizeof want, "%.17g", v);
    memset(got, '#', sizeof got);
    char *e = cls_fmt_g17(got, v);
    int untouched = 1; /* the contract: 25 bytes at most, NUL included */
    for (size_t i = 25; i < sizeof got; i++)
        untouched &= got[i] == '#';
    *e = '\0';
    if (strcmp(want, got) == 0 && (size_t)(e - got) <= 24 && untouched)
        return 1;
    static int shown;
    if (shown++ < 10)
        fprintf(stderr, "cls_fmt_g17(%a): '%s', printf: '%s'\n", v, got, want);
    return 0;
}

static uint64_t g17_rng = 0x9e3779b97f4a7c15ull;
static uint64_t g17_next(void) /* xorshift64* */
{
    g17_rng ^= g17_rng >> 12;
    g17_rng ^= g17_rng << 25;
    g17_rng ^= g17_rng >> 27;
    return g17_rng * 2685821657736338717ull;
}

static void g17(void)
{
    const double edge[] = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.1,
                           -0.1,
                           1.0 / 3,
                           2.0 / 3,
                           6.0,
                           -6.0,
                           0.5,
                           1e-11,
                           9.9999999999999994e-12,
                           1.0000000000000001e-11,
                           1e-5,
                           1e-4,
                           9.9999999999999991e-5,
                           0.001,
                           123456.789,
                           1e15,
                           1e16,
                           9999999999999998.0,
                           99999999999999984.0,
                           1e17,
                           1.2345678901234567e16,
                           1234567890123456.25, /* a tie: 17 digits end in 2, kept */
                           1234567890123456.75, /* a tie: rounds up to ...68 */
                           1234567890123455.25,
                           4503599627370495.5,
                           0.30000000000000004,
                           5e-324,
                           DBL_MIN,
                           DBL_MAX,
                           -DBL_MAX,
                           HUGE_VAL,
                           -HUGE_VAL,
                           NAN,
                           3.0e-300,
                           7.0e300};
    int bad = 0;
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        bad += !g17_same(edge[i]);
    /* powers of ten and two and their neighbours */
    for (int k = -25; k <= 25; k++) {
        double t = pow(10.0, k);
        bad += !g17_same(t) + !g17_same(nextafter(t, 0)) + !g17_same(nextafter(t, INFINITY));
        bad += !g17_same(-t * 3);
    }
    for (int k = -70; k <= 70; k++) {
        double t = ldexp(1.0, k);
        bad += !g17_same(t) + !g17_same(nextafter(t, 0)) + !g17_same(nextafter(t, INFINITY));
    }
    /* exact ties at the 17th digit (18 significant digits ending in 5):
     * 16-digit integers plus a quarter or three quarters (exact below
     * 2^51); d + j 2^-17 (one integer digit, 17 fractional ones ending in 5
     * for odd j); j 2^-18 in [0.1, 1) and j 2^-19 in [0.01, 0.1) (E < 0) */
    for (int i = 0; i < 20000; i++) {
        uint64_t n = 1000000000000000ull + g17_next() % 1200000000000000ull;
        bad += !g17_same((double)n + 0.25) + !g17_same((double)n + 0.75);
        uint64_t j = g17_next() % (1u << 17) | 1;
        bad += !g17_same((double)(1 + i % 9) + ldexp((double)j, -17));
        uint64_t j18 = (26215 + g17_next() % ((1u << 18) - 26215)) | 1;
        bad += !g17_same(ldexp((double)j18, -18));
        uint64_t j19 = (5243 + g17_next() % (52428 - 5243)) | 1;
        bad += !g17_same(-ldexp((double)j19, -19));
    }
    bad += !g17_same(1.00000762939453125); /* 1 + 2^-17: ...312|5 stays ...312 */
    {
        char b[32];
        *cls_fmt_g17(b, 1.00000762939453125) = '\0';
        CHECK_MSG(strcmp(b, "1.0000076293945312") == 0, "1 + 2^-17 as %s", b);
    }
    /* random bit patterns over the whole range, and random exponents where
     * the fast path works (|v| from 1e-13 to 1e18) */
    for (int i = 0; i < 300000; i++) {
        uint64_t b = g17_next();
        double v;
        memcpy(&v, &b, sizeof v);
        bad += !g17_same(v);
    }
    for (int i = 0; i < 700000; i++) {
        uint64_t b = g17_next();
        uint64_t e = 1023 - 44 + (b >> 11) % (44 + 60); /* 2^-44 .. 2^60 */
        b = (b & ((1ull << 52) - 1)) | (e << 52) | (i & 1 ? 1ull << 63 : 0);
        double v;
        memcpy(&v, &b, sizeof v);
        bad += !g17_same(v);
    }
    CHECK_MSG(bad == 0, "cls_fmt_g17 differs from %%.17g on %d values", bad);
}

static void numfmt(void)
{
    char b[64];
    const double vs[] = {1e-12, 0.1, 1.0 / 3, 1e-8, 123456.789, 2.0 / 3e300, 5e-324, -0.0, 1e300};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
        cls_fmt_double(b, sizeof b, vs[i]);
        CHECK_MSG(strtod(b, NULL) == vs[i], "%s does not read back as %.17g", b, vs[i]);
    }
    cls_fmt_double(b, sizeof b, 1e-12);
    CHECK_MSG(!strcmp(b, "1e-12"), "1e-12 as %s", b);
    cls_fmt_double(b, sizeof b, 0.1);
    CHECK_MSG(!strcmp(b, "0.1"), "0.1 as %s", b);

    /* reals shortened, still reals; integers and strings untouched */
    char j[] = "{\"tol\": 9.9999999999999998e-13, \"x\": [0.10000000000000001, 1.0, -2.5e+300, "
               "12345678901234567890], \"s\": \"0.10000000000000001 \\\" 9.9999999999999998e-13\", "
               "\"r\": 0.33333333333333331}";
    cls_json_shorten(j);
    const char *want = "{\"tol\": 1e-12, \"x\": [0.1, 1.0, -2.5e+300, 12345678901234567890], "
                       "\"s\": \"0.10000000000000001 \\\" 9.9999999999999998e-13\", "
                       "\"r\": 0.3333333333333333}";
    CHECK_MSG(!strcmp(j, want), "\n got  %s\n want %s", j, want);
    CHECK(cls_json_shorten(NULL) == NULL);
    /* a text shortened once is left as it is (a stored record served again) */
    cls_json_shorten(j);
    CHECK_MSG(!strcmp(j, want), "twice:\n got  %s\n want %s", j, want);
}

/* a solve that gains a decade every 10 s at 100 iterations a second */
static void eta(void)
{
    cls_eta e;
    cls_eta_reset(&e);
    double last = -1, capped = -1;
    for (int s = 0; s <= 40; s++) {
        double t = s * 0.5, r = pow(10, -t / 10);
        int64_t it = (int64_t)(t * 100);
        last = cls_eta_update(&e, t, it, 0, r, 1e-8);
    }
    /* at t = 20 s, r = 1e-2: six decades left, 60 s */
    CHECK_MSG(fabs(last - 60) < 1, "uncapped ETA %g, want 60", last);

    cls_eta_reset(&e);
    for (int s = 0; s <= 40; s++) {
        double t = s * 0.5, r = pow(10, -t / 10);
        capped = cls_eta_update(&e, t, (int64_t)(t * 100), 2500, r, 1e-8);
    }
    /* 2000 iterations run, 500 left of the cap: 5 s, not 60 */
    CHECK_MSG(fabs(capped - 5) < 0.1, "ETA %g past --maxiter 2500, want 5", capped);

    /* a residual that does not fall: the time to the cap alone */
    cls_eta_reset(&e);
    double flat = -1, flat_nocap = 0;
    for (int s = 0; s <= 8; s++) {
        flat = cls_eta_update(&e, s * 0.5, s * 50, 1000, 1e-3, 1e-8);
    }
    cls_eta_reset(&e);
    for (int s = 0; s <= 8; s++)
        flat_nocap = cls_eta_update(&e, s * 0.5, s * 50, 0, 1e-3, 1e-8);
    CHECK_MSG(fabs(flat - 6) < 0.1, "stalled ETA %g, want 6 (600 iterations at 100/s)", flat);
    CHECK_MSG(flat_nocap < 0, "stalled ETA without a cap %g, want unknown", flat_nocap);
    /* at the cap: nothing left */
    cls_eta_reset(&e);
    double at = -1;
    for (int s = 0; s <= 4; s++)
        at = cls_eta_update(&e, s * 0.5, 1000 + s, 1000, pow(10, -s * 0.1), 1e-8);
    CHECK_MSG(at == 0, "ETA %g at the cap, want 0", at);
}

/* binds the process to CPU `cpu` alone; returns its mask's CPU count after
 * cls_affinity_share ran with the given launcher variables (NULL: unset) */
static int share_from_one(int cpu, const char *local_rank, const char *local_size,
                          const char *binding, int *widened, char *msg, size_t cap)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return -1;
    unsetenv("MPI_LOCALRANKID");
    unsetenv("MPI_LOCALNRANKS");
    if (local_rank) {
        setenv("OMPI_COMM_WORLD_LOCAL_RANK", local_rank, 1);
        setenv("OMPI_COMM_WORLD_LOCAL_SIZE", local_size, 1);
    } else {
        unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
        unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    }
    if (binding)
        setenv("CLSOLVE_BINDING", binding, 1);
    else
        unsetenv("CLSOLVE_BINDING");
    *widened = cls_affinity_share(msg, cap);
    cpu_set_t now;
    CPU_ZERO(&now);
    sched_getaffinity(0, sizeof now, &now);
    return CPU_COUNT(&now);
}

static void affinity(void)
{
    cpu_set_t all;
    CPU_ZERO(&all);
    if (sched_getaffinity(0, sizeof all, &all) != 0)
        return;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (CPU_COUNT(&all) < 2 || CPU_COUNT(&all) != online) {
        printf("affinity: %d of %ld CPUs allowed: the widening is not testable here\n",
               CPU_COUNT(&all), online);
        return;
    }
    char msg[320];
    int w;
    /* mpirun -np 1's core binding: the rank takes the node */
    int n = share_from_one(0, "0", "1", NULL, &w, msg, sizeof msg);
    CHECK_MSG(w == 1 && n == online, "one rank bound to CPU 0: widened %d, %d CPUs of %ld", w, n,
              online);
    CHECK_MSG(strstr(msg, "was bound to CPUs 0 by its launcher") != NULL, "message: %s", msg);
    /* mpirun -np 2: local rank 1 takes the upper half (on 2 CPUs a half
     * is the one CPU it has: kept) */
    n = share_from_one(0, "1", "2", NULL, &w, msg, sizeof msg);
    cpu_set_t now;
    CPU_ZERO(&now);
    sched_getaffinity(0, sizeof now, &now);
    if (online - online / 2 > 1)
        CHECK_MSG(w == 1 && n == online - online / 2 && CPU_ISSET((int)online - 1, &now) &&
                      !CPU_ISSET(0, &now),
                  "rank 1 of 2: widened %d, %d CPUs: %s", w, n, msg);
    else
        CHECK_MSG(w == 0 && n == 1, "rank 1 of 2 on %ld CPUs: widened %d, %d CPUs", online, w, n);
    /* kept: CLSOLVE_BINDING=keep, no launcher, a mask as wide as the share */
    n = share_from_one(0, "0", "1", "keep", &w, msg, sizeof msg);
    CHECK_MSG(w == 0 && n == 1, "CLSOLVE_BINDING=keep: widened %d, %d CPUs", w, n);
    n = share_from_one(0, NULL, NULL, NULL, &w, msg, sizeof msg);
    CHECK_MSG(w == 0 && n == 1, "not under mpirun: widened %d, %d CPUs", w, n);
    n = share_from_one(0, "0", (const char *)"999", NULL, &w, msg, sizeof msg);
    CHECK_MSG(w == 0 && n == 1 && online < 999, "a share below one CPU: widened %d, %d CPUs", w, n);
    n = share_from_one(0, "5", "2", NULL, &w, msg, sizeof msg);
    CHECK_MSG(w == 0 && n == 1, "a local rank past the size: widened %d", w);
    sched_setaffinity(0, sizeof all, &all);
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    unsetenv("CLSOLVE_BINDING");
}

int main(void)
{
    numfmt();
    g17();
    eta();
    affinity();
    printf("test_common: %d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}
