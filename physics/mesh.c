/*
 * mesh.c: the mesh's life (init, free), the line parser all readers share,
 * and the OBJ and OFF readers (see mesh.h; PLY is physics/mesh_ply.c, the
 * entry points that pick a reader physics/mesh_read.c, the writers
 * physics/mesh_write.c). The entry points sit above every reader, so the
 * readers only build on this file and nothing here calls back up.
 *
 * The file is read whole into memory and parsed line by line; every line is
 * copied into a NUL-terminated scratch buffer (so a stray NUL byte or a
 * missing final newline cannot run a scanner off the end) and split into
 * whitespace-separated tokens. Arrays grow geometrically as lines are
 * parsed: a count the file declares (OFF "nv nf ne", PLY "element vertex N")
 * is only compared against what the file holds, never used as an allocation
 * size, so a ten-byte file claiming 10^12 vertices costs ten bytes.
 *
 * Decisions:
 *  - OBJ: "v x y z", "v x y z w" (w ignored) and "v x y z r g b" (colour
 *    floats in [0, 1]). If some vertices carry colours and others do not,
 *    the others are white (1, 1, 1), which the springs job reads as k = 1.
 *    Faces "f" take a, a/b, a//c and a/b/c; negative indices count back from
 *    the last vertex read; a face may only name vertices defined before it.
 *    Polygons are triangulated by physics/mesh_poly.c. "vt u v [w]" and
 *    "vn x y z" are kept with the corners' texture and normal indices
 *    (negative ones count back as for vertices); a corner index naming a
 *    texture coordinate or normal the file has not defined yet drops that
 *    attribute for the whole mesh (the geometry is still read). Other
 *    statements (vp, g, o, s, usemtl, mtllib, l, ...) are ignored.
 *  - OFF: header "OFF" / "COFF" / "NOFF" / "CNOFF", counts on the same or the
 *    next line; vertex lines x y z [nx ny nz] [r g b [a]] (NOFF normals
 *    kept per vertex); colours either all
 *    in [0, 1] or integers 0..255 (scaled by 1/255); faces "k i1 .. ik"
 *    0-based, extra tokens after the indices (face colours) ignored.
 *  - PLY: "format ascii 1.0" only (binary formats are refused by name);
 *    element vertex with x, y, z and optional red/green/blue (integer types
 *    scaled by 1/255, float types taken as they are); element face with a
 *    list property vertex_indices (or vertex_index); any other element or
 *    property is parsed for syntax and skipped.
 *  - '#' starts a comment in OBJ and OFF; CR LF line ends read like LF.
 *  - Every number must be finite; positions are stored as doubles.
 */
#include "mesh.h"
#include "mesh_priv.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mesh_init(mesh *m)
{
    memset(m, 0, sizeof *m);
}

void mesh_free(mesh *m)
{
    free(m->v);
    free(m->color);
    free(m->tri);
    free(m->uv);
    free(m->nrm);
    free(m->tri_uv);
    free(m->tri_n);
    free(m->poly_off);
    free(m->poly_v);
    mesh_init(m);
}

/* ---- growable arrays --------------------------------------------------- */

/* Ensures room for `need` elements of `size` bytes in *p (capacity *cap). */
int mesh_grow(void **p, int64_t *cap, int64_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    int64_t nc = *cap ? *cap : 64;
    while (nc < need) {
        if (nc > INT64_MAX / 2)
            return -1;
        nc *= 2;
    }
    if ((uint64_t)nc > SIZE_MAX / size)
        return -1;
    void *q = realloc(*p, (size_t)nc * size);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

int mesh_oom(mesh_parser *p)
{
    return cls_fail(p->err, CLS_EOTHER, "%s: out of memory", p->name);
}

int mesh_fail_at(mesh_parser *p, long long line, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return cls_fail_line(p->err, CLS_EINPUT, line, "%s:%lld: %s", p->name, line, what);
}

/* Next line into p->line (without the line end). */
int mesh_next_line(mesh_parser *p)
{
    if (p->pos >= p->len)
        return 0;
    const char *s = p->buf + p->pos;
    const char *nl = memchr(s, '\n', p->len - p->pos);
    size_t n = nl ? (size_t)(nl - s) : p->len - p->pos;
    p->pos += n + (nl ? 1 : 0);
    p->lineno++;
    if (n > 0 && s[n - 1] == '\r')
        n--;
    if (memchr(s, '\0', n))
        return MESH_FAIL(p, "NUL byte in a text file"), -1;
    if (n + 1 > p->line_cap) {
        size_t nc = p->line_cap ? p->line_cap : 256;
        while (nc < n + 1)
            nc *= 2;
        char *q = realloc(p->line, nc);
        if (!q)
            return mesh_oom(p), -1;
        p->line = q;
        p->line_cap = nc;
    }
    memcpy(p->line, s, n);
    p->line[n] = '\0';
    return 1;
}

/* Splits p->line in place at white space; '#' starts a comment when
 * hash_comments. */
int mesh_tokenize(mesh_parser *p, int hash_comments)
{
    p->ntok = 0;
    char *s = p->line;
    if (hash_comments) {
        char *h = strchr(s, '#');
        if (h)
            *h = '\0';
    }
    for (;;) {
        while (*s && isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        if (p->ntok == p->tok_cap) {
            int nc = p->tok_cap ? 2 * p->tok_cap : 16;
            char **q = realloc(p->tok, (size_t)nc * sizeof *q);
            if (!q)
                return mesh_oom(p);
            p->tok = q;
            p->tok_cap = nc;
        }
        p->tok[p->ntok++] = s;
        while (*s && !isspace((unsigned char)*s))
            s++;
        if (*s)
            *s++ = '\0';
    }
    return 0;
}

/* Next line with at least one token; 1 found, 0 end, <0 error. */
int mesh_next_tokens(mesh_parser *p, int hash_comments)
{
    for (;;) {
        int r = mesh_next_line(p);
        if (r <= 0)
            return r;
        if (mesh_tokenize(p, hash_comments))
            return -1;
        if (p->ntok > 0)
            return 1;
    }
}

int mesh_parse_double(mesh_parser *p, const char *s, const char *what, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end)
        return MESH_FAIL(p, "%s: '%s' is not a number", what, s);
    if (!isfinite(v))
        return MESH_FAIL(p, "%s: '%s' is not a finite number", what, s);
    *out = v;
    return 0;
}

int mesh_parse_int(mesh_parser *p, const char *s, const char *what, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end)
        return MESH_FAIL(p, "%s: '%s' is not an integer", what, s);
    if (errno == ERANGE)
        return MESH_FAIL(p, "%s: '%s' is out of range", what, s);
    *out = v;
    return 0;
}

int mesh_add_vertex(mesh_parser *p, const double *xyz)
{
    mesh *m = p->m;
    if (m->nverts >= INT32_MAX)
        return MESH_FAIL(p, "more than %d vertices", INT32_MAX);
    if (mesh_grow((void **)&m->v, &p->vcap, 3 * (m->nverts + 1), sizeof *m->v))
        return mesh_oom(p);
    memcpy(m->v + 3 * m->nverts, xyz, 3 * sizeof(double));
    if (m->color) {
        if (mesh_grow((void **)&m->color, &p->ccap, 3 * (m->nverts + 1), sizeof *m->color))
            return mesh_oom(p);
        m->color[3 * m->nverts] = m->color[3 * m->nverts + 1] = m->color[3 * m->nverts + 2] = 1.0f;
    }
    m->nverts++;
    return 0;
}

/* Sets the colour of the last vertex added, creating the colour array
 * (earlier vertices white) on first use. */
int mesh_set_color(mesh_parser *p, const double *rgb)
{
    mesh *m = p->m;
    if (!m->color) {
        p->ccap = 0;
        if (mesh_grow((void **)&m->color, &p->ccap, 3 * (m->nverts > 0 ? m->nverts : 1),
                      sizeof *m->color))
            return mesh_oom(p);
        for (int64_t i = 0; i < 3 * m->nverts; i++)
            m->color[i] = 1.0f;
    }
    for (int c = 0; c < 3; c++)
        m->color[3 * (m->nverts - 1) + c] = (float)rgb[c];
    return 0;
}

int mesh_add_uv(mesh_parser *p, double u, double v)
{
    mesh *m = p->m;
    if (m->nuv >= INT32_MAX)
        return MESH_FAIL(p, "more than %d texture coordinates", INT32_MAX);
    if (mesh_grow((void **)&m->uv, &p->uvcap, 2 * (m->nuv + 1), sizeof *m->uv))
        return mesh_oom(p);
    m->uv[2 * m->nuv] = (float)u;
    m->uv[2 * m->nuv + 1] = (float)v;
    m->nuv++;
    return 0;
}

int mesh_add_normal(mesh_parser *p, const double *n)
{
    mesh *m = p->m;
    if (m->nnrm >= INT32_MAX)
        return MESH_FAIL(p, "more than %d normals", INT32_MAX);
    if (mesh_grow((void **)&m->nrm, &p->ncap, 3 * (m->nnrm + 1), sizeof *m->nrm))
        return mesh_oom(p);
    for (int c = 0; c < 3; c++)
        m->nrm[3 * m->nnrm + c] = (float)n[c];
    m->nnrm++;
    return 0;
}

/* Appends corner attribute indices a[0..2] to the per-corner array *arr
 * (capacity *cap), creating it on first use with -1 for the triangles
 * before. */
static int mesh_corner_attr(mesh_parser *p, int32_t **arr, int64_t *cap, const int32_t *a)
{
    mesh *m = p->m;
    if (!*arr && a[0] < 0 && a[1] < 0 && a[2] < 0)
        return 0;
    int fresh = !*arr;
    if (mesh_grow((void **)arr, cap, 3 * (m->nfaces + 1), sizeof **arr))
        return mesh_oom(p);
    if (fresh)
        for (int64_t k = 0; k < 3 * m->nfaces; k++)
            (*arr)[k] = -1;
    memcpy(*arr + 3 * m->nfaces, a, 3 * sizeof *a);
    return 0;
}

static int mesh_add_tri(mesh_parser *p, const int32_t *v, const int32_t *t, const int32_t *n)
{
    mesh *m = p->m;
    static const int32_t none[3] = {-1, -1, -1};
    if (mesh_grow((void **)&m->tri, &p->tcap, 3 * (m->nfaces + 1), sizeof *m->tri) ||
        mesh_corner_attr(p, &m->tri_uv, &p->tuvcap, t ? t : none) ||
        mesh_corner_attr(p, &m->tri_n, &p->tncap, n ? n : none))
        return mesh_oom(p);
    memcpy(m->tri + 3 * m->nfaces, v, 3 * sizeof *v);
    m->nfaces++;
    return 0;
}

/* The polygon list, started at the first polygon that is not a triangle:
 * every face before it was one triangle. */
static int mesh_poly_start(mesh_parser *p)
{
    mesh *m = p->m;
    if (mesh_grow((void **)&m->poly_off, &p->pocap, m->nfaces + 2, sizeof *m->poly_off) ||
        mesh_grow((void **)&m->poly_v, &p->pvcap, 3 * m->nfaces + 4, sizeof *m->poly_v))
        return mesh_oom(p);
    for (int64_t f = 0; f <= m->nfaces; f++)
        m->poly_off[f] = 3 * f;
    if (m->nfaces)
        memcpy(m->poly_v, m->tri, (size_t)(3 * m->nfaces) * sizeof *m->poly_v);
    m->npolys = m->nfaces;
    return 0;
}

/* Records a polygon of more than three corners for mesh_poly_finish. */
static int mesh_poly_pend(mesh_parser *p, const int32_t *tidx, const int32_t *nidx, int k)
{
    /* each pair grows together: the second from the same old capacity */
    int64_t cap = p->pendcap, cap2 = p->tncap2;
    if (mesh_grow((void **)&p->pend_poly, &p->pendcap, p->npend + 1, sizeof *p->pend_poly) ||
        mesh_grow((void **)&p->pend_attr, &cap, p->npend + 1, sizeof *p->pend_attr) ||
        mesh_grow((void **)&p->pend_t, &p->tncap2, p->ntn + k, sizeof *p->pend_t) ||
        mesh_grow((void **)&p->pend_n, &cap2, p->ntn + k, sizeof *p->pend_n))
        return mesh_oom(p);
    p->pend_poly[p->npend] = p->m->npolys - 1;
    p->pend_attr[p->npend] = p->ntn;
    for (int j = 0; j < k; j++) {
        p->pend_t[p->ntn + j] = tidx ? tidx[j] : -1;
        p->pend_n[p->ntn + j] = nidx ? nidx[j] : -1;
    }
    p->ntn += k;
    p->npend++;
    return 0;
}

int mesh_add_polygon(mesh_parser *p, const int32_t *idx, const int32_t *tidx, const int32_t *nidx,
                     int k)
{
    mesh *m = p->m;
    if (k > 3 && !m->poly_off && mesh_poly_start(p))
        return -1;
    if (m->poly_off) {
        int64_t c = m->poly_off[m->npolys];
        if (mesh_grow((void **)&m->poly_off, &p->pocap, m->npolys + 2, sizeof *m->poly_off) ||
            mesh_grow((void **)&m->poly_v, &p->pvcap, c + k, sizeof *m->poly_v))
            return mesh_oom(p);
        memcpy(m->poly_v + c, idx, (size_t)k * sizeof *idx);
        m->poly_off[++m->npolys] = c + k;
        if (k > 3 && mesh_poly_pend(p, tidx, nidx, k))
            return -1;
    }
    for (int i = 1; i + 1 < k; i++) {
        int32_t v[3] = {idx[0], idx[i], idx[i + 1]};
        int32_t t[3], n[3];
        for (int c = 0; c < 3; c++) {
            int j = c == 0 ? 0 : i + c - 1;
            t[c] = tidx ? tidx[j] : -1;
            n[c] = nidx ? nidx[j] : -1;
        }
        if (mesh_add_tri(p, v, tidx ? t : NULL, nidx ? n : NULL))
            return -1;
    }
    return 0;
}

/* ---- OBJ --------------------------------------------------------------- */

/* Resolves a 1-based (or negative, relative) OBJ index against the count
 * defined so far: 0-based index, or -1 when it names nothing yet. */
static int32_t obj_resolve(long long i, int64_t count)
{
    if (i > 0 && i <= count)
        return (int32_t)(i - 1);
    if (i < 0 && i >= -count)
        return (int32_t)(count + i);
    return -1;
}

/* One "f" corner: "a", "a/b", "a//c", "a/b/c": the 0-based vertex into
 * *out, the texture and normal indices into *tex, *nrm (-1: none; -2: an
 * index naming nothing defined yet, which drops that attribute). */
static int obj_corner(mesh_parser *p, const char *s, int32_t *out, int32_t *tex, int32_t *nrm)
{
    char head[32];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    *tex = *nrm = -1;
    if (n == 0 || n >= sizeof head)
        return MESH_FAIL(p, "face corner '%s' has no vertex index", s);
    memcpy(head, s, n);
    head[n] = '\0';
    long long v = 0;
    if (mesh_parse_int(p, head, "face vertex index", &v))
        return -1;
    if (slash) {
        const char *t = slash + 1;
        const char *slash2 = strchr(t, '/');
        size_t tn = slash2 ? (size_t)(slash2 - t) : strlen(t);
        const char *parts[2] = {t, slash2 ? slash2 + 1 : NULL};
        size_t lens[2] = {tn, slash2 ? strlen(slash2 + 1) : 0};
        int64_t counts[2] = {p->m->nuv, p->m->nnrm};
        int32_t *dst[2] = {tex, nrm};
        if (slash2 && strchr(slash2 + 1, '/'))
            return MESH_FAIL(p, "face corner '%s' has too many '/'", s);
        for (int i = 0; i < 2; i++) {
            if (!parts[i] || lens[i] == 0)
                continue;
            if (lens[i] >= sizeof head)
                return MESH_FAIL(p, "face corner '%s': index too long", s);
            memcpy(head, parts[i], lens[i]);
            head[lens[i]] = '\0';
            long long x = 0; /* set by mesh_parse_int; gcc 13 cannot tell */
            if (mesh_parse_int(p, head, "face texture/normal index", &x))
                return -1;
            int32_t r = obj_resolve(x, counts[i]);
            *dst[i] = r >= 0 ? r : -2;
        }
        if (!slash2 && tn == 0)
            return MESH_FAIL(p, "face corner '%s' has an empty texture index", s);
    }
    int64_t nv = p->m->nverts;
    if (v == 0)
        return MESH_FAIL(p, "face vertex index 0 (OBJ indices start at 1)");
    if (v > 0) {
        if (v > nv)
            return MESH_FAIL(p, "face vertex %lld is not defined (%lld vertices so far)", v,
                             (long long)nv);
        *out = (int32_t)(v - 1);
    } else {
        if (v < -nv) /* not -v > nv: -v overflows for v = LLONG_MIN */
            return MESH_FAIL(p,
                             "relative face vertex %lld reaches before the first vertex "
                             "(%lld vertices so far)",
                             v, (long long)nv);
        *out = (int32_t)(nv + v);
    }
    return 0;
}

/* "vt u [v [w]]" or "vn x y z"; a malformed one is an error like a bad
 * vertex (the file is not what it claims). */
static int obj_attr(mesh_parser *p, int is_normal)
{
    int n = p->ntok - 1;
    if (is_normal ? n != 3 : (n < 1 || n > 3))
        return MESH_FAIL(p,
                         is_normal ? "normal needs 3 numbers, got %d"
                                   : "texture coordinate needs 1 to 3 numbers, got %d",
                         n);
    double val[3] = {0, 0, 0};
    for (int i = 0; i < n; i++)
        if (mesh_parse_double(p, p->tok[1 + i], is_normal ? "normal" : "texture coordinate",
                              &val[i]))
            return -1;
    return is_normal ? mesh_add_normal(p, val) : mesh_add_uv(p, val[0], val[1]);
}

/* Drops a corner attribute (array, its corner indices) the faces do not
 * use consistently: no face names it, or one named an undefined entry. */
static void obj_drop_attr(float **arr, int64_t *count, int32_t **corner, int bad)
{
    if (*corner && !bad)
        return;
    free(*arr);
    free(*corner);
    *arr = NULL;
    *corner = NULL;
    *count = 0;
}

int mesh_parse_obj(mesh_parser *p)
{
    int32_t *idx = NULL;
    int idx_cap = 0;
    int r, bad_uv = 0, bad_n = 0;
    while ((r = mesh_next_tokens(p, 1)) > 0) {
        const char *kw = p->tok[0];
        if (!strcmp(kw, "v")) {
            int n = p->ntok - 1;
            if (n != 3 && n != 4 && n != 6) {
                free(idx);
                return MESH_FAIL(p,
                                 "vertex needs 3 coordinates (or x y z w, or x y z r g b), "
                                 "got %d numbers",
                                 n);
            }
            double val[6];
            for (int i = 0; i < n; i++)
                if (mesh_parse_double(p, p->tok[1 + i],
                                      i < 3 ? "vertex coordinate" : "vertex value", &val[i])) {
                    free(idx);
                    return -1;
                }
            if (mesh_add_vertex(p, val)) {
                free(idx);
                return -1;
            }
            if (n == 6) {
                for (int c = 3; c < 6; c++)
                    if (val[c] < 0.0 || val[c] > 1.0) {
                        free(idx);
                        return MESH_FAIL(p, "vertex colour %g is outside [0, 1]", val[c]);
                    }
                if (mesh_set_color(p, val + 3)) {
                    free(idx);
                    return -1;
                }
            }
        } else if (!strcmp(kw, "vt") || !strcmp(kw, "vn")) {
            if (obj_attr(p, kw[1] == 'n')) {
                free(idx);
                return -1;
            }
        } else if (!strcmp(kw, "f")) {
            int k = p->ntok - 1;
            if (k < 3) {
                free(idx);
                return MESH_FAIL(p, "face needs at least 3 vertices, got %d", k);
            }
            if (k > idx_cap) {
                int32_t *q = realloc(idx, 3 * (size_t)k * sizeof *q);
                if (!q) {
                    free(idx);
                    return mesh_oom(p);
                }
                idx = q;
                idx_cap = k;
            }
            int32_t *tidx = idx + k, *nidx = idx + 2 * k;
            int has_t = 0, has_n = 0;
            for (int i = 0; i < k; i++) {
                if (obj_corner(p, p->tok[1 + i], &idx[i], &tidx[i], &nidx[i])) {
                    free(idx);
                    return -1;
                }
                bad_uv |= tidx[i] == -2;
                bad_n |= nidx[i] == -2;
                has_t |= tidx[i] >= 0;
                has_n |= nidx[i] >= 0;
            }
            for (int i = 0; i < k; i++) {
                tidx[i] = tidx[i] < 0 ? -1 : tidx[i];
                nidx[i] = nidx[i] < 0 ? -1 : nidx[i];
            }
            if (mesh_add_polygon(p, idx, has_t ? tidx : NULL, has_n ? nidx : NULL, k)) {
                free(idx);
                return -1;
            }
        }
        /* everything else (vp, g, o, s, usemtl, mtllib, l, p, ...) is not
         * geometry the physics jobs use */
    }
    free(idx);
    obj_drop_attr(&p->m->uv, &p->m->nuv, &p->m->tri_uv, bad_uv);
    obj_drop_attr(&p->m->nrm, &p->m->nnrm, &p->m->tri_n, bad_n);
    return r < 0 ? -1 : 0;
}

/* ---- OFF --------------------------------------------------------------- */

int mesh_parse_off(mesh_parser *p)
{
    int r = mesh_next_tokens(p, 1);
    if (r < 0)
        return -1;
    if (r == 0) /* an empty file is reported on its line 1 */
        return mesh_fail_at(p, p->lineno > 0 ? p->lineno : 1, "empty OFF file");
    const char *h = p->tok[0];
    int has_c = 0, has_n = 0;
    if (!strcmp(h, "OFF"))
        ;
    else if (!strcmp(h, "COFF"))
        has_c = 1;
    else if (!strcmp(h, "NOFF"))
        has_n = 1;
    else if (!strcmp(h, "CNOFF"))
        has_c = has_n = 1;
    else
        return MESH_FAIL(p, "expected the OFF header (OFF, COFF, NOFF or CNOFF), got '%s'", h);
    /* counts: on the header line or the next non-comment line */
    int first = 1;
    if (p->ntok == 1) {
        r = mesh_next_tokens(p, 1);
        if (r < 0)
            return -1;
        if (r == 0)
            return MESH_FAIL(p, "OFF file ends before the vertex and face counts");
        first = 0;
    }
    if (p->ntok - first != 3 && p->ntok - first != 2)
        return MESH_FAIL(p, "expected 'nvertices nfaces nedges', got %d numbers", p->ntok - first);
    long long nv = 0, nf = 0, ne = 0;
    if (mesh_parse_int(p, p->tok[first], "vertex count", &nv) ||
        mesh_parse_int(p, p->tok[first + 1], "face count", &nf) ||
        (p->ntok - first == 3 && mesh_parse_int(p, p->tok[first + 2], "edge count", &ne)))
        return -1;
    if (nv < 0 || nf < 0 || ne < 0)
        return MESH_FAIL(p, "negative count");
    if (nv > INT32_MAX)
        return MESH_FAIL(p, "%lld vertices is more than this reader supports (%d)", nv, INT32_MAX);
    long long count_line = p->lineno;
    int ncoord = 3 + (has_n ? 3 : 0);
    double colmax = 0.0;
    int col_int = 1;
    long long frac_line = 0, big_line = 0; /* first [0, 1] float, first value above 1 */
    for (long long i = 0; i < nv; i++) {
        r = mesh_next_tokens(p, 1);
        if (r < 0)
            return -1;
        if (r == 0)
            return mesh_fail_at(p, p->lineno,
                                "file ends after %lld of the %lld vertices "
                                "declared on line %lld",
                                i, nv, count_line);
        int n = p->ntok;
        int ok = n == ncoord || (has_c && (n == ncoord + 3 || n == ncoord + 4)) ||
                 (!has_c && (n == ncoord + 3 || n == ncoord + 4));
        if (!ok)
            return MESH_FAIL(p, "vertex %lld: expected %d numbers%s, got %d", i, ncoord,
                             has_c ? " and a colour" : "", n);
        if (has_c && n == ncoord)
            return MESH_FAIL(p, "vertex %lld: COFF vertex without a colour", i);
        double val[10];
        for (int t = 0; t < n; t++)
            if (mesh_parse_double(p, p->tok[t], t < 3 ? "vertex coordinate" : "vertex value",
                                  &val[t]))
                return -1;
        if (mesh_add_vertex(p, val) || (has_n && mesh_add_normal(p, val + 3)))
            return -1;
        if (n >= ncoord + 3) {
            double *c = val + ncoord;
            for (int t = 0; t < 3; t++) {
                if (c[t] < 0.0 || c[t] > 255.0)
                    return MESH_FAIL(p, "vertex colour %g is outside [0, 1] and [0, 255]", c[t]);
                if (c[t] != floor(c[t])) {
                    col_int = 0;
                    if (!frac_line)
                        frac_line = p->lineno;
                }
                if (c[t] > 1.0 && !big_line)
                    big_line = p->lineno;
                if (c[t] > colmax)
                    colmax = c[t];
            }
            if (mesh_set_color(p, c))
                return -1;
        }
    }
    if (p->m->color && colmax > 1.0) {
        if (!col_int) /* reported where the second kind first appears */
            return mesh_fail_at(p, frac_line > big_line ? frac_line : big_line,
                                "vertex colours mix [0, 1] floats and 0..255 values (a "
                                "fraction on line %lld, a value above 1 on line %lld)",
                                frac_line, big_line);
        for (int64_t i = 0; i < 3 * p->m->nverts; i++)
            p->m->color[i] /= 255.0f;
    }
    int32_t *idx = NULL;
    int idx_cap = 0;
    for (long long f = 0; f < nf; f++) {
        r = mesh_next_tokens(p, 1);
        if (r <= 0) {
            free(idx);
            if (r == 0)
                return MESH_FAIL(p, "file ends after %lld of the %lld faces declared on line %lld",
                                 f, nf, count_line);
            return -1;
        }
        long long k = 0;
        if (mesh_parse_int(p, p->tok[0], "face vertex count", &k)) {
            free(idx);
            return -1;
        }
        if (k < 3) {
            free(idx);
            return MESH_FAIL(p, "face needs at least 3 vertices, got %lld", k);
        }
        if (k > p->ntok - 1) {
            free(idx);
            return MESH_FAIL(p, "face declares %lld vertices but lists %d", k, p->ntok - 1);
        }
        if (k > idx_cap) {
            int32_t *q = realloc(idx, (size_t)k * sizeof *q);
            if (!q) {
                free(idx);
                return mesh_oom(p);
            }
            idx = q;
            idx_cap = (int)k;
        }
        for (int i = 0; i < (int)k; i++) {
            long long v = 0;
            if (mesh_parse_int(p, p->tok[1 + i], "face vertex index", &v)) {
                free(idx);
                return -1;
            }
            if (v < 0 || v >= nv) {
                free(idx);
                return MESH_FAIL(p, "face vertex %lld is out of range [0, %lld)", v, nv);
            }
            idx[i] = (int32_t)v;
        }
        /* tokens after the indices are a face colour: checked as numbers */
        for (int t = 1 + (int)k; t < p->ntok; t++) {
            double dummy;
            if (mesh_parse_double(p, p->tok[t], "face colour", &dummy)) {
                free(idx);
                return -1;
            }
        }
        if (mesh_add_polygon(p, idx, NULL, NULL, (int)k)) {
            free(idx);
            return -1;
        }
    }
    free(idx);
    r = mesh_next_tokens(p, 1);
    if (r < 0)
        return -1;
    if (r > 0)
        return MESH_FAIL(p, "unexpected content after the %lld faces declared on line %lld", nf,
                         count_line);
    return 0;
}
