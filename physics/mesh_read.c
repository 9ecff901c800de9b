/*
 * mesh_read.c: the entry points of the mesh readers (see mesh.h): read the
 * file whole, pick the format, run its reader, then what every format
 * needs after it (polygons triangulated once every edge is known,
 * physics/mesh_poly.c; per-vertex attributes linked to the corners, at
 * least one vertex).
 *
 * Format choice: content first ("ply" first line; OFF, COFF, NOFF or CNOFF
 * first token), then the extension (.off, .ply), else OBJ.
 *
 * This file is the dispatcher above the readers (OBJ and OFF in mesh.c, PLY
 * in mesh_ply.c) and the line parser they share (mesh.c, mesh_priv.h): it
 * calls down into them and they never call it, so the files depend one way.
 */
#include "mesh.h"
#include "mesh_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* PLY and NOFF hold texture coordinates and normals per vertex: the
 * corners then index them by their vertex. An attribute given for only
 * some vertices is dropped. */
static int mesh_link_vertex_attrs(mesh_parser *p)
{
    mesh *m = p->m;
    float **arr[2] = {&m->uv, &m->nrm};
    int64_t *cnt[2] = {&m->nuv, &m->nnrm};
    int32_t **corner[2] = {&m->tri_uv, &m->tri_n};
    for (int a = 0; a < 2; a++) {
        if (!*arr[a] || *corner[a])
            continue;
        if (*cnt[a] != m->nverts) {
            free(*arr[a]);
            *arr[a] = NULL;
            *cnt[a] = 0;
            continue;
        }
        *corner[a] = malloc((size_t)(m->nfaces ? 3 * m->nfaces : 1) * sizeof **corner[a]);
        if (!*corner[a])
            return mesh_oom(p);
        if (m->nfaces) /* no faces: m->tri is NULL, and memcpy's arguments must not be */
            memcpy(*corner[a], m->tri, (size_t)(3 * m->nfaces) * sizeof **corner[a]);
    }
    return 0;
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
    if (!rc)
        rc = mesh_poly_finish(&p);
    mesh_poly_free(&p);
    if (!rc)
        rc = mesh_link_vertex_attrs(&p);
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
