/*
 * estimate.c: the cost model of the physics jobs (see estimate.h).
 *
 * Design: each kind's cost is a handful of terms linear in what it works
 * on (bodies, particles and springs, vertices and triangles, basis values
 * and frames), with the bytes per item read off the drivers' allocations
 * and writers, rounded up, plus a fixed base for the OpenCL runtime. On
 * PoCL the "device" is the host: its buffers are resident memory of
 * rank 0 too, which the admission adds when the device is a CPU
 * (net/admission.c). The figures are meant to be on the high side and
 * within 2x of the measured peak (bench/physics-estimate.sh, the table in
 * docs/reliability.md).
 *
 * Host, rank 0 (bytes):
 *   base        PHYS_EST_BASE = 96 MiB: the process, PoCL/the ICD, the
 *               kernels' programs (measured: a 64-body nbody job peaks at
 *               79 MB on PoCL);
 *   nbody       176 per body: the system in double (x, v, m: 56), the
 *               float upload and download staging (pos, vel: 32 + 32), the
 *               check's accelerations (16), the potential's staging (36);
 *               plus 256 per chunk of steps between frames: the energy
 *               series (a jansson array of [step, E]);
 *   springs     400 per particle (mesh in double, masses, pins, cell list,
 *               the colouring's bit sets and the report) + 72 per spring
 *               (24 stored, the proximity candidates and the colour
 *               sorting: about twice that again) + 48 per triangle;
 *   curvature   600 per vertex (mesh, adjacency, the nine results in
 *               double, normals, flags, the writers' staging) + 120 per
 *               triangle (faces, vertex-face lists, the check's face
 *               tables);
 *   deform      20 per basis value (the basis read as double: 8, its float
 *               copy: 4, the reader's text staging: 8) + 16 per u value
 *               (double and float).
 * Device (bytes): nbody 88 per body (positions and velocities double
 *   buffered in float4: 64, accelerations 16, potential 4, energy parts);
 *   springs 64 per particle + 16 per spring + 12 per triangle (the Jacobi
 *   projection: + 20 per particle + 32 per spring, and 32 per spring on
 *   the host); curvature
 *   160 per vertex (positions in two parts, normals, curvatures, two
 *   directions: float4 each) + 36 per triangle (the triangles, the 1-ring
 *   lists); deform 4 per basis value + 8 per u value; plus 8 MiB for
 *   programs and scratch.
 * Output (bytes per item and frame, from the printf formats of
 *   physics/nbody.c, mesh_write.c, curvature_run.c, deform_files.c, at
 *   their longest: %.9g is at most 15 characters, %.7g 13, %.17g 23, a
 *   separator each):
 *   nbody       csv 112 per body (7 x %.9g); ply 176 (7 x %.17g); vtk 190
 *               (the same and "1 i" vertex cells); obj 52; pvd as vtk +
 *               128 per frame for the collection; 512 of header per frame;
 *               64 per chunk of steps in the job's record (the energy
 *               series);
 *   springs     per vertex: obj 52 ("v" 3 x %.9g), ply and vtk 64 (3 x
 *               %.17g, typically 20 characters each: a frame whose every
 *               coordinate takes all 17 digits is up to 8 % more); per triangle 3 indices and the
 *               count ("f a b c", "3 a b c"; a mesh's own texture and
 *               normal indices in OBJ are not counted);
 *   curvature   csv 272 per vertex (index, 7 x %.9g, 9 x %.7g, flag,
 *               K_defect); ply and vtk 380 (3 x %.17g, normal, colour, 10
 *               values as %.17g); per triangle as springs;
 *   deform      16 per u value (%.9g and a newline), rows x frames.
 * The frame count: nbody and springs write one frame every `every` steps
 * (0, K, 2K, ... and the last), else one; curvature one file, deform one
 * u.mtx.
 */
#include "estimate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PHYS_EST_MB ((uint64_t)1 << 20)
#define PHYS_EST_BASE (96 * PHYS_EST_MB)    /* the process and the OpenCL runtime */
#define PHYS_EST_DEV_BASE (8 * PHYS_EST_MB) /* programs, scratch */
#define PHYS_EST_FRAME_HEADER 512           /* a frame's header lines */

/* an integer option, or def when absent or not an integer */
static int64_t est_int(const json_t *o, const char *key, int64_t def)
{
    const json_t *v = o ? json_object_get(o, key) : NULL;
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

static double est_num(const json_t *o, const char *key, double def)
{
    const json_t *v = o ? json_object_get(o, key) : NULL;
    return json_is_number(v) ? json_number_value(v) : def;
}

static const char *est_str(const json_t *o, const char *key, const char *def)
{
    const json_t *v = o ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : def;
}

/* frames written every `every` steps (0: the last only) */
static int64_t est_frames(int64_t steps, int64_t every)
{
    if (steps < 0)
        steps = 0;
    if (every <= 0)
        return 1;
    return 1 + (steps + every - 1) / every;
}

/* decimal digits of the largest index below n */
static int est_digits(int64_t n)
{
    int d = 1;
    for (int64_t x = n > 0 ? n - 1 : 0; x >= 10; x /= 10)
        d++;
    return d;
}

/* saturating arithmetic: a client's counts may be absurd */
static uint64_t est_mul(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static uint64_t est_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* a point set or mesh frame: bytes per vertex and per triangle */
static void est_mesh_frame(const char *fmt, int64_t nv, int64_t nt, uint64_t per_vert_obj,
                           uint64_t per_vert_other, uint64_t *bytes)
{
    int d = est_digits(nv);
    int obj = !strcmp(fmt, "obj");
    uint64_t per_vert = obj ? per_vert_obj : per_vert_other;
    uint64_t per_tri = (uint64_t)(3 * (d + 1) + 3); /* "f a b c", "3 a b c" */
    *bytes = est_add(est_add(est_mul((uint64_t)nv, per_vert), est_mul((uint64_t)nt, per_tri)),
                     PHYS_EST_FRAME_HEADER);
}

static void est_nbody(const json_t *o, const physics_input_counts *in, physics_estimate *e)
{
    int64_t n = 0;
    if (in && in->present)
        n = in->lines; /* the bodies CSV: one body a line at most */
    else
        n = est_int(o, "random", 0) + est_int(o, "plummer", 0) + est_int(o, "disk", 0);
    if (n < 0)
        n = 0;
    int64_t steps = est_int(o, "steps", 10), every = est_int(o, "every", 0);
    const char *fmt = est_str(o, "format", "csv");
    int64_t frames = est_frames(steps, every);
    int64_t chunks = every > 0 ? (steps + every - 1) / every : 1;
    if (chunks < 1)
        chunks = 1;
    uint64_t per_body = !strcmp(fmt, "csv")   ? 112
                        : !strcmp(fmt, "ply") ? 176
                        : !strcmp(fmt, "obj") ? 52
                                              : 190; /* vtk, pvd */
    uint64_t frame = est_add(est_mul((uint64_t)n, per_body), PHYS_EST_FRAME_HEADER);
    if (!strcmp(fmt, "pvd"))
        frame = est_add(frame, 128);
    e->items = n;
    e->frames = frames;
    e->host_bytes =
        est_add(est_add(PHYS_EST_BASE, est_mul((uint64_t)n, 176)), est_mul((uint64_t)chunks, 256));
    e->device_bytes = est_add(PHYS_EST_DEV_BASE, est_mul((uint64_t)n, 88));
    e->output_bytes = est_add(est_mul(frame, (uint64_t)frames), est_mul((uint64_t)chunks, 64));
}

/* Springs per particle on the regular grid (spacing 1) within `reach`:
 * the lattice points of the disk, halved (each spring has two ends). */
static int64_t est_grid_springs_per_particle(double reach)
{
    if (!(reach > 0))
        return 0;
    if (reach > 200)
        reach = 200; /* beyond, the grid sizes the daemon takes are covered */
    int r = (int)reach;
    int64_t c = 0;
    for (int dx = -r; dx <= r; dx++)
        for (int dy = -r; dy <= r; dy++)
            if ((dx || dy) && (double)(dx * dx + dy * dy) <= reach * reach)
                c++;
    return (c + 1) / 2;
}

/* springs per particle on an uploaded mesh at the default reach: Campa's
 * bodies and the shared meshes have 30 to 45 (cow: 35); the proximity
 * builder's own limit (SPRINGS_MAX) stays the backstop for denser ones */
#define PHYS_EST_MESH_SPRINGS 48

static void est_springs(const json_t *o, const physics_input_counts *in, physics_estimate *e)
{
    int64_t nv = 0, nt = 0, per = 0;
    int edges = json_is_true(o ? json_object_get(o, "edges") : NULL);
    if (in && in->present) {
        nv = in->verts;
        nt = in->tris;
        per = edges ? 6 : PHYS_EST_MESH_SPRINGS;
    } else {
        int64_t g = est_int(o, "grid", 0);
        if (g < 0)
            g = 0;
        if (g > 46000)
            g = 46000; /* springs_grid_mesh's limit */
        nv = g * g;
        nt = g > 1 ? 2 * (g - 1) * (g - 1) : 0;
        double scale = est_num(o, "scale", 1.0);
        double reach = est_num(o, "max_dist", 6.5 * scale) / (scale > 0 ? scale : 1.0);
        per = edges ? 3 : est_grid_springs_per_particle(reach);
    }
    int64_t springs = nv * per;
    int64_t steps = est_int(o, "steps", 100), every = est_int(o, "every", 0);
    const char *fmt = est_str(o, "format", "obj");
    uint64_t frame;
    est_mesh_frame(fmt, nv, nt, 52, 64, &frame);
    if (!strcmp(fmt, "pvd"))
        frame = est_add(frame, 128);
    e->items = nv;
    e->faces = nt;
    e->springs = springs;
    e->frames = est_frames(steps, every);
    e->host_bytes = est_add(est_add(PHYS_EST_BASE, est_mul((uint64_t)nv, 400)),
                            est_add(est_mul((uint64_t)springs, 72), est_mul((uint64_t)nt, 48)));
    e->device_bytes = est_add(est_add(PHYS_EST_DEV_BASE, est_mul((uint64_t)nv, 64)),
                              est_add(est_mul((uint64_t)springs, 16), est_mul((uint64_t)nt, 12)));
    if (!strcmp(est_str(o, "projection", "gauss-seidel"), "jacobi")) {
        /* every spring twice in the per-particle lists (16 each, staged on
         * the host too), a second position buffer and the list offsets */
        e->host_bytes = est_add(e->host_bytes, est_mul((uint64_t)springs, 32));
        e->device_bytes = est_add(
            e->device_bytes, est_add(est_mul((uint64_t)springs, 32), est_mul((uint64_t)nv, 20)));
    }
    e->output_bytes = est_mul(frame, (uint64_t)e->frames);
}

static void est_curvature(const json_t *o, const physics_input_counts *in, physics_estimate *e)
{
    int64_t nv = 0, nt = 0;
    if (in && in->present) {
        nv = in->verts;
        nt = in->tris;
    } else {
        int64_t k = est_int(o, "saddle", 0);
        if (k < 2 || k > 32767)
            k = 0;
        nv = k * k;
        nt = k > 1 ? 2 * (k - 1) * (k - 1) : 0;
    }
    const char *fmt = est_str(o, "format", "csv");
    uint64_t frame;
    if (!strcmp(fmt, "csv"))
        frame = est_add(est_mul((uint64_t)nv, 272), PHYS_EST_FRAME_HEADER);
    else
        est_mesh_frame(fmt, nv, nt, 380, 380, &frame);
    e->items = nv;
    e->faces = nt;
    e->frames = 1;
    e->host_bytes =
        est_add(est_add(PHYS_EST_BASE, est_mul((uint64_t)nv, 600)), est_mul((uint64_t)nt, 120));
    e->device_bytes =
        est_add(est_add(PHYS_EST_DEV_BASE, est_mul((uint64_t)nv, 160)), est_mul((uint64_t)nt, 36));
    e->output_bytes = frame;
}

static void est_deform(const json_t *o, const physics_input_counts *in, physics_estimate *e)
{
    int64_t values = in && in->present ? in->basis_entries : 0;
    int64_t rows = in && in->present ? in->basis_rows : 0;
    /* q: [numbers] is one frame, [[numbers], ...] a sequence */
    const json_t *q = o ? json_object_get(o, "q") : NULL;
    int64_t frames = 1;
    if (json_is_array(q) && json_is_array(json_array_get(q, 0)))
        frames = (int64_t)json_array_size(q);
    uint64_t u = est_mul((uint64_t)(rows > 0 ? rows : 0), (uint64_t)frames);
    e->items = rows;
    e->frames = 1;
    e->host_bytes = est_add(est_add(PHYS_EST_BASE, est_mul((uint64_t)values, 20)), est_mul(u, 16));
    e->device_bytes =
        est_add(est_add(PHYS_EST_DEV_BASE, est_mul((uint64_t)values, 4)), est_mul(u, 8));
    e->output_bytes = est_add(est_mul(u, 16), PHYS_EST_FRAME_HEADER);
}

int physics_estimate_job(const char *kind, const json_t *options, const physics_input_counts *in,
                         physics_estimate *e, cls_error *err)
{
    memset(e, 0, sizeof *e);
    const json_t *o = json_is_object(options) ? options : NULL;
    /* counts outside what the kind takes are its own check's to refuse,
     * with its own words (errors.md SPRINGS-GRID, NBODY-TOO-MANY): no
     * estimate, so admission never answers for them with a size */
    double bodies = (double)est_int(o, "random", 0) + (double)est_int(o, "plummer", 0) +
                    (double)est_int(o, "disk", 0);
    if (!strcmp(kind, "springs") && (est_int(o, "grid", 0) > 46000 || est_int(o, "grid", 0) < 0))
        return cls_fail(err, CLS_EINPUT, "springs: grid out of range (the job says why)");
    if (!strcmp(kind, "nbody") && (bodies > 2147483647.0 || bodies < 0))
        return cls_fail(err, CLS_EINPUT, "nbody: body count out of range (the job says why)");
    if (!strcmp(kind, "nbody"))
        est_nbody(o, in, e);
    else if (!strcmp(kind, "springs"))
        est_springs(o, in, e);
    else if (!strcmp(kind, "curvature"))
        est_curvature(o, in, e);
    else if (!strcmp(kind, "deform"))
        est_deform(o, in, e);
    else
        return cls_fail(err, CLS_EUSAGE, "unknown physics kind '%.32s'", kind);
    return CLS_OK;
}

/* ---- the input scan -------------------------------------------------- */

/* The triangles of an OBJ face line's k corners (k - 2), counted from its
 * whitespace-separated tokens after "f". */
static int64_t est_obj_face_tris(const char *line, size_t len)
{
    int64_t k = 0;
    int in_tok = 0;
    for (size_t i = 1; i < len; i++) {
        int ws = line[i] == ' ' || line[i] == '\t' || line[i] == '\r';
        if (!ws && !in_tok)
            k++;
        in_tok = !ws;
    }
    return k > 2 ? k - 2 : 0;
}

/* The first line of a Matrix Market file's size line: rows, columns and,
 * for coordinate files, entries. */
static void est_mm_size(const char *line, int array, physics_input_counts *in)
{
    long long r = 0, c = 0, n = 0;
    int got = sscanf(line, "%lld %lld %lld", &r, &c, &n);
    if (got >= 2 && r > 0 && c > 0) {
        in->basis_rows = r;
        in->basis_cols = c;
        in->basis_entries = array ? r * c : (got == 3 && n > 0 ? n : 0);
        if (array && c != 0 && in->basis_entries / c != r)
            in->basis_entries = INT64_MAX;
    }
}

int physics_estimate_scan(const char *kind, const char *path, physics_input_counts *in,
                          cls_error *err)
{
    memset(in, 0, sizeof *in);
    FILE *f = fopen(path, "rb");
    if (!f)
        return cls_fail(err, CLS_EINPUT, "cannot open the input: %s", strerror(errno));
    in->present = 1;
    const char *dot = strrchr(path, '.');
    int obj = dot && !strcmp(dot, ".obj");
    int raw = dot && (!strcmp(dot, ".f32") || !strcmp(dot, ".f64"));
    int deform = !strcmp(kind, "deform");
    int mm_array = 0, mm_seen_banner = 0, mm_sized = 0;
    /* a line is looked at through its first 256 bytes: enough for an OBJ
     * face's corners to be counted at the block size ones have, and for a
     * Matrix Market header */
    char line[256];
    size_t ll = 0;
    int64_t obj_tris_long = 0; /* corners beyond the first 256 bytes: counted by separators */
    enum { EST_BLOCK = 65536 };
    char *buf = malloc(EST_BLOCK); /* the HTTP threads scan at once: no static buffer */
    if (!buf) {
        fclose(f);
        return cls_fail(err, CLS_EOTHER, "out of memory");
    }
    size_t got;
    int last_nl = 1;
    while ((got = fread(buf, 1, EST_BLOCK, f)) > 0) {
        in->bytes += got;
        for (size_t i = 0; i < got; i++) {
            char ch = buf[i];
            if (ch != '\n') {
                if (ll < sizeof line - 1)
                    line[ll++] = ch;
                else if (obj && line[0] == 'f' && (ch == ' ' || ch == '\t'))
                    obj_tris_long++;
                last_nl = 0;
                continue;
            }
            line[ll] = '\0';
            in->lines++;
            last_nl = 1;
            if (obj && ll >= 2 && line[0] == 'v' && (line[1] == ' ' || line[1] == '\t'))
                in->verts++;
            else if (obj && ll >= 2 && line[0] == 'f' && (line[1] == ' ' || line[1] == '\t'))
                in->tris += est_obj_face_tris(line, ll);
            else if (deform && !raw && !mm_sized) {
                if (!mm_seen_banner && !strncmp(line, "%%MatrixMarket", 14)) {
                    mm_seen_banner = 1;
                    mm_array = strstr(line, " array") != NULL;
                } else if (line[0] != '%' && ll > 0) {
                    est_mm_size(line, mm_array, in);
                    mm_sized = 1;
                }
            }
            ll = 0;
        }
    }
    int rerr = ferror(f);
    fclose(f);
    free(buf);
    if (rerr)
        return cls_fail(err, CLS_EINPUT, "cannot read the input");
    if (!last_nl)
        in->lines++;
    in->tris += obj_tris_long;
    if (!obj) {
        /* OFF, PLY, CSV: a vertex or a face a line at most */
        in->verts = in->lines;
        in->tris = in->lines;
    }
    if (deform) {
        if (raw) {
            int64_t w = !strcmp(dot, ".f32") ? 4 : 8;
            in->basis_entries = (int64_t)(in->bytes / (uint64_t)w);
            in->basis_rows = in->basis_entries; /* rank unknown here: at most one column */
        } else {
            /* never more values than the text backs: two bytes each at least */
            int64_t most = (int64_t)(in->bytes / 2);
            if (in->basis_entries > most || in->basis_entries == 0)
                in->basis_entries = most;
            if (in->basis_rows > most || in->basis_rows == 0)
                in->basis_rows = most;
        }
    }
    return CLS_OK;
}
