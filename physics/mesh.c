/*
 * mesh.c: OBJ, OFF and ASCII PLY readers and the OBJ writer (see mesh.h).
 *
 * The file is read whole into memory and parsed line by line; every line is
 * copied into a NUL-terminated scratch buffer (so a stray NUL byte or a
 * missing final newline cannot run a scanner off the end) and split into
 * whitespace-separated tokens. Arrays grow geometrically as lines are
 * parsed: a count the file declares (OFF "nv nf ne", PLY "element vertex N")
 * is only compared against what the file holds, never used as an allocation
 * size, so a ten-byte file claiming 10^12 vertices costs ten bytes.
 *
 * Format choice: content first ("ply" first line; OFF, COFF, NOFF or CNOFF
 * first token), then the extension (.off, .ply), else OBJ.
 *
 * Decisions:
 *  - OBJ: "v x y z", "v x y z w" (w ignored) and "v x y z r g b" (colour
 *    floats in [0, 1]). If some vertices carry colours and others do not,
 *    the others are white (1, 1, 1), which the springs job reads as k = 1.
 *    Faces "f" take a, a/b, a//c and a/b/c; negative indices count back from
 *    the last vertex read; a face may only name vertices defined before it.
 *    Polygons are fan-triangulated (v0, vi, vi+1). Other statements (vt, vn,
 *    g, o, s, usemtl, mtllib, l, ...) are ignored.
 *  - OFF: header "OFF" / "COFF" / "NOFF" / "CNOFF", counts on the same or the
 *    next line; vertex lines x y z [nx ny nz] [r g b [a]]; colours either all
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
    mesh_init(m);
}

/* ---- growable arrays --------------------------------------------------- */

/* Ensures room for `need` elements of `size` bytes in *p (capacity *cap). */
static int mesh_grow(void **p, int64_t *cap, int64_t need, size_t size)
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

/* Parser state shared by the three formats. */
typedef struct mesh_parser {
    const char *name;
    const char *buf;
    size_t len, pos;
    long long lineno;
    char *line; /* NUL-terminated copy of the current line */
    size_t line_cap;
    /* token split of the current line */
    char **tok;
    int ntok, tok_cap;
    mesh *m;
    int64_t vcap, ccap, tcap;
    cls_error *err;
} mesh_parser;

static int mesh_oom(mesh_parser *p)
{
    return cls_fail(p->err, CLS_EOTHER, "%s: out of memory", p->name);
}

#define MESH_FAIL(p, ...) mesh_fail_at((p), (p)->lineno, __VA_ARGS__)

static int mesh_fail_at(mesh_parser *p, long long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int mesh_fail_at(mesh_parser *p, long long line, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return cls_fail_line(p->err, CLS_EINPUT, line, "%s:%lld: %s", p->name, line, what);
}

/* Next line into p->line (without the line end). Returns 1 on a line, 0 at
 * the end of the buffer, negative on an error already reported. */
static int mesh_next_line(mesh_parser *p)
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
static int mesh_tokenize(mesh_parser *p, int hash_comments)
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
static int mesh_next_tokens(mesh_parser *p, int hash_comments)
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

static int mesh_parse_double(mesh_parser *p, const char *s, const char *what, double *out)
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

static int mesh_parse_int(mesh_parser *p, const char *s, const char *what, long long *out)
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

static int mesh_add_vertex(mesh_parser *p, const double *xyz)
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
static int mesh_set_color(mesh_parser *p, const double *rgb)
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

static int mesh_add_tri(mesh_parser *p, int32_t a, int32_t b, int32_t c)
{
    mesh *m = p->m;
    if (mesh_grow((void **)&m->tri, &p->tcap, 3 * (m->nfaces + 1), sizeof *m->tri))
        return mesh_oom(p);
    int32_t *t = m->tri + 3 * m->nfaces;
    t[0] = a;
    t[1] = b;
    t[2] = c;
    m->nfaces++;
    return 0;
}

/* Fan-triangulates a polygon of k >= 3 vertex indices (already checked). */
static int mesh_add_polygon(mesh_parser *p, const int32_t *idx, int k)
{
    for (int i = 1; i + 1 < k; i++)
        if (mesh_add_tri(p, idx[0], idx[i], idx[i + 1]))
            return -1;
    return 0;
}

/* ---- OBJ --------------------------------------------------------------- */

/* One "f" corner: "a", "a/b", "a//c", "a/b/c"; returns the 0-based vertex. */
static int obj_corner(mesh_parser *p, const char *s, int32_t *out)
{
    char head[32];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof head)
        return MESH_FAIL(p, "face corner '%s' has no vertex index", s);
    memcpy(head, s, n);
    head[n] = '\0';
    long long v = 0;
    if (mesh_parse_int(p, head, "face vertex index", &v))
        return -1;
    if (slash) { /* texture and normal indices: syntax only */
        const char *t = slash + 1;
        const char *slash2 = strchr(t, '/');
        size_t tn = slash2 ? (size_t)(slash2 - t) : strlen(t);
        const char *parts[2] = {t, slash2 ? slash2 + 1 : NULL};
        size_t lens[2] = {tn, slash2 ? strlen(slash2 + 1) : 0};
        if (slash2 && strchr(slash2 + 1, '/'))
            return MESH_FAIL(p, "face corner '%s' has too many '/'", s);
        for (int i = 0; i < 2; i++) {
            if (!parts[i] || lens[i] == 0)
                continue;
            if (lens[i] >= sizeof head)
                return MESH_FAIL(p, "face corner '%s': index too long", s);
            memcpy(head, parts[i], lens[i]);
            head[lens[i]] = '\0';
            long long dummy;
            if (mesh_parse_int(p, head, "face texture/normal index", &dummy))
                return -1;
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
            return MESH_FAIL(p, "relative face vertex %lld reaches before the first vertex "
                             "(%lld vertices so far)", v, (long long)nv);
        *out = (int32_t)(nv + v);
    }
    return 0;
}

static int mesh_parse_obj(mesh_parser *p)
{
    int32_t *idx = NULL;
    int idx_cap = 0;
    int r;
    while ((r = mesh_next_tokens(p, 1)) > 0) {
        const char *kw = p->tok[0];
        if (!strcmp(kw, "v")) {
            int n = p->ntok - 1;
            if (n != 3 && n != 4 && n != 6) {
                free(idx);
                return MESH_FAIL(p, "vertex needs 3 coordinates (or x y z w, or x y z r g b), "
                                 "got %d numbers", n);
            }
            double val[6];
            for (int i = 0; i < n; i++)
                if (mesh_parse_double(p, p->tok[1 + i], i < 3 ? "vertex coordinate"
                                                               : "vertex value", &val[i])) {
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
        } else if (!strcmp(kw, "f")) {
            int k = p->ntok - 1;
            if (k < 3) {
                free(idx);
                return MESH_FAIL(p, "face needs at least 3 vertices, got %d", k);
            }
            if (k > idx_cap) {
                int32_t *q = realloc(idx, (size_t)k * sizeof *q);
                if (!q) {
                    free(idx);
                    return mesh_oom(p);
                }
                idx = q;
                idx_cap = k;
            }
            for (int i = 0; i < k; i++)
                if (obj_corner(p, p->tok[1 + i], &idx[i])) {
                    free(idx);
                    return -1;
                }
            if (mesh_add_polygon(p, idx, k)) {
                free(idx);
                return -1;
            }
        }
        /* everything else (vt, vn, vp, g, o, s, usemtl, mtllib, l, p, ...) is
         * not geometry the physics jobs use */
    }
    free(idx);
    return r < 0 ? -1 : 0;
}

/* ---- OFF --------------------------------------------------------------- */

static int mesh_parse_off(mesh_parser *p)
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
        return MESH_FAIL(p, "expected 'nvertices nfaces nedges', got %d numbers",
                         p->ntok - first);
    long long nv = 0, nf = 0, ne = 0;
    if (mesh_parse_int(p, p->tok[first], "vertex count", &nv) ||
        mesh_parse_int(p, p->tok[first + 1], "face count", &nf) ||
        (p->ntok - first == 3 && mesh_parse_int(p, p->tok[first + 2], "edge count", &ne)))
        return -1;
    if (nv < 0 || nf < 0 || ne < 0)
        return MESH_FAIL(p, "negative count");
    if (nv > INT32_MAX)
        return MESH_FAIL(p, "%lld vertices is more than this reader supports (%d)", nv,
                         INT32_MAX);
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
            return mesh_fail_at(p, p->lineno, "file ends after %lld of the %lld vertices "
                                "declared on line %lld", i, nv, count_line);
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
        if (mesh_add_vertex(p, val))
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
        if (mesh_add_polygon(p, idx, (int)k)) {
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

/* ---- PLY --------------------------------------------------------------- */

typedef enum { PLY_INT, PLY_UINT8, PLY_FLOAT } ply_kind;

typedef struct ply_prop {
    char name[64];
    int is_list;
    ply_kind count_kind, kind;
} ply_prop;

typedef struct ply_elem {
    char name[64];
    long long count;
    long long line;
    ply_prop *props;
    int nprops, cap;
} ply_elem;

static int ply_type(const char *s, ply_kind *k)
{
    static const struct {
        const char *name;
        ply_kind kind;
    } types[] = {{"char", PLY_INT},    {"int8", PLY_INT},     {"uchar", PLY_UINT8},
                 {"uint8", PLY_UINT8}, {"short", PLY_INT},    {"int16", PLY_INT},
                 {"ushort", PLY_INT},  {"uint16", PLY_INT},   {"int", PLY_INT},
                 {"int32", PLY_INT},   {"uint", PLY_INT},     {"uint32", PLY_INT},
                 {"float", PLY_FLOAT}, {"float32", PLY_FLOAT}, {"double", PLY_FLOAT},
                 {"float64", PLY_FLOAT}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(s, types[i].name)) {
            *k = types[i].kind;
            return 0;
        }
    return -1;
}

static void ply_free_elems(ply_elem *e, int n)
{
    for (int i = 0; i < n; i++)
        free(e[i].props);
    free(e);
}

/* Parses one value of the given kind. */
static int ply_value(mesh_parser *p, const char *s, ply_kind k, const char *what, double *out)
{
    if (k == PLY_FLOAT)
        return mesh_parse_double(p, s, what, out);
    long long v = 0;
    if (mesh_parse_int(p, s, what, &v))
        return -1;
    if (k == PLY_UINT8 && (v < 0 || v > 255))
        return MESH_FAIL(p, "%s: %lld is outside the uchar range 0..255", what, v);
    *out = (double)v;
    return 0;
}

static int mesh_parse_ply_body(mesh_parser *p, ply_elem *el, int nel)
{
    mesh *m = p->m;
    int32_t *idx = NULL;
    int idx_cap = 0;
    int rc = 0;
    for (int e = 0; e < nel && !rc; e++) {
        ply_elem *E = &el[e];
        int is_vertex = !strcmp(E->name, "vertex");
        int is_face = !strcmp(E->name, "face");
        int px = -1, py = -1, pz = -1, pc[3] = {-1, -1, -1}, pf = -1;
        for (int i = 0; i < E->nprops; i++) {
            const char *nm = E->props[i].name;
            if (is_vertex && !E->props[i].is_list) {
                if (!strcmp(nm, "x"))
                    px = i;
                else if (!strcmp(nm, "y"))
                    py = i;
                else if (!strcmp(nm, "z"))
                    pz = i;
                else if (!strcmp(nm, "red") || !strcmp(nm, "r"))
                    pc[0] = i;
                else if (!strcmp(nm, "green") || !strcmp(nm, "g"))
                    pc[1] = i;
                else if (!strcmp(nm, "blue") || !strcmp(nm, "b"))
                    pc[2] = i;
            }
            if (is_face && E->props[i].is_list &&
                (!strcmp(nm, "vertex_indices") || !strcmp(nm, "vertex_index")))
                pf = i;
        }
        if (is_vertex && (px < 0 || py < 0 || pz < 0)) {
            rc = mesh_fail_at(p, E->line, "element vertex lacks an x, y or z property");
            break;
        }
        if (is_face && pf < 0) {
            rc = mesh_fail_at(p, E->line, "element face lacks a vertex_indices list");
            break;
        }
        int has_color = is_vertex && pc[0] >= 0 && pc[1] >= 0 && pc[2] >= 0;
        for (long long n = 0; n < E->count && !rc; n++) {
            int r = mesh_next_tokens(p, 0);
            if (r < 0) {
                rc = -1;
                break;
            }
            if (r == 0) {
                rc = MESH_FAIL(p, "file ends after %lld of the %lld '%s' elements declared on "
                               "line %lld", n, E->count, E->name, E->line);
                break;
            }
            int t = 0;
            double xyz[3] = {0, 0, 0}, rgb[3] = {1, 1, 1};
            int nidx = 0;
            for (int i = 0; i < E->nprops && !rc; i++) {
                ply_prop *P = &E->props[i];
                if (t >= p->ntok) {
                    rc = MESH_FAIL(p, "'%s' element has too few values (property '%s' missing)",
                                   E->name, P->name);
                    break;
                }
                if (!P->is_list) {
                    double v = 0.0;
                    if (ply_value(p, p->tok[t++], P->kind, P->name, &v)) {
                        rc = -1;
                        break;
                    }
                    if (i == px)
                        xyz[0] = v;
                    else if (i == py)
                        xyz[1] = v;
                    else if (i == pz)
                        xyz[2] = v;
                    for (int c = 0; c < 3; c++)
                        if (i == pc[c]) {
                            if (P->kind == PLY_FLOAT) {
                                if (v < 0.0 || v > 1.0) {
                                    rc = MESH_FAIL(p, "float colour %g is outside [0, 1]", v);
                                    break;
                                }
                                rgb[c] = v;
                            } else {
                                if (v < 0.0 || v > 255.0) {
                                    rc = MESH_FAIL(p, "colour %g is outside 0..255", v);
                                    break;
                                }
                                rgb[c] = v / 255.0;
                            }
                        }
                    continue;
                }
                double cnt = 0.0;
                if (ply_value(p, p->tok[t++], P->count_kind, "list count", &cnt)) {
                    rc = -1;
                    break;
                }
                if (cnt < 0 || cnt > (double)(p->ntok - t)) {
                    rc = MESH_FAIL(p, "list '%s' declares %.0f values but the line has %d more",
                                   P->name, cnt, p->ntok - t);
                    break;
                }
                int k = (int)cnt;
                if (i == pf) {
                    if (k < 3) {
                        rc = MESH_FAIL(p, "face needs at least 3 vertices, got %d", k);
                        break;
                    }
                    if (k > idx_cap) {
                        int32_t *q = realloc(idx, (size_t)k * sizeof *q);
                        if (!q) {
                            rc = mesh_oom(p);
                            break;
                        }
                        idx = q;
                        idx_cap = k;
                    }
                    nidx = k;
                }
                for (int j = 0; j < k; j++) {
                    double v = 0.0;
                    if (ply_value(p, p->tok[t++], P->kind, P->name, &v)) {
                        rc = -1;
                        break;
                    }
                    if (i == pf) {
                        if (P->kind == PLY_FLOAT && v != floor(v)) {
                            rc = MESH_FAIL(p, "face vertex index %g is not an integer", v);
                            break;
                        }
                        idx[j] = (int32_t)-1;
                        if (v >= 0 && v < (double)m->nverts)
                            idx[j] = (int32_t)v;
                        else {
                            rc = MESH_FAIL(p, "face vertex %.0f is out of range [0, %lld)", v,
                                           (long long)m->nverts);
                            break;
                        }
                    }
                }
            }
            if (rc)
                break;
            if (t != p->ntok) {
                rc = MESH_FAIL(p, "'%s' element has %d values, its properties take %d", E->name,
                               p->ntok, t);
                break;
            }
            if (is_vertex) {
                if (mesh_add_vertex(p, xyz) || (has_color && mesh_set_color(p, rgb)))
                    rc = -1;
            } else if (is_face) {
                if (mesh_add_polygon(p, idx, nidx))
                    rc = -1;
            }
        }
    }
    free(idx);
    if (rc)
        return rc;
    int r = mesh_next_tokens(p, 0);
    if (r < 0)
        return -1;
    if (r > 0)
        return MESH_FAIL(p, "unexpected content after the last element");
    return 0;
}

static int mesh_parse_ply(mesh_parser *p)
{
    int r = mesh_next_line(p);
    if (r <= 0)
        return r < 0 ? -1 : mesh_fail_at(p, p->lineno > 0 ? p->lineno : 1, "empty PLY file");
    if (mesh_tokenize(p, 0))
        return -1;
    if (p->ntok != 1 || strcmp(p->tok[0], "ply"))
        return MESH_FAIL(p, "expected 'ply' on the first line");
    ply_elem *el = NULL;
    int nel = 0, elcap = 0, have_format = 0, vertex_seen = 0;
    for (;;) {
        r = mesh_next_line(p);
        if (r < 0)
            goto fail;
        if (r == 0) {
            r = MESH_FAIL(p, "file ends inside the PLY header (no end_header)");
            goto fail;
        }
        if (mesh_tokenize(p, 0))
            goto fail;
        if (p->ntok == 0)
            continue;
        const char *kw = p->tok[0];
        if (!strcmp(kw, "comment") || !strcmp(kw, "obj_info"))
            continue;
        if (!strcmp(kw, "end_header")) {
            if (!have_format) {
                r = MESH_FAIL(p, "PLY header has no format line");
                goto fail;
            }
            break;
        }
        if (!strcmp(kw, "format")) {
            if (p->ntok != 3) {
                r = MESH_FAIL(p, "expected 'format ascii 1.0'");
                goto fail;
            }
            if (strcmp(p->tok[1], "ascii")) {
                r = MESH_FAIL(p, "PLY format '%s' is not supported (only ascii)", p->tok[1]);
                goto fail;
            }
            if (strcmp(p->tok[2], "1.0")) {
                r = MESH_FAIL(p, "PLY version '%s' is not supported (only 1.0)", p->tok[2]);
                goto fail;
            }
            have_format = 1;
            continue;
        }
        if (!strcmp(kw, "element")) {
            if (p->ntok != 3) {
                r = MESH_FAIL(p, "expected 'element NAME COUNT'");
                goto fail;
            }
            long long cnt = 0;
            if (mesh_parse_int(p, p->tok[2], "element count", &cnt))
                goto fail;
            if (cnt < 0) {
                r = MESH_FAIL(p, "negative element count %lld", cnt);
                goto fail;
            }
            if (strlen(p->tok[1]) >= sizeof el[0].name) {
                r = MESH_FAIL(p, "element name too long");
                goto fail;
            }
            if (!strcmp(p->tok[1], "vertex")) {
                if (vertex_seen++) {
                    r = MESH_FAIL(p, "second 'element vertex'");
                    goto fail;
                }
                if (cnt > INT32_MAX) {
                    r = MESH_FAIL(p, "%lld vertices is more than this reader supports", cnt);
                    goto fail;
                }
            } else if (!strcmp(p->tok[1], "face") && !vertex_seen) {
                r = MESH_FAIL(p, "element face comes before element vertex");
                goto fail;
            }
            if (nel == elcap) {
                int nc = elcap ? 2 * elcap : 4;
                ply_elem *q = realloc(el, (size_t)nc * sizeof *q);
                if (!q) {
                    r = mesh_oom(p);
                    goto fail;
                }
                el = q;
                elcap = nc;
            }
            memset(&el[nel], 0, sizeof el[nel]);
            strcpy(el[nel].name, p->tok[1]);
            el[nel].count = cnt;
            el[nel].line = p->lineno;
            nel++;
            continue;
        }
        if (!strcmp(kw, "property")) {
            if (nel == 0) {
                r = MESH_FAIL(p, "property before any element");
                goto fail;
            }
            ply_elem *E = &el[nel - 1];
            ply_prop P;
            memset(&P, 0, sizeof P);
            const char *name;
            if (p->ntok >= 2 && !strcmp(p->tok[1], "list")) {
                if (p->ntok != 5) {
                    r = MESH_FAIL(p, "expected 'property list COUNT_TYPE TYPE NAME'");
                    goto fail;
                }
                P.is_list = 1;
                if (ply_type(p->tok[2], &P.count_kind) || P.count_kind == PLY_FLOAT) {
                    r = MESH_FAIL(p, "'%s' is not an integer PLY type", p->tok[2]);
                    goto fail;
                }
                if (ply_type(p->tok[3], &P.kind)) {
                    r = MESH_FAIL(p, "'%s' is not a PLY type", p->tok[3]);
                    goto fail;
                }
                name = p->tok[4];
            } else {
                if (p->ntok != 3) {
                    r = MESH_FAIL(p, "expected 'property TYPE NAME'");
                    goto fail;
                }
                if (ply_type(p->tok[1], &P.kind)) {
                    r = MESH_FAIL(p, "'%s' is not a PLY type", p->tok[1]);
                    goto fail;
                }
                name = p->tok[2];
            }
            if (strlen(name) >= sizeof P.name) {
                r = MESH_FAIL(p, "property name too long");
                goto fail;
            }
            strcpy(P.name, name);
            if (E->nprops == E->cap) {
                int nc = E->cap ? 2 * E->cap : 8;
                if (nc > 4096) {
                    r = MESH_FAIL(p, "too many properties");
                    goto fail;
                }
                ply_prop *q = realloc(E->props, (size_t)nc * sizeof *q);
                if (!q) {
                    r = mesh_oom(p);
                    goto fail;
                }
                E->props = q;
                E->cap = nc;
            }
            E->props[E->nprops++] = P;
            continue;
        }
        r = MESH_FAIL(p, "unknown PLY header line '%s'", kw);
        goto fail;
    }
    r = mesh_parse_ply_body(p, el, nel);
    ply_free_elems(el, nel);
    return r ? -1 : 0;
fail:
    ply_free_elems(el, nel);
    return -1;
}

/* ---- entry points -------------------------------------------------------- */

typedef enum { MESH_OBJ, MESH_OFF, MESH_PLY } mesh_format;

static int mesh_ext_is(const char *name, const char *ext)
{
    size_t n = strlen(name), e = strlen(ext);
    if (n < e)
        return 0;
    for (size_t i = 0; i < e; i++)
        if (tolower((unsigned char)name[n - e + i]) != ext[i])
            return 0;
    return 1;
}

static mesh_format mesh_detect(const char *buf, size_t len, const char *name)
{
    size_t i = 0;
    while (i < len && isspace((unsigned char)buf[i]))
        i++;
    size_t j = i;
    while (j < len && !isspace((unsigned char)buf[j]) && buf[j] != '#')
        j++;
    size_t n = j - i;
    if (n == 3 && !memcmp(buf + i, "ply", 3))
        return MESH_PLY;
    static const char *const offs[] = {"OFF", "COFF", "NOFF", "CNOFF"};
    for (size_t k = 0; k < 4; k++)
        if (n == strlen(offs[k]) && !memcmp(buf + i, offs[k], n))
            return MESH_OFF;
    if (name && mesh_ext_is(name, ".off"))
        return MESH_OFF;
    if (name && mesh_ext_is(name, ".ply"))
        return MESH_PLY;
    return MESH_OBJ;
}

int mesh_read_buf(const char *buf, size_t len, const char *name, mesh *m, cls_error *err)
{
    mesh_init(m);
    if (!name)
        name = "(mesh)";
    mesh_parser p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.buf = buf;
    p.len = len;
    p.m = m;
    p.err = err;
    int rc;
    mesh_format f = mesh_detect(buf, len, name);
    if (f == MESH_PLY)
        rc = mesh_parse_ply(&p);
    else if (f == MESH_OFF)
        rc = mesh_parse_off(&p);
    else
        rc = mesh_parse_obj(&p);
    free(p.line);
    free(p.tok);
    if (!rc && m->nverts == 0)
        rc = mesh_fail_at(&p, p.lineno > 0 ? p.lineno : 1, "no vertices in the file");
    if (rc) {
        mesh_free(m);
        return err ? (err->code ? err->code : CLS_EINPUT) : CLS_EINPUT;
    }
    return CLS_OK;
}

int mesh_read(const char *path, mesh *m, cls_error *err)
{
    mesh_init(m);
    FILE *f = fopen(path, "rb");
    if (!f)
        return cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t nc = cap ? 2 * cap : 1 << 16;
            char *q = realloc(buf, nc);
            if (!q) {
                free(buf);
                fclose(f);
                return cls_fail(err, CLS_EOTHER, "%s: out of memory", path);
            }
            buf = q;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return cls_fail(err, CLS_EOTHER, "%s: read error", path);
    }
    int rc = mesh_read_buf(buf, len, path, m, err);
    free(buf);
    return rc;
}

int mesh_write_obj(const char *path, const mesh *m, cls_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return cls_fail(err, CLS_EOTHER, "%s: cannot create: %s", path, strerror(errno));
    fprintf(f, "# written by clsolve: %lld vertices, %lld triangles\n", (long long)m->nverts,
            (long long)m->nfaces);
    for (int64_t i = 0; i < m->nverts; i++) {
        const double *x = m->v + 3 * i;
        if (m->color)
            fprintf(f, "v %.9g %.9g %.9g %.6g %.6g %.6g\n", x[0], x[1], x[2], m->color[3 * i],
                    m->color[3 * i + 1], m->color[3 * i + 2]);
        else
            fprintf(f, "v %.9g %.9g %.9g\n", x[0], x[1], x[2]);
    }
    for (int64_t t = 0; t < m->nfaces; t++)
        fprintf(f, "f %d %d %d\n", m->tri[3 * t] + 1, m->tri[3 * t + 1] + 1, m->tri[3 * t + 2] + 1);
    int bad = ferror(f);
    if (fclose(f) || bad)
        return cls_fail(err, CLS_EOTHER, "%s: write error", path);
    return CLS_OK;
}
