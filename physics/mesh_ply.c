/*
 * mesh_ply.c: the ASCII PLY reader (see mesh.h; the line parser is shared
 * with OBJ and OFF through mesh_priv.h).
 *
 * "format ascii 1.0" only (binary formats are refused by name); element
 * vertex with x, y, z and optional red/green/blue (integer types scaled by
 * 1/255, float types taken as they are), nx/ny/nz (normals) and u/v (also
 * s/t, texture_u/texture_v: texture coordinates), all per vertex; element
 * face with a list property vertex_indices (or vertex_index) and optional
 * list texcoord (MeshLab's per-corner u v pairs, 2 values per corner); any
 * other element or property is parsed for syntax and skipped. A declared
 * count is compared with what the file holds, never allocated from.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mesh_priv.h"

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
    } types[] = {{"char", PLY_INT},     {"int8", PLY_INT},      {"uchar", PLY_UINT8},
                 {"uint8", PLY_UINT8},  {"short", PLY_INT},     {"int16", PLY_INT},
                 {"ushort", PLY_INT},   {"uint16", PLY_INT},    {"int", PLY_INT},
                 {"int32", PLY_INT},    {"uint", PLY_INT},      {"uint32", PLY_INT},
                 {"float", PLY_FLOAT},  {"float32", PLY_FLOAT}, {"double", PLY_FLOAT},
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

/* A face and, when its texcoord list holds one u v pair per corner, its
 * corners' texture coordinates (a list of another length is ignored, as
 * MeshLab does). Texture coordinates on some faces only: the others get
 * none (-1). */
static int ply_add_face(mesh_parser *p, const int32_t *idx, int n, const double *tc, int ntc,
                        int32_t **tidx, int *tidx_cap)
{
    if (ntc != 2 * n || (p->m->nuv != 0 && !p->m->tri_uv))
        return mesh_add_polygon(p, idx, NULL, NULL, n);
    if (n > *tidx_cap) {
        int32_t *q = realloc(*tidx, (size_t)n * sizeof *q);
        if (!q)
            return mesh_oom(p);
        *tidx = q;
        *tidx_cap = n;
    }
    for (int j = 0; j < n; j++) {
        (*tidx)[j] = (int32_t)p->m->nuv;
        if (mesh_add_uv(p, tc[2 * j], tc[2 * j + 1]))
            return -1;
    }
    return mesh_add_polygon(p, idx, *tidx, NULL, n);
}

static int mesh_parse_ply_body(mesh_parser *p, ply_elem *el, int nel)
{
    mesh *m = p->m;
    int32_t *idx = NULL, *tidx = NULL;
    int idx_cap = 0, tidx_cap = 0, tc_cap = 0;
    double *tc = NULL;
    int rc = 0;
    for (int e = 0; e < nel && !rc; e++) {
        ply_elem *E = &el[e];
        int is_vertex = !strcmp(E->name, "vertex");
        int is_face = !strcmp(E->name, "face");
        int px = -1, py = -1, pz = -1, pc[3] = {-1, -1, -1}, pf = -1;
        int pn[3] = {-1, -1, -1}, pt[2] = {-1, -1}, ptc = -1;
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
                else if (!strcmp(nm, "nx") || !strcmp(nm, "ny") || !strcmp(nm, "nz"))
                    pn[nm[1] - 'x'] = i;
                else if (!strcmp(nm, "u") || !strcmp(nm, "s") || !strcmp(nm, "texture_u") ||
                         !strcmp(nm, "texture_s"))
                    pt[0] = i;
                else if (!strcmp(nm, "v") || !strcmp(nm, "t") || !strcmp(nm, "texture_v") ||
                         !strcmp(nm, "texture_t"))
                    pt[1] = i;
            }
            if (is_face && E->props[i].is_list && !strcmp(nm, "texcoord"))
                ptc = i;
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
        int has_normal = is_vertex && pn[0] >= 0 && pn[1] >= 0 && pn[2] >= 0;
        int has_uv = is_vertex && pt[0] >= 0 && pt[1] >= 0;
        for (long long n = 0; n < E->count && !rc; n++) {
            int r = mesh_next_tokens(p, 0);
            if (r < 0) {
                rc = -1;
                break;
            }
            if (r == 0) {
                rc = MESH_FAIL(p,
                               "file ends after %lld of the %lld '%s' elements declared on "
                               "line %lld",
                               n, E->count, E->name, E->line);
                break;
            }
            int t = 0;
            double xyz[3] = {0, 0, 0}, rgb[3] = {1, 1, 1}, nrm[3] = {0, 0, 0}, uv[2] = {0, 0};
            int nidx = 0, ntc = 0;
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
                        if (i == pn[c])
                            nrm[c] = v;
                    for (int c = 0; c < 2; c++)
                        if (i == pt[c])
                            uv[c] = v;
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
                if (i == ptc) {
                    if (k > tc_cap) {
                        double *q = realloc(tc, (size_t)k * sizeof *q);
                        if (!q) {
                            rc = mesh_oom(p);
                            break;
                        }
                        tc = q;
                        tc_cap = k;
                    }
                    ntc = k;
                }
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
                    if (i == ptc)
                        tc[j] = v;
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
                if (mesh_add_vertex(p, xyz) || (has_color && mesh_set_color(p, rgb)) ||
                    (has_normal && mesh_add_normal(p, nrm)) ||
                    (has_uv && mesh_add_uv(p, uv[0], uv[1])))
                    rc = -1;
            } else if (is_face) {
                rc = ply_add_face(p, idx, nidx, tc, ntc, &tidx, &tidx_cap);
            }
        }
    }
    free(idx);
    free(tidx);
    free(tc);
    if (rc)
        return rc;
    int r = mesh_next_tokens(p, 0);
    if (r < 0)
        return -1;
    if (r > 0)
        return MESH_FAIL(p, "unexpected content after the last element");
    return 0;
}

int mesh_parse_ply(mesh_parser *p)
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
