/*
 * check.h: the few assertions the C unit tests need. A failed CHECK prints
 * file, line and the expression and marks the test failed; the test goes on,
 * so one run reports every broken case. CHECK_SKIP exits 77 (ctest: skipped).
 */
#ifndef CLS_TESTS_CHECK_H
#define CLS_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int check_failures = 0;
static int check_count = 0;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        check_count++;                                                                 \
        if (!(cond)) {                                                                 \
            check_failures++;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
        }                                                                              \
    } while (0)

#define CHECK_MSG(cond, ...)                                                           \
    do {                                                                               \
        check_count++;                                                                 \
        if (!(cond)) {                                                                 \
            check_failures++;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                              \
            fputc('\n', stderr);                                                       \
        }                                                                              \
    } while (0)

#define CHECK_SKIP(...)                                                                \
    do {                                                                               \
        fprintf(stderr, "SKIP: ");                                                     \
        fprintf(stderr, __VA_ARGS__);                                                  \
        fputc('\n', stderr);                                                           \
        exit(77);                                                                      \
    } while (0)

static inline int check_done(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}

/* Small deterministic generator for test inputs; seeds come from the clock
 * (printed) unless CLSOLVE_TEST_SEED is set, so every run is a fresh input
 * and any failure can be replayed. */
static unsigned long long check_rng_state = 88172645463325252ULL;
static inline unsigned long long check_rand(void)
{
    check_rng_state ^= check_rng_state << 13;
    check_rng_state ^= check_rng_state >> 7;
    check_rng_state ^= check_rng_state << 17;
    return check_rng_state;
}
static inline double check_uniform(void) /* [0, 1) */
{
    return (double)(check_rand() >> 11) * (1.0 / 9007199254740992.0);
}
#include <time.h>
static inline void check_seed(const char *name)
{
    const char *s = getenv("CLSOLVE_TEST_SEED");
    unsigned long long seed = s ? strtoull(s, NULL, 10) : (unsigned long long)time(NULL);
    check_rng_state = seed * 2685821657736338717ULL + 1;
    if (!check_rng_state)
        check_rng_state = 1;
    printf("%s: seed %llu (CLSOLVE_TEST_SEED to replay)\n", name, seed);
}

#endif
