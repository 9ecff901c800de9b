/*
 * mesh_priv.h: the line parser the mesh readers share (physics/mesh.c:
 * the parser, OBJ and OFF; physics/mesh_ply.c: PLY) and the readers the
 * entry points (physics/mesh_read.c) dispatch to. Not part of the mesh API.
 */
#ifndef CLS_PHYSICS_MESH_PRIV_H
#define CLS_PHYSICS_MESH_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "mesh.h"

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
    int64_t vcap, ccap, tcap, uvcap, ncap, tuvcap, tncap;
    int64_t pocap, pvcap; /* m->poly_off, m->poly_v */
    /* polygons of more than three corners, triangulated once every face
     * is known (mesh_poly_finish): the polygon and its corners' texture
     * and normal indices (-1: none) from pend_tn[pend_attr[q]] on */
    int64_t npend, pendcap, ntn, tncap2;
    int64_t *pend_poly, *pend_attr;
    int32_t *pend_t, *pend_n;
    cls_error *err;
} mesh_parser;

#define MESH_FAIL(p, ...) mesh_fail_at((p), (p)->lineno, __VA_ARGS__)

/* Ensures room for `need` elements of `size` bytes in *p (capacity *cap);
 * -1 when out of memory. */
int mesh_grow(void **p, int64_t *cap, int64_t need, size_t size);
int mesh_oom(mesh_parser *p);
int mesh_fail_at(mesh_parser *p, long long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Next line into p->line: 1 on a line, 0 at the end, <0 on an error. */
int mesh_next_line(mesh_parser *p);
/* Splits p->line in place at white space ('#' comments when asked). */
int mesh_tokenize(mesh_parser *p, int hash_comments);
/* Next line with at least one token; 1 found, 0 end, <0 error. */
int mesh_next_tokens(mesh_parser *p, int hash_comments);
int mesh_parse_double(mesh_parser *p, const char *s, const char *what, double *out);
int mesh_parse_int(mesh_parser *p, const char *s, const char *what, long long *out);
int mesh_add_vertex(mesh_parser *p, const double *xyz);
int mesh_set_color(mesh_parser *p, const double *rgb);
int mesh_add_uv(mesh_parser *p, double u, double v);
int mesh_add_normal(mesh_parser *p, const double *n);
/* Adds a polygon of k >= 3 vertex indices (already checked); tidx / nidx:
 * its corners' texture and normal indices (-1: none), or NULL. A triangle
 * is added as it is; a larger polygon gets k - 2 triangles at once (its
 * fan, so that the triangle count and the corner attribute arrays are
 * what they will be) and is triangulated for good by mesh_poly_finish. */
int mesh_add_polygon(mesh_parser *p, const int32_t *idx, const int32_t *tidx, const int32_t *nidx,
                     int k);
/* After a successful parse: the pending polygons' triangles (mesh_poly.c). */
int mesh_poly_finish(mesh_parser *p);
/* Frees the parser's pending polygons. */
void mesh_poly_free(mesh_parser *p);

/* The readers, one per format: each parses p->buf into p->m, 0 or -1 with
 * p->err set. */
int mesh_parse_obj(mesh_parser *p);
int mesh_parse_off(mesh_parser *p);
int mesh_parse_ply(mesh_parser *p);

#endif
