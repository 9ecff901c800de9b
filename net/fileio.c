/*
 * fileio.c: durable writes, fsync helpers and directory removal (see
 * fileio.h). Every system call's result is checked and turned into a
 * message naming the path.
 */
#define _GNU_SOURCE /* syncfs */
#include "fileio.h"

#include "../common/parallel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int fileio_sync_path(const char *path, cls_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cls_fail(err, CLS_EOTHER, "%s: cannot open to sync: %s", path, strerror(errno));
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return cls_fail(err, CLS_EOTHER, "%s: fsync failed: %s", path, strerror(e));
    }
    close(fd);
    return CLS_OK;
}

int fileio_sync_parent(const char *path, cls_error *err)
{
    char dir[PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof dir)
        return cls_fail(err, CLS_EOTHER, "%s: path too long", path);
    memcpy(dir, path, n + 1);
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    return fileio_sync_path(dir, err);
}

/* path created (or truncated) with data; fsynced when sync; removed on a
 * failure */
static int write_file(const char *path, const void *data, size_t len, int sync, cls_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return cls_fail(err, CLS_EOTHER, "%s: cannot create: %s", path, strerror(errno));
    if (write_all(fd, data, len) != 0 || (sync && fsync(fd) != 0)) {
        int e = errno;
        close(fd);
        unlink(path);
        return cls_fail(err, CLS_EOTHER, "%s: write failed: %s", path, strerror(e));
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(path);
        return cls_fail(err, CLS_EOTHER, "%s: close failed: %s", path, strerror(e));
    }
    return CLS_OK;
}

int fileio_write_durable(const char *path, const void *data, size_t len, cls_error *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return cls_fail(err, CLS_EOTHER, "%s: path too long", path);
    int rc = write_file(tmp, data, len, 1, err);
    if (rc)
        return rc;
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return cls_fail(err, CLS_EOTHER, "%s: rename failed: %s", path, strerror(e));
    }
    return fileio_sync_parent(path, err);
}

int fileio_write_plain(const char *path, const void *data, size_t len, cls_error *err)
{
    return write_file(path, data, len, 0, err);
}

int fileio_sync_fs(const char *path, cls_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", path, strerror(errno));
    int rc = syncfs(fd) != 0
                 ? cls_fail(err, CLS_EOTHER, "%s: syncfs failed: %s", path, strerror(errno))
                 : CLS_OK;
    close(fd);
    return rc;
}

int fileio_mkdir(const char *path, cls_error *err)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return cls_fail(err, CLS_EOTHER, "%s: cannot create directory: %s", path, strerror(errno));
    return CLS_OK;
}

int fileio_remove_tree(const char *path, cls_error *err)
{
    DIR *d = opendir(path);
    if (!d) {
        if (errno == ENOENT)
            return CLS_OK;
        return cls_fail(err, CLS_EOTHER, "%s: cannot open directory: %s", path, strerror(errno));
    }
    int rc = CLS_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub[PATH_MAX];
        if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub) {
            rc = cls_fail(err, CLS_EOTHER, "%s: path too long", path);
            continue;
        }
        struct stat st;
        if (lstat(sub, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (fileio_remove_tree(sub, err) != CLS_OK)
                rc = CLS_EOTHER;
        } else if (unlink(sub) != 0 && errno != ENOENT) {
            rc = cls_fail(err, CLS_EOTHER, "%s: cannot remove: %s", sub, strerror(errno));
        }
    }
    closedir(d);
    if (rmdir(path) != 0 && errno != ENOENT)
        rc = cls_fail(err, CLS_EOTHER, "%s: cannot remove directory: %s", path, strerror(errno));
    return rc;
}

int fileio_read_small(const char *path, size_t max, char **data, size_t *len, cls_error *err)
{
    *data = NULL;
    if (len)
        *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", path, strerror(e));
        errno = e; /* the caller may tell a missing file from a passing failure */
        return CLS_EOTHER;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return cls_fail(err, CLS_EOTHER, "out of memory reading %s", path);
    }
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                free(buf);
                close(fd);
                return cls_fail(err, CLS_EOTHER, "%s: larger than %zu bytes", path, max);
            }
            size_t ncap = cap * 2 > max ? max : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                close(fd);
                return cls_fail(err, CLS_EOTHER, "out of memory reading %s", path);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            close(fd);
            cls_fail(err, CLS_EOTHER, "%s: read failed: %s", path, strerror(e));
            errno = e;
            return CLS_EOTHER;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *data = buf;
    if (len)
        *len = n;
    return CLS_OK;
}

/* ------------------------------------------------------------- CRC-32 */

#define FILEIO_CRC_GRAIN ((int64_t)4 << 20)

typedef struct crc_ctx {
    const unsigned char *data; /* or NULL: read from fd */
    int fd;
    uLong *crc;   /* per range */
    int64_t *len; /* per range */
    int *failed;  /* per range */
} crc_ctx;

static void crc_range(void *arg, int range, int64_t a, int64_t e)
{
    const crc_ctx *c = arg;
    uLong crc = crc32_z(0L, Z_NULL, 0);
    c->len[range] = e - a;
    c->failed[range] = 0;
    if (c->data) {
        c->crc[range] = crc32_z(crc, c->data + a, (size_t)(e - a));
        return;
    }
    unsigned char *buf = malloc((size_t)1 << 20);
    if (!buf) {
        c->failed[range] = 1;
        return;
    }
    for (int64_t off = a; off < e;) {
        size_t want = (size_t)(e - off < ((int64_t)1 << 20) ? e - off : ((int64_t)1 << 20));
        ssize_t n = pread(c->fd, buf, want, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            c->failed[range] = 1;
            break;
        }
        crc = crc32_z(crc, buf, (size_t)n);
        off += n;
    }
    free(buf);
    c->crc[range] = crc;
}

static int crc_run(const unsigned char *data, int fd, int64_t len, uint32_t *out)
{
    int t = cls_parallel_ranges(len, FILEIO_CRC_GRAIN);
    uLong *crc = calloc((size_t)t, sizeof *crc);
    int64_t *lens = calloc((size_t)t, sizeof *lens);
    int *failed = calloc((size_t)t, sizeof *failed);
    int rc = 0;
    if (!crc || !lens || !failed) {
        rc = -1;
    } else {
        crc_ctx c = {data, fd, crc, lens, failed};
        uLong all = crc32_z(0L, Z_NULL, 0);
        if (len > 0)
            cls_parallel_for(len, FILEIO_CRC_GRAIN, crc_range, &c);
        for (int q = 0; len > 0 && q < t && !rc; q++) {
            rc = failed[q] ? -1 : 0;
            all = crc32_combine(all, crc[q], (z_off_t)lens[q]);
        }
        *out = (uint32_t)all;
    }
    free(crc);
    free(lens);
    free(failed);
    return rc;
}

uint32_t fileio_crc32(const void *data, size_t len)
{
    uint32_t out = 0;
    if (crc_run(data, -1, (int64_t)len, &out)) /* out of memory for the ranges: one pass */
        out = (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), data, len);
    return out;
}

int fileio_crc32_fd(int fd, int64_t len, uint32_t *out)
{
    return crc_run(NULL, fd, len, out);
}
