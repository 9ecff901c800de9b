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
 * Each injected fault appends a line to $CLSFAULT_DIR/log, so a test can
 * tell that its fault was met and not some other error.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

/* Reads $CLSFAULT_DIR/name into buf; 1 when the file exists. */
static int fault_on(const char *name, char *buf, size_t cap)
{
    const char *dir = getenv("CLSFAULT_DIR");
    if (!dir || !*dir)
        return 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
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

/* The log is written with the real write (ours would recurse into the
 * enospc check) and O_APPEND, so ranks do not overwrite each other. */
static ssize_t (*real_write)(int, const void *, size_t);

static void fault_log(const char *what, unsigned long long n)
{
    const char *dir = getenv("CLSFAULT_DIR");
    char path[PATH_MAX], line[512];
    snprintf(path, sizeof path, "%s/log", dir);
    int len = snprintf(line, sizeof line, "%ld %s %llu\n", (long)getpid(), what, n);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
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
    return real_write(fd, buf, count);
}
