/*
 * mesh_write.c: the mesh writers (OBJ, ASCII PLY, legacy VTK), mesh copy,
 * the float-range check of positions bound for a device, recomputed
 * normals and the cool-warm colour map (see mesh_write.h).
 *
 * Seams: PLY and VTK give each point one texture coordinate and one
 * normal. The writer first looks at every corner's (vertex, texture,
 * normal) triple; when each vertex has one triple the points are the
 * vertices; otherwise the corners are sorted by triple and every distinct
 * triple becomes a point ("wedge"), faces renumbered onto them, per-vertex
 * values and colours copied from the vertex, and "vertex_id" recorded.
 */
#include "mesh_write.h"

#include "../common/numfmt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- copy and normals ---------------------------------------------------------- */

static int mesh_dup(void **dst, const void *src, size_t bytes)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = malloc(bytes ? bytes : 1);
    if (!*dst)
        return -1;
    memcpy(*dst, src, bytes);
    return 0;
}

int mesh_copy(const mesh *a, mesh *b, cls_error *err)
{
    mesh_init(b);
    b->nverts = a->nverts;
    b->nfaces = a->nfaces;
    b->nuv = a->nuv;
    b->nnrm = a->nnrm;
    b->npolys = a->npolys;
    size_t nv = (size_t)a->nverts, nf = (size_t)a->nfaces;
    if (mesh_dup((void **)&b->v, a->v, 3 * nv * sizeof *a->v) ||
        mesh_dup((void **)&b->color, a->color, 3 * nv * sizeof *a->color) ||
        mesh_dup((void **)&b->tri, a->tri, 3 * nf * sizeof *a->tri) ||
        mesh_dup((void **)&b->uv, a->uv, 2 * (size_t)a->nuv * sizeof *a->uv) ||
        mesh_dup((void **)&b->nrm, a->nrm, 3 * (size_t)a->nnrm * sizeof *a->nrm) ||
        mesh_dup((void **)&b->tri_uv, a->tri_uv, 3 * nf * sizeof *a->tri_uv) ||
        mesh_dup((void **)&b->tri_n, a->tri_n, 3 * nf * sizeof *a->tri_n) ||
        mesh_dup((void **)&b->poly_off, a->poly_off,
                 (a->poly_off ? (size_t)a->npolys + 1 : 0) * sizeof *a->poly_off) ||
        mesh_dup((void **)&b->poly_v, a->poly_v,
                 (a->poly_off ? (size_t)a->poly_off[a->npolys] : 0) * sizeof *a->poly_v)) {
        mesh_free(b);
        return cls_fail(err, CLS_EOTHER, "out of memory copying a mesh of %lld vertices",
                        (long long)a->nverts);
    }
    return CLS_OK;
}

int mesh_check_float_range(const mesh *m, const char *name, cls_error *err)
{
    for (int64_t i = 0; i < 3 * m->nverts; i++)
        if (phys_beyond_float(m->v[i]))
            return cls_fail(err, CLS_EINPUT,
                            "%s: vertex %lld: coordinate %g is beyond the float range the device "
                            "computes in (|x| <= %g)",
                            name, (long long)(i / 3), m->v[i], (double)FLT_MAX);
    return CLS_OK;
}

void mesh_vertex_normals(const mesh *m, double *vn)
{
    /* n_i = normalize(sum over incident faces of (p1 - p0) x (p2 - p0)):
     * face normals weighted by twice their area */
    memset(vn, 0, 3 * (size_t)m->nverts * sizeof *vn);
    for (int64_t f = 0; f < m->nfaces; f++) {
        const int32_t *t = m->tri + 3 * f;
        const double *a = m->v + 3 * (int64_t)t[0], *b = m->v + 3 * (int64_t)t[1],
                     *c = m->v + 3 * (int64_t)t[2];
        double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        double e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        double cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                        e1[0] * e2[1] - e1[1] * e2[0]};
        for (int j = 0; j < 3; j++)
            for (int q = 0; q < 3; q++)
                vn[3 * (int64_t)t[j] + q] += cr[q];
    }
    for (int64_t i = 0; i < m->nverts; i++) {
        double *p = vn + 3 * i;
        double l = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        for (int q = 0; q < 3; q++)
            p[q] = l > 0 ? p[q] / l : 0.0;
    }
}

int mesh_normals_recompute(mesh *m, cls_error *err)
{
    size_t nv = (size_t)(m->nverts ? m->nverts : 1), nf = (size_t)(m->nfaces ? m->nfaces : 1);
    double *acc = malloc(3 * nv * sizeof *acc);
    float *nrm = malloc(3 * nv * sizeof *nrm);
    int32_t *tn = malloc(3 * nf * sizeof *tn);
    if (!acc || !nrm || !tn) {
        free(acc);
        free(nrm);
        free(tn);
        return cls_fail(err, CLS_EOTHER, "out of memory for the vertex normals");
    }
    mesh_vertex_normals(m, acc);
    for (int64_t i = 0; i < 3 * m->nverts; i++)
        nrm[i] = (float)acc[i];
    memcpy(tn, m->tri, 3 * (size_t)m->nfaces * sizeof *tn);
    free(acc);
    free(m->nrm);
    free(m->tri_n);
    m->nrm = nrm;
    m->tri_n = tn;
    m->nnrm = m->nverts;
    return CLS_OK;
}

/* ---- points: vertices, or wedges at seams ---------------------------------------------------- */

typedef struct mesh_points {
    int64_t n;       /* points written */
    int split;       /* 1: wedges */
    int32_t *vert;   /* split: mesh vertex of each point */
    int32_t *uvi;    /* texture index per point (-1: none), or NULL */
    int32_t *ni;     /* normal index per point (-1: none), or NULL */
    int32_t *corner; /* split: point of each corner (3 nfaces) */
} mesh_points;

typedef struct {
    int32_t v, t, n, c;
} mesh_wedge;

static int mesh_wedge_cmp(const void *pa, const void *pb)
{
    const mesh_wedge *a = pa, *b = pb;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return (a->c > b->c) - (a->c < b->c);
}

static void mesh_points_free(mesh_points *p)
{
    free(p->vert);
    free(p->uvi);
    free(p->ni);
    free(p->corner);
    memset(p, 0, sizeof *p);
}

static int mesh_points_build(const mesh *m, mesh_points *p, cls_error *err)
{
    memset(p, 0, sizeof *p);
    int64_t nv = m->nverts, nc = 3 * m->nfaces;
    size_t nv1 = (size_t)(nv ? nv : 1);
    int has_t = m->tri_uv != NULL, has_n = m->tri_n != NULL;
    if (has_t)
        p->uvi = malloc(nv1 * sizeof *p->uvi);
    if (has_n)
        p->ni = malloc(nv1 * sizeof *p->ni);
    if ((has_t && !p->uvi) || (has_n && !p->ni))
        goto oom;
    /* one triple per vertex? (-2: no corner seen yet) */
    for (int64_t i = 0; i < nv; i++) {
        if (has_t)
            p->uvi[i] = -2;
        if (has_n)
            p->ni[i] = -2;
    }
    for (int64_t k = 0; k < nc && !p->split; k++) {
        int32_t v = m->tri[k];
        if (has_t) {
            if (p->uvi[v] == -2)
                p->uvi[v] = m->tri_uv[k];
            else if (p->uvi[v] != m->tri_uv[k])
                p->split = 1;
        }
        if (has_n) {
            if (p->ni[v] == -2)
                p->ni[v] = m->tri_n[k];
            else if (p->ni[v] != m->tri_n[k])
                p->split = 1;
        }
    }
    if (!p->split) {
        for (int64_t i = 0; i < nv; i++) {
            if (has_t && p->uvi[i] == -2)
                p->uvi[i] = -1;
            if (has_n && p->ni[i] == -2)
                p->ni[i] = -1;
        }
        p->n = nv;
        return CLS_OK;
    }
    /* wedges: corners sorted by (vertex, texture, normal), plus one entry
     * for each vertex so isolated ones survive */
    mesh_wedge *w = malloc((size_t)(nc + nv) * sizeof *w);
    p->corner = malloc((size_t)(nc ? nc : 1) * sizeof *p->corner);
    p->vert = malloc((size_t)(nc + nv) * sizeof *p->vert);
    int32_t *uvi = has_t ? malloc((size_t)(nc + nv) * sizeof *uvi) : NULL;
    int32_t *ni = has_n ? malloc((size_t)(nc + nv) * sizeof *ni) : NULL;
    char *seen = calloc(nv1, 1);
    if (!w || !p->corner || !p->vert || (has_t && !uvi) || (has_n && !ni) || !seen) {
        free(w);
        free(uvi);
        free(ni);
        free(seen);
        goto oom;
    }
    free(p->uvi);
    free(p->ni);
    p->uvi = uvi;
    p->ni = ni;
    for (int64_t k = 0; k < nc; k++) {
        w[k].v = m->tri[k];
        w[k].t = has_t ? m->tri_uv[k] : -1;
        w[k].n = has_n ? m->tri_n[k] : -1;
        w[k].c = (int32_t)k;
        seen[m->tri[k]] = 1;
    }
    int64_t nw = nc;
    for (int64_t i = 0; i < nv; i++)
        if (!seen[i])
            w[nw++] = (mesh_wedge){(int32_t)i, -1, -1, -1};
    free(seen);
    qsort(w, (size_t)nw, sizeof *w, mesh_wedge_cmp);
    int64_t np = 0;
    for (int64_t k = 0; k < nw; k++) {
        if (k == 0 || w[k].v != w[k - 1].v || w[k].t != w[k - 1].t || w[k].n != w[k - 1].n) {
            p->vert[np] = w[k].v;
            if (has_t)
                p->uvi[np] = w[k].t;
            if (has_n)
                p->ni[np] = w[k].n;
            np++;
        }
        if (w[k].c >= 0)
            p->corner[w[k].c] = (int32_t)(np - 1);
    }
    free(w);
    p->n = np;
    return CLS_OK;
oom:
    mesh_points_free(p);
    return cls_fail(err, CLS_EOTHER, "out of memory writing a mesh of %lld vertices",
                    (long long)nv);
}

static inline int64_t mesh_pt_vertex(const mesh_points *p, int64_t i)
{
    return p->split ? p->vert[i] : i;
}

/* The point of corner k. */
static inline int64_t mesh_pt_corner(const mesh *m, const mesh_points *p, int64_t k)
{
    return p->split ? p->corner[k] : m->tri[k];
}

static void mesh_pt_uv(const mesh *m, const mesh_points *p, int64_t i, float uv[2])
{
    int32_t t = p->uvi ? p->uvi[i] : -1;
    uv[0] = t >= 0 ? m->uv[2 * (int64_t)t] : 0.0f;
    uv[1] = t >= 0 ? m->uv[2 * (int64_t)t + 1] : 0.0f;
}

static void mesh_pt_normal(const mesh *m, const mesh_points *p, int64_t i, float n[3])
{
    int32_t t = p->ni ? p->ni[i] : -1;
    for (int c = 0; c < 3; c++)
        n[c] = t >= 0 ? m->nrm[3 * (int64_t)t + c] : 0.0f;
}

/* Colour of mesh vertex v as 0..255, from o->rgb or m->color; 0 if none. */
static int mesh_rgb(const mesh_out *o, int64_t v, unsigned char c[3])
{
    if (o->rgb) {
        memcpy(c, o->rgb + 3 * v, 3);
        return 1;
    }
    if (o->m->color) {
        for (int q = 0; q < 3; q++) {
            double x = o->m->color[3 * v + q];
            c[q] = (unsigned char)lrint(255.0 * (x < 0 ? 0 : x > 1 ? 1 : x));
        }
        return 1;
    }
    return 0;
}

/* sep (when not 0) and v as "%.17g" (cls_fmt_g17: printf's bytes, 5x faster: a
 * frame of a large mesh is millions of these) */
static void put_g17(FILE *f, char sep, double v)
{
    char b[32], *p = b;
    if (sep)
        *p++ = sep;
    p = cls_fmt_g17(p, v);
    fwrite(b, 1, (size_t)(p - b), f);
}

/* ---- OBJ ---------------------------------------------------------------------------------- */

static void mesh_obj_body(FILE *f, const mesh_out *o)
{
    const mesh *m = o->m;
    unsigned char c[3];
    for (int64_t i = 0; i < m->nverts; i++) {
        const double *x = m->v + 3 * i;
        if (mesh_rgb(o, i, c))
            fprintf(f, "v %.9g %.9g %.9g %.6g %.6g %.6g\n", x[0], x[1], x[2], c[0] / 255.0,
                    c[1] / 255.0, c[2] / 255.0);
        else
            fprintf(f, "v %.9g %.9g %.9g\n", x[0], x[1], x[2]);
    }
    if (m->tri_uv)
        for (int64_t i = 0; i < m->nuv; i++)
            fprintf(f, "vt %.7g %.7g\n", m->uv[2 * i], m->uv[2 * i + 1]);
    if (m->tri_n)
        for (int64_t i = 0; i < m->nnrm; i++)
            fprintf(f, "vn %.7g %.7g %.7g\n", m->nrm[3 * i], m->nrm[3 * i + 1], m->nrm[3 * i + 2]);
    for (int64_t t = 0; t < m->nfaces; t++) {
        fputc('f', f);
        for (int j = 0; j < 3; j++) {
            int64_t k = 3 * t + j;
            int32_t ti = m->tri_uv ? m->tri_uv[k] : -1, ni = m->tri_n ? m->tri_n[k] : -1;
            fprintf(f, " %d", m->tri[k] + 1);
            if (ti >= 0 && ni >= 0)
                fprintf(f, "/%d/%d", ti + 1, ni + 1);
            else if (ti >= 0)
                fprintf(f, "/%d", ti + 1);
            else if (ni >= 0)
                fprintf(f, "//%d", ni + 1);
        }
        fputc('\n', f);
    }
}

int mesh_write_obj(const char *path, const mesh *m, cls_error *err)
{
    mesh_out o = {.m = m};
    return mesh_write(path, PHYS_FMT_OBJ, &o, err);
}

/* ---- PLY ---------------------------------------------------------------------------------- */

static void mesh_ply_body(FILE *f, const mesh_out *o, const mesh_points *p)
{
    const mesh *m = o->m;
    unsigned char c[3];
    int has_rgb = m->nverts > 0 && mesh_rgb(o, 0, c);
    fprintf(f, "ply\nformat ascii 1.0\n");
    if (o->title)
        fprintf(f, "comment %s\n", o->title);
    fprintf(f, "element vertex %lld\nproperty double x\nproperty double y\nproperty double z\n",
            (long long)p->n);
    if (p->ni)
        fputs("property float nx\nproperty float ny\nproperty float nz\n", f);
    if (p->uvi)
        fputs("property float u\nproperty float v\n", f);
    if (has_rgb)
        fputs("property uchar red\nproperty uchar green\nproperty uchar blue\n", f);
    for (int k = 0; k < o->nfields; k++) {
        static const char sfx[3] = {'x', 'y', 'z'};
        if (o->fields[k].ncomp == 1)
            fprintf(f, "property double %s\n", o->fields[k].name);
        else
            for (int q = 0; q < o->fields[k].ncomp; q++)
                fprintf(f, "property double %s_%c\n", o->fields[k].name, sfx[q]);
    }
    if (p->split)
        fputs("property int vertex_id\n", f);
    if (m->nfaces)
        fprintf(f, "element face %lld\nproperty list uchar int vertex_indices\n",
                (long long)m->nfaces);
    fputs("end_header\n", f);
    for (int64_t i = 0; i < p->n; i++) {
        int64_t v = mesh_pt_vertex(p, i);
        const double *x = m->v + 3 * v;
        put_g17(f, 0, x[0]);
        put_g17(f, ' ', x[1]);
        put_g17(f, ' ', x[2]);
        if (p->ni) {
            float n[3];
            mesh_pt_normal(m, p, i, n);
            fprintf(f, " %.7g %.7g %.7g", n[0], n[1], n[2]);
        }
        if (p->uvi) {
            float uv[2];
            mesh_pt_uv(m, p, i, uv);
            fprintf(f, " %.7g %.7g", uv[0], uv[1]);
        }
        if (has_rgb) {
            mesh_rgb(o, v, c);
            fprintf(f, " %d %d %d", c[0], c[1], c[2]);
        }
        for (int k = 0; k < o->nfields; k++)
            for (int q = 0; q < o->fields[k].ncomp; q++)
                put_g17(f, ' ', o->fields[k].v[(int64_t)o->fields[k].ncomp * v + q]);
        if (p->split)
            fprintf(f, " %lld", (long long)v);
        fputc('\n', f);
    }
    for (int64_t t = 0; t < m->nfaces; t++)
        fprintf(f, "3 %lld %lld %lld\n", (long long)mesh_pt_corner(m, p, 3 * t),
                (long long)mesh_pt_corner(m, p, 3 * t + 1),
                (long long)mesh_pt_corner(m, p, 3 * t + 2));
}

/* ---- VTK ---------------------------------------------------------------------------------- */

static void mesh_vtk_body(FILE *f, const mesh_out *o, const mesh_points *p)
{
    const mesh *m = o->m;
    /* the title line is limited to 256 characters and must not be empty */
    char title[200];
    snprintf(title, sizeof title, "%s", o->title && *o->title ? o->title : "clsolve");
    for (char *s = title; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
    fprintf(f, "# vtk DataFile Version 3.0\n%s\nASCII\nDATASET POLYDATA\nPOINTS %lld double\n",
            title, (long long)p->n);
    for (int64_t i = 0; i < p->n; i++) {
        const double *x = m->v + 3 * mesh_pt_vertex(p, i);
        put_g17(f, 0, x[0]);
        put_g17(f, ' ', x[1]);
        put_g17(f, ' ', x[2]);
        fputc('\n', f);
    }
    if (m->nfaces) {
        fprintf(f, "POLYGONS %lld %lld\n", (long long)m->nfaces, (long long)(4 * m->nfaces));
        for (int64_t t = 0; t < m->nfaces; t++)
            fprintf(f, "3 %lld %lld %lld\n", (long long)mesh_pt_corner(m, p, 3 * t),
                    (long long)mesh_pt_corner(m, p, 3 * t + 1),
                    (long long)mesh_pt_corner(m, p, 3 * t + 2));
    } else if (p->n) {
        /* a point set: one vertex cell per point, so ParaView draws them */
        fprintf(f, "VERTICES %lld %lld\n", (long long)p->n, (long long)(2 * p->n));
        for (int64_t i = 0; i < p->n; i++)
            fprintf(f, "1 %lld\n", (long long)i);
    }
    unsigned char c[3];
    int has_rgb = m->nverts > 0 && mesh_rgb(o, 0, c);
    if (!p->n || (!p->ni && !p->uvi && !has_rgb && !o->nfields && !p->split))
        return;
    fprintf(f, "POINT_DATA %lld\n", (long long)p->n);
    if (p->ni) {
        fputs("NORMALS Normals float\n", f);
        for (int64_t i = 0; i < p->n; i++) {
            float n[3];
            mesh_pt_normal(m, p, i, n);
            fprintf(f, "%.7g %.7g %.7g\n", n[0], n[1], n[2]);
        }
    }
    if (p->uvi) {
        fputs("TEXTURE_COORDINATES TCoords 2 float\n", f);
        for (int64_t i = 0; i < p->n; i++) {
            float uv[2];
            mesh_pt_uv(m, p, i, uv);
            fprintf(f, "%.7g %.7g\n", uv[0], uv[1]);
        }
    }
    if (has_rgb) {
        fputs("COLOR_SCALARS rgb 3\n", f);
        for (int64_t i = 0; i < p->n; i++) {
            mesh_rgb(o, mesh_pt_vertex(p, i), c);
            fprintf(f, "%.6g %.6g %.6g\n", c[0] / 255.0, c[1] / 255.0, c[2] / 255.0);
        }
    }
    for (int k = 0; k < o->nfields; k++) {
        const mesh_field *fd = &o->fields[k];
        if (fd->ncomp == 3)
            fprintf(f, "VECTORS %s double\n", fd->name);
        else
            fprintf(f, "SCALARS %s double 1\nLOOKUP_TABLE default\n", fd->name);
        for (int64_t i = 0; i < p->n; i++) {
            int64_t v = mesh_pt_vertex(p, i);
            for (int q = 0; q < fd->ncomp; q++)
                put_g17(f, q ? ' ' : 0, fd->v[(int64_t)fd->ncomp * v + q]);
            fputc('\n', f);
        }
    }
    if (p->split) {
        fputs("SCALARS vertex_id int 1\nLOOKUP_TABLE default\n", f);
        for (int64_t i = 0; i < p->n; i++)
            fprintf(f, "%lld\n", (long long)p->vert[i]);
    }
}

int mesh_write(const char *path, phys_format fmt, const mesh_out *o, cls_error *err)
{
    if (fmt != PHYS_FMT_OBJ && fmt != PHYS_FMT_PLY && fmt != PHYS_FMT_VTK)
        return cls_fail(err, CLS_EOTHER, "%s: meshes are written as obj, ply or vtk (bug)", path);
    mesh_points pts;
    memset(&pts, 0, sizeof pts);
    int rc = phys_refuse_nonfinite(path, "the position", o->m->v, o->m->nverts, 3, err);
    for (int k = 0; k < o->nfields && !rc; k++)
        rc = phys_refuse_nonfinite(path, o->fields[k].name, o->fields[k].v, o->m->nverts,
                                   o->fields[k].ncomp, err);
    if (rc)
        return rc;
    if (fmt != PHYS_FMT_OBJ && (rc = mesh_points_build(o->m, &pts, err)))
        return rc;
    phys_file pf;
    if ((rc = phys_file_open(&pf, path, err))) {
        mesh_points_free(&pts);
        return rc;
    }
    if (fmt == PHYS_FMT_OBJ) {
        fprintf(pf.f, "# %s: %lld vertices, %lld triangles\n",
                o->title ? o->title : "written by clsolve", (long long)o->m->nverts,
                (long long)o->m->nfaces);
        mesh_obj_body(pf.f, o);
    } else if (fmt == PHYS_FMT_PLY) {
        mesh_ply_body(pf.f, o, &pts);
    } else {
        mesh_vtk_body(pf.f, o, &pts);
    }
    mesh_points_free(&pts);
    return phys_file_commit(&pf, err);
}

/* ---- colour map ---------------------------------------------------------------------------- */

void mesh_colormap_coolwarm(double t, unsigned char rgb[3])
{
    /* Moreland's table, 33 entries over [0, 1] (sRGB 0..255) */
    static const unsigned char tab[33][3] = {
        {59, 76, 192},   {68, 90, 204},   {77, 104, 215},  {87, 117, 225},  {98, 130, 234},
        {108, 142, 241}, {119, 154, 247}, {130, 165, 251}, {141, 176, 254}, {152, 185, 255},
        {163, 194, 255}, {174, 201, 253}, {184, 208, 249}, {194, 213, 244}, {204, 217, 238},
        {213, 219, 230}, {221, 221, 221}, {229, 216, 209}, {236, 211, 197}, {241, 204, 185},
        {245, 196, 173}, {247, 187, 160}, {247, 177, 148}, {247, 166, 135}, {244, 154, 123},
        {241, 141, 111}, {236, 127, 99},  {229, 112, 88},  {222, 96, 77},   {213, 80, 66},
        {203, 62, 56},   {192, 40, 47},   {180, 4, 38}};
    if (!(t == t)) /* NaN: the neutral middle */
        t = 0.0;
    double s = (t < -1 ? -1 : t > 1 ? 1 : t) * 0.5 + 0.5; /* [0, 1] */
    double x = s * 32.0;
    int i = (int)x;
    if (i >= 32)
        i = 31;
    double w = x - i;
    for (int c = 0; c < 3; c++)
        rgb[c] = (unsigned char)lrint((1.0 - w) * tab[i][c] + w * tab[i + 1][c]);
}
