/*
 * frame.c: the shared plumbing of the physics kinds (see frame.h): device,
 * buffers, launches, named timings, the JSON report, atomic output files
 * and frame sequences with their ParaView collection.
 *
 * The .pvd collection is the XML ParaView reads as a time series
 * (VTKFile type="Collection", one DataSet per frame with its timestep and
 * file); the frames are legacy VTK files beside it, named by their step.
 */
#include "frame.h"
#include "../kernels/ocl_gate.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- device ---------------------------------------------------------------- */

int phys_device_open(phys_device *d, const char *spec, cls_error *err)
{
    memset(d, 0, sizeof *d);
    int rc = ocl_pick_device(spec ? spec : "auto", &d->dev, err);
    if (!rc)
        rc = ocl_ctx_create(&d->dev, &d->ctx, err);
    if (!rc)
        d->open = 1;
    return rc;
}

void phys_device_close(phys_device *d)
{
    if (d->open)
        ocl_ctx_release(&d->ctx);
    d->open = 0;
}

json_t *phys_device_json(const phys_device *d, size_t local_size)
{
    return d->open ? phys_device_json_of(&d->dev, local_size) : NULL;
}

size_t phys_local_size(const ocl_ctx *ctx, size_t gpu_ls)
{
    if (ctx->dev.type & CL_DEVICE_TYPE_CPU)
        return 0;
    return gpu_ls > ctx->dev.max_work_group ? 0 : gpu_ls;
}

/* ---- buffers and launches ------------------------------------------------------- */

int phys_buffer(ocl_ctx *ctx, cl_mem *b, cl_mem_flags flags, size_t bytes, const void *host,
                const char *what, cls_error *err)
{
    cl_int st;
    int copy = host && bytes;
    *b = clCreateBuffer(ctx->context, flags | (copy ? CL_MEM_COPY_HOST_PTR : 0), bytes ? bytes : 16,
                        copy ? (void *)host : NULL, &st);
    if (st != CL_SUCCESS) {
        *b = NULL;
        return cls_fail(err, CLS_EOTHER, "clCreateBuffer(%s, %zu bytes) failed: %s (%d)", what,
                        bytes, ocl_errstr(st), (int)st);
    }
    return CLS_OK;
}

void phys_release(cl_mem *const *bufs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (*bufs[i]) {
            clReleaseMemObject(*bufs[i]);
            *bufs[i] = NULL;
        }
}

int phys_read(ocl_ctx *ctx, cl_mem b, size_t bytes, void *dst, const char *what, cls_error *err)
{
    if (!bytes)
        return CLS_OK;
    cl_int st = clEnqueueReadBuffer(ctx->queue, b, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clEnqueueReadBuffer(%s, %zu bytes) failed: %s (%d)", what,
                        bytes, ocl_errstr(st), (int)st);
    return CLS_OK;
}

int phys_write(ocl_ctx *ctx, cl_mem b, size_t bytes, const void *src, const char *what,
               cls_error *err)
{
    if (!bytes)
        return CLS_OK;
    cl_int st = clEnqueueWriteBuffer(ctx->queue, b, CL_TRUE, 0, bytes, src, 0, NULL, NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clEnqueueWriteBuffer(%s, %zu bytes) failed: %s (%d)",
                        what, bytes, ocl_errstr(st), (int)st);
    return CLS_OK;
}

int phys_launch(ocl_ctx *ctx, cl_kernel k, const char *name, size_t n, size_t ls, cl_event *ev,
                cls_error *err)
{
    if (ev)
        *ev = NULL;
    if (n == 0)
        return CLS_OK;
    size_t global = ls ? (n + ls - 1) / ls * ls : n;
    cl_int st = ocl_enqueue_kernel(ctx, k, global, ls ? &ls : NULL, ev);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clEnqueueNDRangeKernel(%s, global %zu) failed: %s (%d)",
                        name, global, ocl_errstr(st), (int)st);
    return CLS_OK;
}

int phys_finish(ocl_ctx *ctx, const char *what, cls_error *err)
{
    cl_int st = clFinish(ctx->queue);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clFinish(%s) failed: %s (%d)", what, ocl_errstr(st),
                        (int)st);
    return CLS_OK;
}

/* ---- timing ------------------------------------------------------------------------ */

void phys_times_init(phys_times *t)
{
    memset(t, 0, sizeof *t);
}

void phys_times_add(phys_times *t, const char *name, double v)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->t[i].name, name)) {
            t->t[i].v += v;
            return;
        }
    if (t->n == (int)(sizeof t->t / sizeof t->t[0]))
        return;
    snprintf(t->t[t->n].name, sizeof t->t[t->n].name, "%s", name);
    t->t[t->n].v = v;
    t->n++;
}

json_t *phys_times_json(const phys_times *t)
{
    json_t *o = json_object();
    for (int i = 0; i < t->n; i++)
        json_object_set_new(o, t->t[i].name, json_real(t->t[i].v));
    return o;
}

/* ---- the JSON report ------------------------------------------------------------------ */

json_t *phys_report_new(const char *kind)
{
    return json_pack("{s:s}", "kind", kind);
}

void phys_report_fail(json_t *o, int rc, const cls_error *err)
{
    json_object_set_new(o, "error", json_string(err->msg));
    json_object_set_new(o, "exit_code", json_integer(rc));
    if (err->line)
        json_object_set_new(o, "line", json_integer(err->line));
}

int phys_report_result(json_t *o, json_t *files, char **result_json, cls_error *err)
{
    *result_json = NULL;
    json_object_set_new(o, "files", files ? files : json_array());
    *result_json = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!*result_json)
        return cls_fail(err, CLS_EOTHER, "out of memory for the job result");
    return CLS_OK;
}

/* ---- output files ------------------------------------------------------------------------ */

static const struct {
    phys_format f;
    const char *name;
} phys_formats[] = {{PHYS_FMT_OBJ, "obj"}, {PHYS_FMT_PLY, "ply"}, {PHYS_FMT_VTK, "vtk"},
                    {PHYS_FMT_PVD, "pvd"}, {PHYS_FMT_CSV, "csv"}, {PHYS_FMT_MTX, "mtx"}};
#define PHYS_NFORMATS (sizeof phys_formats / sizeof phys_formats[0])

const char *phys_format_name(phys_format f)
{
    for (size_t i = 0; i < PHYS_NFORMATS; i++)
        if (phys_formats[i].f == f)
            return phys_formats[i].name;
    return "none";
}

phys_format phys_format_parse(const char *name)
{
    for (size_t i = 0; name && i < PHYS_NFORMATS; i++)
        if (!strcmp(phys_formats[i].name, name))
            return phys_formats[i].f;
    return PHYS_FMT_NONE;
}

/* The extension of path's last component (after its last '.'), or NULL. */
static const char *phys_ext(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    const char *dot = strrchr(name, '.');
    return dot && dot != name && dot[1] ? dot + 1 : NULL;
}

int phys_format_of_path(const char *path, unsigned allowed, const char *kind, phys_format *f,
                        cls_error *err)
{
    *f = PHYS_FMT_NONE;
    const char *ext = phys_ext(path);
    char low[8] = "";
    if (ext && strlen(ext) < sizeof low) {
        for (size_t i = 0; ext[i]; i++)
            low[i] = (char)tolower((unsigned char)ext[i]);
        low[strlen(ext)] = '\0';
        phys_format g = phys_format_parse(low);
        if (g != PHYS_FMT_NONE && (allowed & g)) {
            *f = g;
            return CLS_OK;
        }
    }
    char list[96] = "";
    for (size_t i = 0; i < PHYS_NFORMATS; i++)
        if (allowed & phys_formats[i].f) {
            size_t n = strlen(list);
            snprintf(list + n, sizeof list - n, "%s.%s", n ? ", " : "", phys_formats[i].name);
        }
    if (!ext)
        return cls_fail(err, CLS_EUSAGE, "%s: no output extension (%s writes %s)", path, kind,
                        list);
    return cls_fail(err, CLS_EUSAGE, "%s: unknown output extension '.%s' (%s writes %s)", path, ext,
                    kind, list);
}

int phys_refuse_nonfinite(const char *path, const char *what, const double *v, int64_t count,
                          int ncomp, cls_error *err)
{
    if (!v)
        return CLS_OK;
    for (int64_t i = 0; i < count; i++)
        for (int c = 0; c < ncomp; c++)
            if (!isfinite(v[i * ncomp + c]))
                return cls_fail(err, CLS_EBREAKDOWN,
                                "%s: not written: %s of item %lld is not finite", path, what,
                                (long long)i);
    return CLS_OK;
}

int phys_file_open(phys_file *pf, const char *path, cls_error *err)
{
    memset(pf, 0, sizeof *pf);
    if (strlen(path) >= sizeof pf->path)
        return cls_fail(err, CLS_EUSAGE, "output path too long: %.64s...", path);
    snprintf(pf->path, sizeof pf->path, "%s", path);
    snprintf(pf->tmp, sizeof pf->tmp, "%s.tmp", path);
    pf->f = fopen(pf->tmp, "w");
    if (!pf->f)
        return cls_fail(err, CLS_EOTHER, "%s: cannot write: %s", pf->tmp, strerror(errno));
    return CLS_OK;
}

int phys_file_commit(phys_file *pf, cls_error *err)
{
    int bad = ferror(pf->f);
    int cl = fclose(pf->f);
    pf->f = NULL;
    if (cl != 0 || bad) {
        remove(pf->tmp);
        return cls_fail(err, CLS_EOTHER, "%s: write failed", pf->path);
    }
    if (rename(pf->tmp, pf->path) != 0) {
        int e = errno;
        remove(pf->tmp);
        return cls_fail(err, CLS_EOTHER, "%s: cannot rename into place: %s", pf->path, strerror(e));
    }
    return CLS_OK;
}

void phys_file_abort(phys_file *pf)
{
    if (pf->f) {
        fclose(pf->f);
        remove(pf->tmp);
    }
    pf->f = NULL;
}

/* (see frame.h) A file that cannot be opened or read is an I/O failure
 * (CLS_EOTHER, exit 1), as for the mesh and Matrix Market readers; only
 * what the file holds can be bad input. */
int phys_read_file(const char *path, char **buf, size_t *len, cls_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f)) {
                free(b);
                fclose(f);
                return cls_fail(err, CLS_EOTHER, "%s: read error", path);
            }
            break;
        }
        char *nb = realloc(b, cap * 2);
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    fclose(f);
    if (!b)
        return cls_fail(err, CLS_EOTHER, "%s: out of memory reading the file", path);
    *buf = b;
    *len = n;
    return CLS_OK;
}

json_t *phys_device_json_of(const ocl_device *d, size_t local_size)
{
    return json_pack("{s:i, s:s, s:s, s:s, s:I}", "index", d->index, "name", d->name, "platform",
                     d->platform_name, "type", ocl_type_name(d->type), "local_size",
                     (json_int_t)local_size);
}

void phys_output_files(json_t *output, json_t *files)
{
    json_t *names = output ? json_object_get(output, "files") : NULL;
    for (size_t i = 0; names && i < json_array_size(names); i++)
        json_array_append(files, json_array_get(names, i));
    if (output && json_object_get(output, "collection"))
        json_array_append(files, json_object_get(output, "collection"));
}

/* ---- frame sequences ---------------------------------------------------------------------- */

int phys_frames_init(phys_frames *s, const char *path, phys_format fmt, int sequence,
                     cls_error *err)
{
    memset(s, 0, sizeof *s);
    if (strlen(path) + 16 >= sizeof s->path)
        return cls_fail(err, CLS_EUSAGE, "output path too long: %.64s...", path);
    snprintf(s->path, sizeof s->path, "%s", path);
    snprintf(s->base, sizeof s->base, "%s", path);
    const char *ext = phys_ext(s->base);
    if (ext)
        s->base[ext - 1 - s->base] = '\0';
    s->fmt = fmt;
    s->sequence = sequence || fmt == PHYS_FMT_PVD;
    return CLS_OK;
}

phys_format phys_frames_file_format(const phys_frames *s)
{
    return s->fmt == PHYS_FMT_PVD ? PHYS_FMT_VTK : s->fmt;
}

int phys_frames_path(const phys_frames *s, int64_t number, char *buf, size_t cap, cls_error *err)
{
    int n = s->sequence ? snprintf(buf, cap, "%s_%06lld.%s", s->base, (long long)number,
                                   phys_format_name(phys_frames_file_format(s)))
                        : snprintf(buf, cap, "%s", s->path);
    if (n < 0 || (size_t)n >= cap)
        return cls_fail(err, CLS_EUSAGE, "output path too long: %.64s...", s->path);
    return CLS_OK;
}

int phys_frames_added(phys_frames *s, const char *path, double time, cls_error *err)
{
    if (s->count == s->cap) {
        int64_t nc = s->cap ? 2 * s->cap : 16;
        double *t = realloc(s->time, (size_t)nc * sizeof *t);
        if (t)
            s->time = t;
        char **nm = realloc(s->name, (size_t)nc * sizeof *nm);
        if (nm)
            s->name = nm;
        if (!t || !nm)
            return cls_fail(err, CLS_EOTHER, "out of memory for the frame list");
        s->cap = nc;
    }
    const char *slash = strrchr(path, '/');
    s->name[s->count] = strdup(slash ? slash + 1 : path);
    if (!s->name[s->count])
        return cls_fail(err, CLS_EOTHER, "out of memory for the frame list");
    s->time[s->count] = time;
    s->count++;
    return CLS_OK;
}

/* XML attribute text: the names we write hold no markup, but a user's file
 * name might. */
static void phys_xml_attr(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

int phys_frames_finish(phys_frames *s, cls_error *err)
{
    if (s->fmt != PHYS_FMT_PVD)
        return CLS_OK;
    char pvd[4200];
    snprintf(pvd, sizeof pvd, "%s.pvd", s->base);
    phys_file pf;
    int rc = phys_file_open(&pf, pvd, err);
    if (rc)
        return rc;
    fputs("<?xml version=\"1.0\"?>\n"
          "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
          "  <Collection>\n",
          pf.f);
    for (int64_t i = 0; i < s->count; i++) {
        fprintf(pf.f, "    <DataSet timestep=\"%.9g\" group=\"\" part=\"0\" file=\"", s->time[i]);
        phys_xml_attr(pf.f, s->name[i]);
        fputs("\"/>\n", pf.f);
    }
    fputs("  </Collection>\n</VTKFile>\n", pf.f);
    return phys_file_commit(&pf, err);
}

json_t *phys_frames_json(const phys_frames *s)
{
    json_t *o = json_pack("{s:s, s:s, s:I}", "path", s->path, "format", phys_format_name(s->fmt),
                          "frames", (json_int_t)s->count);
    json_t *files = json_array();
    for (int64_t i = 0; i < s->count; i++)
        json_array_append_new(files, json_string(s->name[i]));
    json_object_set_new(o, "files", files);
    if (s->fmt == PHYS_FMT_PVD) {
        const char *slash = strrchr(s->base, '/');
        char name[4200];
        snprintf(name, sizeof name, "%s.pvd", slash ? slash + 1 : s->base);
        json_object_set_new(o, "collection", json_string(name));
    }
    return o;
}

void phys_frames_list_files(const phys_frames *s, json_t *files)
{
    for (int64_t i = 0; i < s->count; i++)
        json_array_append_new(files, json_string(s->name[i]));
    if (s->fmt == PHYS_FMT_PVD) {
        const char *slash = strrchr(s->base, '/');
        char name[4200];
        snprintf(name, sizeof name, "%s.pvd", slash ? slash + 1 : s->base);
        json_array_append_new(files, json_string(name));
    }
}

void phys_frames_free(phys_frames *s)
{
    for (int64_t i = 0; i < s->count; i++)
        free(s->name[i]);
    free(s->name);
    free(s->time);
    s->name = NULL;
    s->time = NULL;
    s->count = s->cap = 0;
}
