/*
 * mm_range.c: the spans of a ranged read (see mm_range.h). A cut reads at
 * most the bytes up to the next newline with pread, 64 KiB at a time; the
 * line count maps the span and counts its newlines on every core (the
 * parse that follows finds the pages in the cache).
 */
#include "mm_range.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/parallel.h"

int mm_range_ok(const mm_header *h, const mm_where *w)
{
    if (!w->plain || w->binary || h->layout != MM_COORDINATE || h->field == MM_COMPLEX)
        return 0;
    /* mm.c sums such files densely as they stream (mm.h): one reader */
    int64_t cells = h->rows * h->cols;
    return !(h->rows > 0 && h->cols > 0 && cells <= MM_DENSE_MAX_CELLS && h->entries > cells &&
             h->entries > MM_DENSE_MIN_ENTRIES);
}

/* The first line start at or after byte c (c inside the entry section):
 * c itself when the byte before it ends a line. */
static int cut_at(int fd, const char *path, const mm_where *w, int64_t c, int64_t *at,
                  cls_error *err)
{
    char buf[65536];
    if (c <= w->data_off || c >= w->file_size) {
        *at = c <= w->data_off ? w->data_off : w->file_size;
        return CLS_OK;
    }
    for (int64_t p = c - 1; p < w->file_size;) {
        size_t want = sizeof buf;
        if ((int64_t)want > w->file_size - p)
            want = (size_t)(w->file_size - p);
        ssize_t got = pread(fd, buf, want, (off_t)p);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return cls_fail(err, CLS_EOTHER, "%s: read error at byte %lld: %s", path, (long long)p,
                            got < 0 ? strerror(errno) : "the file is shorter");
        const char *nl = memchr(buf, '\n', (size_t)got);
        if (nl) {
            *at = p + (nl - buf) + 1;
            return CLS_OK;
        }
        p += got;
    }
    *at = w->file_size; /* the rest is the last line, which an earlier span holds */
    return CLS_OK;
}

int mm_range_span(const char *path, const mm_where *w, int part, int nparts, int64_t *b, int64_t *e,
                  cls_error *err)
{
    const int64_t n = w->file_size - w->data_off;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", path, strerror(errno));
    /* (n / nparts) * part + the remainder's share: no 64-bit overflow */
    int64_t c0 = w->data_off + n / nparts * part + n % nparts * part / nparts;
    int64_t c1 = w->data_off + n / nparts * (part + 1) + n % nparts * (part + 1) / nparts;
    int rc = cut_at(fd, path, w, c0, b, err);
    if (!rc)
        rc = cut_at(fd, path, w, c1, e, err);
    close(fd);
    return rc;
}

typedef struct lines_ctx {
    const char *p;
    int64_t *count; /* per range */
} lines_ctx;

static void lines_range(void *arg, int range, int64_t i0, int64_t i1)
{
    lines_ctx *c = arg;
    c->count[range] = mm_count_newlines(c->p + i0, (size_t)(i1 - i0));
}

int64_t mm_range_lines_mem(const char *p, size_t n)
{
    if (n == 0)
        return 0;
    const int64_t grain = (int64_t)4 << 20;
    int t = cls_parallel_ranges((int64_t)n, grain);
    int64_t *count = calloc((size_t)t, sizeof *count), lines = 0;
    if (count) {
        lines_ctx c = {p, count};
        cls_parallel_for((int64_t)n, grain, lines_range, &c);
        for (int q = 0; q < t; q++)
            lines += count[q];
        free(count);
    } else {
        lines = mm_count_newlines(p, n); /* on one core, then */
    }
    return lines + (p[n - 1] != '\n');
}

int mm_range_lines(const char *path, int64_t b, int64_t e, int64_t *lines, cls_error *err)
{
    *lines = 0;
    if (e <= b)
        return CLS_OK;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", path, strerror(errno));
    void *m = mmap(NULL, (size_t)e, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return cls_fail(err, CLS_EOTHER, "%s: cannot map: %s", path, strerror(errno));
    *lines = mm_range_lines_mem((const char *)m + b, (size_t)(e - b));
    munmap(m, (size_t)e);
    return CLS_OK;
}
