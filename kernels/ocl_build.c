/*
 * ocl_build.c: program builds with a binary cache (see ocl.h).
 *
 * The key is an FNV-1a 64 hash of the concatenated source, the build
 * options and the identity of the compiler (platform, device name, device
 * version, driver version) plus a format version. A cache file is
 *     magic "CLSPROG\0" | u32 format | u32 0 | u64 key | u64 len | u64 fnv(binary) | binary
 * Anything that does not match (short file, other magic/format/key/length,
 * payload hash, the driver refusing the binary) is ignored with one warning
 * on stderr and the program is built from source, then the cache entry is
 * rewritten (temp file + rename, so concurrent builders never see a
 * half-written file). Failing to write the cache is a warning, never an
 * error: the cache only saves time. In a shared context (ocl.c) a program
 * built once is kept in memory and handed out again by reference.
 *
 * A build from source takes seconds on PoCL (15 s for a first solve with a
 * cold cache), so when stderr is a terminal each one is announced, the
 * first with what it is and where it is cached (ocl_build_announce):
 * a new user otherwise watched a blank terminal (issue 30).
 */
#include "ocl.h"
#include "ocl_priv.h"
#include "ocl_gate.h"
#include "../common/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/timer.h"

/* ------------------------------------------------------------ binary cache */

#define CACHE_MAGIC "CLSPROG" /* 8 bytes with the NUL */
#define CACHE_FORMAT 1u
#define CACHE_HEADER 40 /* magic 8, format 4, pad 4, key 8, len 8, hash 8 */

static atomic_int stat_hits, stat_prebuilt, stat_source, stat_rejected, stat_write_failed;
static atomic_int warned_write;

void ocl_cache_stats(ocl_cache_stats_t *s)
{
    s->hits = atomic_load(&stat_hits);
    s->prebuilt = atomic_load(&stat_prebuilt);
    s->source_builds = atomic_load(&stat_source);
    s->rejected = atomic_load(&stat_rejected);
    s->write_failures = atomic_load(&stat_write_failed);
    s->launches = ocl_gate_launches();
}

void ocl_trace_stats(const char *when)
{
    if (!cls_trace_on())
        return;
    ocl_cache_stats_t s;
    ocl_cache_stats(&s);
    char line[256];
    snprintf(line, sizeof line,
             "%s: OpenCL programs %d from a cache (%d prebuilt), %d built from source; "
             "%lld kernel launches",
             when, s.hits, s.prebuilt, s.source_builds, s.launches);
    cls_trace(line);
}

typedef struct {
    uint64_t h;
} fnv;
static void fnv_init(fnv *f)
{
    f->h = 0xcbf29ce484222325ULL;
}
static void fnv_add(fnv *f, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        f->h ^= b[i];
        f->h *= 0x100000001b3ULL;
    }
}
static void fnv_str(fnv *f, const char *s)
{
    fnv_add(f, s, strlen(s) + 1); /* with the NUL, so fields cannot run together */
}

static uint64_t cache_key(const ocl_ctx *ctx, const char *text, const char *options)
{
    fnv f;
    fnv_init(&f);
    unsigned fmt = CACHE_FORMAT;
    fnv_add(&f, &fmt, sizeof fmt);
    fnv_str(&f, text);
    fnv_str(&f, options);
    fnv_str(&f, ctx->dev.platform_name);
    fnv_str(&f, ctx->dev.name);
    fnv_str(&f, ctx->dev.version);
    fnv_str(&f, ctx->dev.driver);
    return f.h;
}

static int mkdir_p(const char *path)
{
    char tmp[1024];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof tmp)
        return -1;
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/*
 * Cache directory into buf; 0 if there is none (no HOME), or when
 * CLSOLVE_PROGRAM_CACHE=0 turns the cache off. Off, nothing is written and
 * each program is built from source, which suits a driver that keeps its
 * own cache: PoCL keeps the program and each kernel as it is first
 * launched, while asking it for the binary, to keep it here, compiles
 * every kernel of the program. On the 2-core machine a first solve of a
 * configuration the build did not prebuild (1138_bus, float, chebyshev)
 * took 28.6 s with this cache and 3.7 s without; later runs 0.16-0.19 s
 * against 0.21-0.28 s (2026-12-03). The test suite runs without it
 * (tests/CMakeLists.txt), which spared it minutes of compiling on a fresh
 * machine; test_ocl and test_examples turn it back on to test it.
 */
static int cache_dir(char *buf, size_t cap)
{
    const char *e = getenv("CLSOLVE_PROGRAM_CACHE");
    if (e && !strcmp(e, "0"))
        return 0;
    e = getenv("CLSOLVE_CACHE_DIR");
    int w;
    if (e && *e)
        w = snprintf(buf, cap, "%s", e);
    else if ((e = getenv("XDG_CACHE_HOME")) && *e)
        w = snprintf(buf, cap, "%s/clsolve/programs", e);
    else if ((e = getenv("HOME")) && *e)
        w = snprintf(buf, cap, "%s/.cache/clsolve/programs", e);
    else
        return 0;
    return w > 0 && (size_t)w < cap;
}

/* The prebuilt programs' directory into buf: $CLSOLVE_PROGRAMS_DIR, else
 * programs/ beside the executable (the build tree: CMake's programs
 * target fills it). 0 when there is none. */
static int prebuilt_dir(char *buf, size_t cap)
{
    const char *e = getenv("CLSOLVE_PROGRAMS_DIR");
    if (e && *e) {
        int w = snprintf(buf, cap, "%s", e);
        return w > 0 && (size_t)w < cap;
    }
    char exe[900];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || (size_t)n >= sizeof exe - 1)
        return 0;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    int w = snprintf(buf, cap, "%s/programs", exe);
    if (w <= 0 || (size_t)w >= cap)
        return 0;
    struct stat sb;
    return stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* DIR/KEY.clbin of (ctx's device, text, options) in the directory `where`
 * finds; 0 when it finds none. */
static int cache_file(int (*where)(char *, size_t), const ocl_ctx *ctx, const char *text,
                      const char *options, char *buf, size_t cap)
{
    char dir[900];
    if (!where(dir, sizeof dir))
        return 0;
    uint64_t key = cache_key(ctx, text, options ? options : "");
    int w = snprintf(buf, cap, "%s/%016llx.clbin", dir, (unsigned long long)key);
    return w > 0 && (size_t)w < cap;
}

int ocl_prebuilt_path(const ocl_ctx *ctx, const char *text, const char *options, char *buf,
                      size_t cap)
{
    return cache_file(prebuilt_dir, ctx, text, options, buf, cap);
}

int ocl_cache_path(const ocl_ctx *ctx, const char *text, const char *options, char *buf, size_t cap)
{
    return cache_file(cache_dir, ctx, text, options, buf, cap);
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Reads and validates a cache file. Returns the binary (malloc'ed) or NULL;
 * *why says what was wrong when the file existed but was unusable. */
static unsigned char *cache_read(const char *path, uint64_t key, size_t *len, const char **why)
{
    *why = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL; /* a miss, not a problem */
    unsigned char hdr[CACHE_HEADER];
    unsigned char *bin = NULL;
    if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr) {
        *why = "truncated header";
        goto out;
    }
    uint32_t fmt = (uint32_t)hdr[8] | (uint32_t)hdr[9] << 8 | (uint32_t)hdr[10] << 16 |
                   (uint32_t)hdr[11] << 24;
    if (memcmp(hdr, CACHE_MAGIC, 8) != 0 || fmt != CACHE_FORMAT) {
        *why = "bad magic or format";
        goto out;
    }
    if (get_u64(hdr + 16) != key) {
        *why = "key mismatch";
        goto out;
    }
    uint64_t n = get_u64(hdr + 24);
    if (n == 0 || n > ((uint64_t)1 << 31)) {
        *why = "implausible length";
        goto out;
    }
    bin = malloc((size_t)n + 1);
    if (!bin) {
        *why = "out of memory";
        goto out;
    }
    if (fread(bin, 1, (size_t)n, f) != (size_t)n || fgetc(f) != EOF) {
        *why = "length mismatch";
        free(bin);
        bin = NULL;
        goto out;
    }
    fnv h;
    fnv_init(&h);
    fnv_add(&h, bin, (size_t)n);
    if (h.h != get_u64(hdr + 32)) {
        *why = "checksum mismatch";
        free(bin);
        bin = NULL;
        goto out;
    }
    *len = (size_t)n;
out:
    fclose(f);
    return bin;
}

static void cache_write_failed(const char *path, const char *what)
{
    atomic_fetch_add(&stat_write_failed, 1);
    if (atomic_exchange(&warned_write, 1) == 0)
        fprintf(stderr,
                "clsolve: warning: cannot write OpenCL program cache %s (%s): programs "
                "will be rebuilt each run\n",
                path, what);
}

static void cache_write(const char *path, uint64_t key, cl_program prog)
{
    size_t n = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS || n == 0)
        return; /* the driver offers no binary: nothing to cache */
    unsigned char *buf = malloc(CACHE_HEADER + n);
    if (!buf)
        return;
    unsigned char *bin = buf + CACHE_HEADER;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
        free(buf);
        return;
    }
    memset(buf, 0, CACHE_HEADER);
    memcpy(buf, CACHE_MAGIC, 8);
    buf[8] = CACHE_FORMAT & 0xff;
    put_u64(buf + 16, key);
    put_u64(buf + 24, n);
    fnv h;
    fnv_init(&h);
    fnv_add(&h, bin, n);
    put_u64(buf + 32, h.h);

    char dir[1200], tmp[1300];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir ||
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%p", path, (long)getpid(), (void *)buf) >=
            (int)sizeof tmp) {
        free(buf);
        return;
    }
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        if (mkdir_p(dir) != 0) {
            cache_write_failed(dir, strerror(errno));
            free(buf);
            return;
        }
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        cache_write_failed(tmp, strerror(errno));
        free(buf);
        return;
    }
    size_t total = CACHE_HEADER + n, done = 0;
    while (done < total) {
        ssize_t w = write(fd, buf + done, total - done);
        if (w <= 0) {
            if (w < 0 && errno == EINTR)
                continue;
            break;
        }
        done += (size_t)w;
    }
    int ok = done == total;
    if (close(fd) != 0)
        ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        cache_write_failed(path, strerror(errno));
        unlink(tmp);
    }
    free(buf);
}

/* ------------------------------------------------------------------- build */

static int build_from_source(ocl_ctx *ctx, const char *text, const char *options, cl_program *prog,
                             cls_error *err)
{
    cl_int st;
    size_t len = strlen(text);
    cl_program p = clCreateProgramWithSource(ctx->context, 1, &text, &len, &st);
    OCL_CHECK(err, st, "clCreateProgramWithSource");
    st = clBuildProgram(p, 1, &ctx->dev.id, options, NULL, NULL);
    if (st != CL_SUCCESS) {
        size_t loglen = 0;
        char *log = NULL;
        if (clGetProgramBuildInfo(p, ctx->dev.id, CL_PROGRAM_BUILD_LOG, 0, NULL, &loglen) ==
                CL_SUCCESS &&
            loglen > 0 && (log = malloc(loglen + 1)) != NULL) {
            if (clGetProgramBuildInfo(p, ctx->dev.id, CL_PROGRAM_BUILD_LOG, loglen, log, NULL) !=
                CL_SUCCESS)
                log[0] = '\0';
            log[loglen] = '\0';
        }
        const char *l = log ? log : "(no build log)";
        while (*l == '\n' || *l == ' ')
            l++;
        cls_fail(err, CLS_EOTHER, "OpenCL program build failed on %s (options '%s'): %s: %s",
                 ctx->dev.name, options, ocl_errstr(st), l);
        if (err && strlen(err->msg) + 1 >= sizeof err->msg) {
            static const char tail[] = " ... [build log truncated]";
            memcpy(err->msg + sizeof err->msg - sizeof tail, tail, sizeof tail);
        }
        free(log);
        clReleaseProgram(p);
        return CLS_EOTHER;
    }
    *prog = p;
    atomic_fetch_add(&stat_source, 1);
    return CLS_OK;
}

/* Says a build from source begins (stderr a terminal only): the first of
 * the process with the device and the cache, each with the program's name
 * (its first source, from the #line ocl_build_program writes). Returns 1
 * when it printed, so the caller ends the line with the time taken. */
/* Loads the program cached at `path` (cache_read's checks, then the
 * driver's). CLS_OK with *prog kept for the context; otherwise nothing (a
 * missing file) or one warning (a file that exists but is unusable). */
static int cache_load(ocl_ctx *ctx, const char *path, uint64_t key, const char *options,
                      cl_program *prog)
{
    size_t len = 0;
    const char *why = NULL;
    unsigned char *bin = cache_read(path, key, &len, &why);
    if (bin) {
        cl_int st, bst = CL_SUCCESS;
        const unsigned char *b = bin;
        cl_program p = clCreateProgramWithBinary(ctx->context, 1, &ctx->dev.id, &len, &b, &bst, &st);
        if (st == CL_SUCCESS && bst == CL_SUCCESS) {
            st = clBuildProgram(p, 1, &ctx->dev.id, options, NULL, NULL);
            if (st == CL_SUCCESS) {
                free(bin);
                *prog = p;
                atomic_fetch_add(&stat_hits, 1);
                ocl_shared_program_keep(ctx, key, options, p);
                return CLS_OK;
            }
        }
        if (st == CL_SUCCESS)
            st = bst;
        if (p)
            clReleaseProgram(p);
        why = ocl_errstr(st);
    }
    free(bin);
    if (why) {
        atomic_fetch_add(&stat_rejected, 1);
        fprintf(stderr,
                "clsolve: warning: ignoring OpenCL program cache %s (%s); rebuilding from "
                "source\n",
                path, why);
    }
    return CLS_EOTHER;
}

static int ocl_build_announce(const ocl_ctx *ctx, const char *text, const char *cache_path)
{
    static atomic_int announced;
    if (!isatty(2))
        return 0;
    if (!atomic_exchange(&announced, 1)) {
        char dir[1100];
        snprintf(dir, sizeof dir, "%s", cache_path ? cache_path : "");
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        fprintf(stderr, "clsolve: building OpenCL programs for %s (first use only%s%s%s)\n",
                ctx->dev.name, dir[0] ? "; cached in " : "", dir, dir[0] ? "" : "; no cache");
    }
    char name[96] = "";
    size_t used = 0;
    for (const char *q = text; (q = strstr(q, "#line 1 \"")) != NULL;) {
        q += 9;
        const char *e = strchr(q, '"');
        if (!e || used + (size_t)(e - q) + 2 >= sizeof name)
            break;
        used += (size_t)snprintf(name + used, sizeof name - used, "%s%.*s", used ? " " : "",
                                 (int)(e - q), q);
        q = e;
    }
    fprintf(stderr, "clsolve:   %s ...", used ? name : "program");
    fflush(stderr);
    return 1;
}

int ocl_build_program_text(ocl_ctx *ctx, const char *text, const char *options, cl_program *prog,
                           cls_error *err)
{
    if (!options)
        options = "";
    *prog = NULL;
    char path[1100];
    uint64_t key = cache_key(ctx, text, options);
    if ((*prog = ocl_shared_program_find(ctx, key, options)) != NULL) {
        atomic_fetch_add(&stat_hits, 1);
        return CLS_OK;
    }
    int have_path = ocl_cache_path(ctx, text, options, path, sizeof path);
    if (have_path && cache_load(ctx, path, key, options, prog) == CLS_OK)
        return CLS_OK;
    /* the user's cache has none: the programs built with clsolve itself
     * (the build tree's programs/, CLSOLVE_PROGRAMS_DIR), never written */
    char pre[1100];
    if (ocl_prebuilt_path(ctx, text, options, pre, sizeof pre) &&
        cache_load(ctx, pre, key, options, prog) == CLS_OK) {
        atomic_fetch_add(&stat_prebuilt, 1);
        return CLS_OK;
    }

    double t0 = cls_now();
    int said = ocl_build_announce(ctx, text, have_path ? path : NULL);
    int rc = build_from_source(ctx, text, options, prog, err);
    if (said)
        fprintf(stderr, rc ? " failed\n" : " %.1f s\n", cls_now() - t0);
    if (rc)
        return rc;
    if (have_path)
        cache_write(path, key, *prog);
    ocl_shared_program_keep(ctx, key, options, *prog);
    return CLS_OK;
}

int ocl_build_program(ocl_ctx *ctx, const char *const *sources, int nsources, const char *options,
                      cl_program *prog, cls_error *err)
{
    size_t total = 1;
    for (int i = 0; i < nsources; i++) {
        const char *s = ocl_source(sources[i]);
        if (!s)
            return cls_fail(err, CLS_EOTHER, "no embedded OpenCL source named '%s'", sources[i]);
        total += strlen(s) + strlen(sources[i]) + 32;
    }
    char *text = malloc(total);
    if (!text)
        return cls_fail(err, CLS_EOTHER, "out of memory assembling OpenCL sources");
    size_t used = 0;
    text[0] = '\0';
    for (int i = 0; i < nsources; i++) {
        /* #line keeps the build log's line numbers per file */
        used += (size_t)snprintf(text + used, total - used, "#line 1 \"%s\"\n%s\n", sources[i],
                                 ocl_source(sources[i]));
    }
    int rc = ocl_build_program_text(ctx, text, options, prog, err);
    free(text);
    if (!rc && cls_trace_on()) { /* which programs a command needs, in order */
        char line[512];
        size_t at = (size_t)snprintf(line, sizeof line, "ocl: program");
        for (int i = 0; i < nsources && at < sizeof line; i++)
            at += (size_t)snprintf(line + at, sizeof line - at, "%s%s", i ? "+" : " ", sources[i]);
        cls_trace(line);
    }
    return rc;
}

int ocl_create_kernel(cl_program prog, const char *name, cl_kernel *k, cls_error *err)
{
    cl_int st;
    *k = clCreateKernel(prog, name, &st);
    if (st != CL_SUCCESS) {
        *k = NULL;
        return cls_fail(err, CLS_EOTHER, "clCreateKernel(%s) failed: %s (%d)", name, ocl_errstr(st),
                        (int)st);
    }
    return CLS_OK;
}

static int ocl_event_poll_wanted(const ocl_device *dev)
{
    static int mode = -1; /* -1: not read; 0: by device; 1: poll; 2: block */
    if (mode < 0) {
        const char *e = getenv("CLSOLVE_EVENT_WAIT");
        mode = e && !strcmp(e, "poll") ? 1 : e && !strcmp(e, "block") ? 2 : 0;
    }
    return mode == 1 || (mode == 0 && dev && (dev->type & CL_DEVICE_TYPE_GPU));
}

cl_int ocl_event_wait(const ocl_device *dev, cl_event ev)
{
    cl_int es = CL_QUEUED, st;
    if (ocl_event_poll_wanted(dev)) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (unsigned i = 0;; i++) {
            st = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof es, &es, NULL);
            if (st != CL_SUCCESS)
                return st;
            if (es <= CL_COMPLETE)
                return es < 0 ? es : CL_SUCCESS;
            if ((i & 1023) == 1023) { /* long waits sleep in the driver */
                clock_gettime(CLOCK_MONOTONIC, &t);
                if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > 100000000L)
                    break;
            }
        }
    }
    st = clWaitForEvents(1, &ev);
    if (st == CL_SUCCESS)
        st = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof es, &es, NULL);
    return st != CL_SUCCESS ? st : es < 0 ? es : CL_SUCCESS;
}

double ocl_event_seconds(cl_event ev)
{
    cl_ulong t0 = 0, t1 = 0;
    if (clWaitForEvents(1, &ev) != CL_SUCCESS ||
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) !=
            CL_SUCCESS ||
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS)
        return -1.0;
    return t1 >= t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
}
