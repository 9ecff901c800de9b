/*
 * fuzz_mesh.c: libFuzzer target for the OBJ, OFF and ASCII PLY readers
 * (mesh_read_buf).
 *
 * Each input is read under three names, "fuzz.obj", "fuzz.off" and
 * "fuzz.ply": content decides the format first ("ply" first line, an OFF
 * header token) and the extension only when the content is ambiguous, so
 * all three parsers see every input. Where the content decides, the three
 * results must be the same. A mesh that is returned must be well formed:
 * at least one vertex, finite positions, triangle indices in [0, nverts),
 * colours in [0, 1], and a face list when kept (a polygon of more than
 * three corners was read) that matches the triangles: polygon p of k
 * corners has k - 2 triangles (all of them add up to nfaces), made of its
 * own corners; a failure must be CLS_EINPUT with "NAME:LINE: what"
 * (or "NAME: what" for whole-file errors) and leave the mesh empty.
 * Violations abort(); memory errors are ASan's, undefined behaviour
 * UBSan's, and a declared count the file does not back must never become
 * an allocation (libFuzzer's malloc limit).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "physics/mesh.h"

typedef struct result {
    int rc;
    cls_error err;
    mesh m;
} result;

static void die(const char *what, const char *name, const result *r)
{
    fprintf(stderr, "fuzz_mesh: %s: %s", name, what);
    if (r)
        fprintf(stderr, " (rc %d, line %lld, '%s')", r->rc, r->err.line, r->err.msg);
    fputc('\n', stderr);
    abort();
}

static void read_as(const uint8_t *data, size_t size, const char *name, result *r)
{
    cls_error_clear(&r->err);
    r->rc = mesh_read_buf((const char *)data, size, name, &r->m, &r->err);
    const mesh *m = &r->m;
    if (r->rc == CLS_OK) {
        if (m->nverts <= 0 || m->nfaces < 0 || !m->v || (m->nfaces && !m->tri))
            die("mesh without storage", name, r);
        for (int64_t i = 0; i < 3 * m->nverts; i++)
            if (!isfinite(m->v[i]))
                die("non-finite position", name, r);
        for (int64_t i = 0; i < 3 * m->nfaces; i++)
            if (m->tri[i] < 0 || m->tri[i] >= m->nverts)
                die("triangle index out of range", name, r);
        if (m->color)
            for (int64_t i = 0; i < 3 * m->nverts; i++)
                if (!(m->color[i] >= 0.0f && m->color[i] <= 1.0f))
                    die("colour outside [0, 1]", name, r);
        if (!m->poly_off != !m->poly_v || (!m->poly_off && m->npolys))
            die("a half-kept face list", name, r);
        if (m->poly_off) {
            if (m->poly_off[0] != 0 || m->poly_off[m->npolys] - 2 * m->npolys != m->nfaces)
                die("face list and triangles disagree in number", name, r);
            for (int64_t p = 0; p < m->npolys; p++) {
                int64_t a = m->poly_off[p], b = m->poly_off[p + 1];
                if (b - a < 3)
                    die("a face of fewer than 3 corners", name, r);
                for (int64_t t = a - 2 * p; t < b - 2 * (p + 1); t++)
                    for (int c = 0; c < 3; c++) {
                        int in = 0;
                        for (int64_t q = a; q < b && !in; q++)
                            in = m->poly_v[q] == m->tri[3 * t + c];
                        if (!in)
                            die("a triangle with a corner not of its polygon", name, r);
                    }
            }
        }
        return;
    }
    if (r->rc != CLS_EINPUT)
        die("a bad file must be CLS_EINPUT", name, r);
    if (m->v || m->tri || m->color || m->nverts || m->nfaces)
        die("a failed read left a mesh behind", name, r);
    size_t n = strlen(name);
    if (strncmp(r->err.msg, name, n) != 0 || r->err.msg[n] != ':')
        die("message does not start with NAME:", name, r);
}

static void same(const result *a, const result *b, const char *name)
{
    if (a->rc != b->rc || a->err.line != b->err.line)
        die("the extension changed the result of content-detected input", name, b);
    if (a->rc)
        return;
    const mesh *x = &a->m, *y = &b->m;
    if (x->nverts != y->nverts || x->nfaces != y->nfaces || !x->color != !y->color ||
        memcmp(x->v, y->v, (size_t)(3 * x->nverts) * sizeof *x->v) != 0 ||
        (x->nfaces && memcmp(x->tri, y->tri, (size_t)(3 * x->nfaces) * sizeof *x->tri) != 0) ||
        (x->color && memcmp(x->color, y->color, (size_t)(3 * x->nverts) * sizeof *x->color)))
        die("the extension changed the mesh of content-detected input", name, b);
}

/* The first token, as mesh.c's detection sees it: does the content decide? */
static int content_decides(const uint8_t *d, size_t n)
{
    size_t i = 0;
    while (i < n && (d[i] == ' ' || (d[i] >= '\t' && d[i] <= '\r')))
        i++;
    size_t j = i;
    while (j < n && !(d[j] == ' ' || (d[j] >= '\t' && d[j] <= '\r')) && d[j] != '#')
        j++;
    static const char *const words[] = {"ply", "OFF", "COFF", "NOFF", "CNOFF"};
    for (int k = 0; k < 5; k++)
        if (j - i == strlen(words[k]) && memcmp(d + i, words[k], j - i) == 0)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[3] = {"fuzz.obj", "fuzz.off", "fuzz.ply"};
    result r[3];
    for (int k = 0; k < 3; k++)
        read_as(data, size, names[k], &r[k]);
    if (content_decides(data, size))
        for (int k = 1; k < 3; k++)
            same(&r[0], &r[k], names[k]);
    for (int k = 0; k < 3; k++)
        mesh_free(&r[k].m);
    return 0;
}
