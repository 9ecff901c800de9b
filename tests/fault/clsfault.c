/*
 * clsfault.c: an LD_PRELOAD library that injects the faults of the
 * fault-injection tests (tests/cli/test_daemon_faults.sh) into an unchanged
 * clsolved: OpenCL program build failures, device allocation failures and a
 * full disk.
 *
 * Why a preload and not hooks in the daemon: the daemon's own error paths
 * are what is under test, so they must be the production code. The library
 * sits between the daemon and the real OpenCL loader and C library, and
 * returns exactly what a failing driver or file system returns
 * (CL_BUILD_PROGRAM_FAILURE, CL_MEM_OBJECT_ALLOCATION_FAILURE, ENOSPC);
 * everything else is passed to the real function (dlsym RTLD_NEXT).
 *
 * Faults are switched on and off while the daemon runs by files in the
 * directory named by $CLSFAULT_DIR, checked at each call:
 *   cl_build   clBuildProgram fails with CL_BUILD_PROGRAM_FAILURE
 *   cl_alloc   clCreateBuffer fails with CL_MEM_OBJECT_ALLOCATION_FAILURE
 *              for buffers of at least the byte count the file holds (0
 *              or empty: every buffer)
 *   enospc     write() to a regular file whose path starts with the path
 *              the file holds fails with ENOSPC (the disk-full test where
 *              no small file system can be mounted)
 *   io         failures of the file system calls the job store makes, one
 *              rule per line: "CALL PREFIX ERRNO NTH [COUNT]": the NTH call
 *              of CALL (write, fsync, rename, unlink, open, mkdir, rmdir) on
 *              a path that starts with PREFIX (for write and fsync: the
 *              file the descriptor names), counted from when the rule
 *              appeared, and the COUNT-1 after it (default 1; 0: every one
 *              from the NTH on), fail with ERRNO (ENOSPC, EIO, EMFILE,
 *              ENFILE, ENOMEM, EACCES, EROFS, EDQUOT). A rule whose text
 *              changes starts counting again. (tests/cli/test_daemon_store.sh
 *              fails every write of a job's life in turn.)
 *   meminfo    a file read instead of /proc/meminfo (fopen): the memory a
 *              test says the host has (MemTotal, MemAvailable), for the
 *              admission and the reader's memory limit
 *              (tests/cli/test_daemon_limits.sh)
 *   cgroup/    a directory standing in for the container's cgroups (fopen):
 *              cgroup/self is read instead of /proc/self/cgroup, and
 *              /sys/fs/cgroup/X as cgroup/fs/X (missing there: missing), so
 *              a test says what memory limit the process is under
 *              (common/sysres.c; tests/cli/test_daemon_limits.sh)
 * Each injected fault appends a line to $CLSFAULT_DIR/log, so a test can
 * tell that its fault was met and not some other error.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

static int (*real_open)(const char *, int, ...);

static void need_real_open(void)
{
    if (!real_open)
        real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
}

/* Reads $CLSFAULT_DIR/name into buf; 1 when the file exists. */
static int fault_on(const char *name, char *buf, size_t cap)
{
    const char *dir = getenv("CLSFAULT_DIR");
    if (!dir || !*dir)
        return 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    need_real_open();
    int fd = real_open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = 0;
    if (buf && cap) {
        n = read(fd, buf, cap - 1);
        buf[n > 0 ? n : 0] = '\0';
        size_t l = strlen(buf);
        while (l && (buf[l - 1] == '\n' || buf[l - 1] == ' '))
            buf[--l] = '\0';
    }
    close(fd);
    return 1;
}

static int io_fault(const char *call, const char *path);
static const char *fd_path(int fd, char *path, size_t cap);

/* The log is written with the real write (ours would recurse into the
 * enospc check) and O_APPEND, so ranks do not overwrite each other. */
static ssize_t (*real_write)(int, const void *, size_t);

static void fault_log(const char *what, unsigned long long n)
{
    const char *dir = getenv("CLSFAULT_DIR");
    char path[PATH_MAX], line[512];
    snprintf(path, sizeof path, "%s/log", dir);
    int len = snprintf(line, sizeof line, "%ld %s %llu\n", (long)getpid(), what, n);
    need_real_open();
    int fd = real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || len <= 0)
        return;
    if (!real_write)
        real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (real_write && real_write(fd, line, (size_t)len) < 0) {
        /* nothing to do: the log is best effort */
    }
    close(fd);
}

cl_int clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
                      const char *options, void(CL_CALLBACK *notify)(cl_program, void *),
                      void *user_data)
{
    static cl_int (*real)(cl_program, cl_uint, const cl_device_id *, const char *,
                          void(CL_CALLBACK *)(cl_program, void *), void *);
    if (fault_on("cl_build", NULL, 0)) {
        fault_log("clBuildProgram: CL_BUILD_PROGRAM_FAILURE", 0);
        return CL_BUILD_PROGRAM_FAILURE;
    }
    if (!real)
        real = (cl_int(*)(cl_program, cl_uint, const cl_device_id *, const char *,
                          void(CL_CALLBACK *)(cl_program, void *), void *))dlsym(RTLD_NEXT,
                                                                                 "clBuildProgram");
    return real(program, num_devices, device_list, options, notify, user_data);
}

cl_mem clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void *host_ptr,
                      cl_int *errcode_ret)
{
    static cl_mem (*real)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
    char arg[64];
    if (fault_on("cl_alloc", arg, sizeof arg) && size >= strtoull(arg, NULL, 10)) {
        fault_log("clCreateBuffer: CL_MEM_OBJECT_ALLOCATION_FAILURE, bytes:",
                  (unsigned long long)size);
        if (errcode_ret)
            *errcode_ret = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        return NULL;
    }
    if (!real)
        real = (cl_mem(*)(cl_context, cl_mem_flags, size_t, void *, cl_int *))dlsym(
            RTLD_NEXT, "clCreateBuffer");
    return real(context, flags, size, host_ptr, errcode_ret);
}

ssize_t write(int fd, const void *buf, size_t count)
{
    if (!real_write)
        real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    char prefix[PATH_MAX];
    struct stat st;
    if (fd > 2 && fault_on("enospc", prefix, sizeof prefix) && prefix[0] && fstat(fd, &st) == 0 &&
        S_ISREG(st.st_mode)) {
        char link[64], path[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, path, sizeof path - 1);
        if (n > 0) {
            path[n] = '\0';
            if (strncmp(path, prefix, strlen(prefix)) == 0) {
                fault_log("write: ENOSPC, bytes refused:", (unsigned long long)count);
                errno = ENOSPC;
                return -1;
            }
        }
    }
    char ipath[PATH_MAX];
    int e = fd > 2 ? io_fault("write", fd_path(fd, ipath, sizeof ipath)) : 0;
    if (e) {
        errno = e;
        return -1;
    }
    return real_write(fd, buf, count);
}

/* --- the job store's file system calls ("io" rules) --- */

#define IO_RULES 8
static pthread_mutex_t io_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char text[PATH_MAX + 64]; /* the rule's line, to notice a change */
    unsigned long long seen;  /* matching calls since the rule appeared */
} io_state[IO_RULES];

static int errno_by_name(const char *n)
{
    static const struct {
        const char *name;
        int value;
    } t[] = {{"ENOSPC", ENOSPC}, {"EIO", EIO},       {"EMFILE", EMFILE}, {"ENFILE", ENFILE},
             {"ENOMEM", ENOMEM}, {"EACCES", EACCES}, {"EROFS", EROFS},   {"EDQUOT", EDQUOT}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(n, t[i].name))
            return t[i].value;
    return EIO;
}

/* 0, or the errno a call of `call` on `path` must fail with. */
static int io_fault(const char *call, const char *path)
{
    char rules[4096];
    if (!path || !fault_on("io", rules, sizeof rules))
        return 0;
    int fail = 0, k = 0;
    pthread_mutex_lock(&io_mu);
    char *save = NULL;
    for (char *line = strtok_r(rules, "\n", &save); line && k < IO_RULES;
         line = strtok_r(NULL, "\n", &save), k++) {
        char c[16], prefix[PATH_MAX], en[16];
        unsigned long long nth = 0, count = 1;
        int got = sscanf(line, "%15s %4095s %15s %llu %llu", c, prefix, en, &nth, &count);
        if (strcmp(io_state[k].text, line) != 0) {
            snprintf(io_state[k].text, sizeof io_state[k].text, "%s", line);
            io_state[k].seen = 0;
        }
        if (got < 4 || strcmp(c, call) != 0 || strncmp(path, prefix, strlen(prefix)) != 0)
            continue;
        unsigned long long n = ++io_state[k].seen;
        if (!fail && n >= nth && (count == 0 || n < nth + count)) {
            fail = errno_by_name(en);
            char what[PATH_MAX + 64];
            snprintf(what, sizeof what, "%s %s: %s, call", call, path, en);
            fault_log(what, n);
        }
    }
    pthread_mutex_unlock(&io_mu);
    return fail;
}

/* The path a descriptor names (a regular file or a directory), or NULL. */
static const char *fd_path(int fd, char *path, size_t cap)
{
    struct stat st;
    if (fd <= 2 || fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
        return NULL;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, cap - 1);
    if (n <= 0)
        return NULL;
    path[n] = '\0';
    return path;
}

int fsync(int fd)
{
    static int (*real)(int);
    char path[PATH_MAX];
    int e = io_fault("fsync", fd_path(fd, path, sizeof path));
    if (e) {
        errno = e;
        return -1;
    }
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return real(fd);
}

int rename(const char *from, const char *to)
{
    static int (*real)(const char *, const char *);
    int e = io_fault("rename", from);
    if (e) {
        errno = e;
        return -1;
    }
    if (!real)
        real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    return real(from, to);
}

int unlink(const char *path)
{
    static int (*real)(const char *);
    int e = io_fault("unlink", path);
    if (e) {
        errno = e;
        return -1;
    }
    if (!real)
        real = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
    return real(path);
}

int mkdir(const char *path, mode_t mode)
{
    static int (*real)(const char *, mode_t);
    int e = io_fault("mkdir", path);
    if (e) {
        errno = e;
        return -1;
    }
    if (!real)
        real = (int (*)(const char *, mode_t))dlsym(RTLD_NEXT, "mkdir");
    return real(path, mode);
}

int rmdir(const char *path)
{
    static int (*real)(const char *);
    int e = io_fault("rmdir", path);
    if (e) {
        errno = e;
        return -1;
    }
    if (!real)
        real = (int (*)(const char *))dlsym(RTLD_NEXT, "rmdir");
    return real(path);
}

static int open_common(const char *path, int flags, mode_t mode)
{
    int e = io_fault("open", path);
    if (e) {
        errno = e;
        return -1;
    }
    need_real_open();
    return real_open(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    return open_common(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    return open_common(path, flags, mode);
}

/* --- /proc/meminfo ("meminfo") --- */

static FILE *fopen_common(const char *path, const char *mode, const char *sym)
{
    static FILE *(*real)(const char *, const char *);
    static FILE *(*real64)(const char *, const char *);
    FILE *(**r)(const char *, const char *) = sym[5] ? &real64 : &real;
    if (!*r)
        *r = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, sym);
    const char *dir = getenv("CLSFAULT_DIR");
    if (path && dir && *dir && !strcmp(path, "/proc/meminfo")) {
        char alt[PATH_MAX];
        snprintf(alt, sizeof alt, "%s/meminfo", dir);
        FILE *f = (*r)(alt, mode);
        if (f)
            return f;
    }
    if (path && dir && *dir) {
        char cg[PATH_MAX / 2];
        struct stat st;
        snprintf(cg, sizeof cg, "%s/cgroup", dir);
        if (stat(cg, &st) == 0 && S_ISDIR(st.st_mode)) {
            char alt[PATH_MAX + 16];
            if (!strcmp(path, "/proc/self/cgroup")) {
                snprintf(alt, sizeof alt, "%s/self", cg);
                return (*r)(alt, mode);
            }
            if (!strncmp(path, "/sys/fs/cgroup/", 15)) {
                snprintf(alt, sizeof alt, "%s/fs/%s", cg, path + 15);
                return (*r)(alt, mode);
            }
        }
    }
    return (*r)(path, mode);
}

FILE *fopen(const char *path, const char *mode)
{
    return fopen_common(path, mode, "fopen");
}

FILE *fopen64(const char *path, const char *mode)
{
    return fopen_common(path, mode, "fopen64");
}
