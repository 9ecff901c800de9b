/*
 * host_bw.c: the host's memory bandwidth, STREAM-style, on T threads: the
 * floor that the host path around a solve (read, assembly, checks, staging)
 * is held against in docs/benchmarks.md. A pass over the arrays is cut into
 * T equal ranges, one a thread, and timed from the first thread's start to
 * the last one's end; the best of R repetitions is reported (STREAM's
 * convention), the median beside it.
 *
 *   cc -O2 -march=native -pthread bench/host_bw.c -o host_bw
 *   host_bw [MB] [THREADS] [REPS]        (2048, the CPUs, 5)
 *
 *   read   s += a[i]                   bytes read
 *   write  a[i] = x                    bytes written
 *   copy   b[i] = a[i]                 bytes read + bytes written (STREAM copy)
 *   fresh  a[i] = x on memory that no one has touched: the page faults and
 *          the kernel's zeroing that a reader's first write into a new
 *          output pays (the arrays are new mappings, never reused)
 *
 * Each line: "NAME GB/s best median". Memory is touched by the threads that
 * use it (first touch), as the reader's threads touch their output.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

enum { OP_READ, OP_WRITE, OP_COPY };
typedef double v4 __attribute__((vector_size(32)));

typedef struct {
    int op;
    double *a, *b;
    size_t lo, hi;
    double sum;
    pthread_barrier_t *bar;
} job;

static void *run(void *arg)
{
    job *j = arg;
    pthread_barrier_wait(j->bar);
    v4 s0 = {0}, s1 = {0}; /* two vectors of four: loads, not adds, set the pace */
    switch (j->op) {
    case OP_READ:
        for (size_t i = j->lo; i + 8 <= j->hi; i += 8) {
            v4 x, y;
            memcpy(&x, j->a + i, sizeof x);
            memcpy(&y, j->a + i + 4, sizeof y);
            s0 += x;
            s1 += y;
        }
        break;
    case OP_WRITE:
        for (size_t i = j->lo; i < j->hi; i++)
            j->a[i] = 1.0;
        break;
    default:
        memcpy(j->b + j->lo, j->a + j->lo, (j->hi - j->lo) * sizeof(double));
        break;
    }
    s0 += s1;
    j->sum = s0[0] + s0[1] + s0[2] + s0[3];
    return NULL;
}

/* one pass of op over n doubles on t threads: seconds */
static double pass(int op, double *a, double *b, size_t n, int t)
{
    pthread_t tid[1024];
    job jobs[1024];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)t + 1);
    for (int k = 0; k < t; k++) {
        jobs[k] =
            (job){op, a, b, n * (size_t)k / (size_t)t, n * (size_t)(k + 1) / (size_t)t, 0, &bar};
        pthread_create(&tid[k], NULL, run, &jobs[k]);
    }
    double t0 = now();
    pthread_barrier_wait(&bar);
    for (int k = 0; k < t; k++)
        pthread_join(tid[k], NULL);
    double s = now() - t0;
    pthread_barrier_destroy(&bar);
    volatile double sink = 0;
    for (int k = 0; k < t; k++)
        sink += jobs[k].sum;
    (void)sink;
    return s;
}

static double *map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE); /* as the reader's big arrays (common/bigmem.c) */
#endif
    return p;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void report(const char *name, double *gbps, int r)
{
    qsort(gbps, (size_t)r, sizeof *gbps, cmp);
    printf("%s GB/s %.1f %.1f\n", name, gbps[r - 1], gbps[r / 2]);
}

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 2048;
    int t = argc > 2 ? atoi(argv[2]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    if (t < 1 || t > 1024 || reps < 1 || reps > 100 || mb < 1)
        return fprintf(stderr, "usage: host_bw [MB] [THREADS 1-1024] [REPS 1-100]\n"), 2;
    size_t bytes = mb << 20, n = bytes / sizeof(double);
    double *a = map(bytes), *b = map(bytes), g[100];
    pass(OP_WRITE, a, NULL, n, t); /* first touch, by the threads that use it */
    pass(OP_WRITE, b, NULL, n, t);
    printf("threads %d, %zu MB per array, best and median of %d\n", t, mb, reps);
    for (int r = 0; r < reps; r++)
        g[r] = bytes / pass(OP_READ, a, NULL, n, t) / 1e9;
    report("read", g, reps);
    for (int r = 0; r < reps; r++)
        g[r] = bytes / pass(OP_WRITE, a, NULL, n, t) / 1e9;
    report("write", g, reps);
    for (int r = 0; r < reps; r++)
        g[r] = 2.0 * bytes / pass(OP_COPY, a, b, n, t) / 1e9;
    report("copy", g, reps);
    for (int r = 0; r < reps; r++) {
        double *f = map(bytes);
        g[r] = bytes / pass(OP_WRITE, f, NULL, n, t) / 1e9;
        munmap(f, bytes);
    }
    report("fresh", g, reps);
    return 0;
}
