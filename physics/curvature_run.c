/*
 * curvature_run.c: the `curvature` run (clsolve curvature and the job):
 * read the mesh, adjacency and topology, estimate on the device, check the
 * angle defect against Gauss-Bonnet, optionally the CPU double reference,
 * and write the result (see curvature.h).
 *
 * Output, chosen by the extension of -o:
 *   .csv  one line per vertex (vertex, x, y, z, k1, k2, H, K, d1, d2, n,
 *         boundary, K_defect);
 *   .ply / .vtk  the mesh (its UVs and, when it had them, its normals;
 *         else the estimator's normals) with per-vertex colours from the
 *         cool-warm diverging map of the chosen value over [-range, range],
 *         and the values as properties / point data: k1, k2,
 *         mean_curvature, gaussian_curvature, d1, d2, boundary,
 *         angle_defect, K_defect. Boundary vertices (one-sided 1-ring) and
 *         unused ones are drawn dark grey: their value is in the file,
 *         flagged, but not coloured as if it were two-sided.
 *
 * Non-finite values: a mesh beyond the float range the device computes in
 * is refused as input (exit 3); an estimate or a K_defect that is not
 * finite fails the run (CLS_EBREAKDOWN, exit 5) naming the vertex, and no
 * file is written.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "curvature.h"
#include "frame.h"
#include "job.h"
#include "mesh_write.h"

static const char *const curv_color_names[5] = {"H", "K", "k1", "k2", "K_defect"};

int curv_color_by_parse(const char *s, int *which)
{
    for (int i = 0; i < 5; i++)
        if (s && !strcmp(s, curv_color_names[i])) {
            *which = i;
            return 0;
        }
    return -1;
}

/* ---- writers ------------------------------------------------------------------------ */

/* The first vertex (and what) whose value is not finite, -1 if none. */
static int64_t curv_nonfinite(const curv_result *res, const double *kdef, const char **what)
{
    const double *v[8] = {res->k1,   res->k2,   res->H,      res->K,
                          res->dir1, res->dir2, res->normal, kdef};
    static const char *const names[8] = {"k1", "k2", "H",          "K",
                                         "d1", "d2", "the normal", "K_defect"};
    static const int comp[8] = {1, 1, 1, 1, 3, 3, 3, 1};
    for (int64_t i = 0; i < res->nverts; i++)
        for (int a = 0; a < 8; a++)
            for (int c = 0; v[a] && c < comp[a]; c++)
                if (!isfinite(v[a][comp[a] * i + c])) {
                    *what = names[a];
                    return i;
                }
    return -1;
}

static int curv_csv(const char *path, const mesh *m, const curv_result *res,
                    const unsigned char *flag, const double *kdef, cls_error *err)
{
    const char *what = NULL;
    int64_t bad = curv_nonfinite(res, kdef, &what);
    if (bad >= 0)
        return cls_fail(err, CLS_EBREAKDOWN, "%s: not written: %s of vertex %lld is not finite",
                        path, what, (long long)bad);
    phys_file pf;
    int rc = phys_file_open(&pf, path, err);
    if (rc)
        return rc;
    FILE *f = pf.f;
    fprintf(f, "vertex,x,y,z,k1,k2,H,K,d1x,d1y,d1z,d2x,d2y,d2z,nx,ny,nz%s\n",
            flag ? ",boundary,K_defect" : "");
    for (int64_t i = 0; i < res->nverts; i++) {
        fprintf(f, "%lld,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g", (long long)i, m->v[3 * i],
                m->v[3 * i + 1], m->v[3 * i + 2], res->k1[i], res->k2[i], res->H[i], res->K[i]);
        for (int k = 0; k < 3; k++)
            fprintf(f, ",%.7g", res->dir1[3 * i + k]);
        for (int k = 0; k < 3; k++)
            fprintf(f, ",%.7g", res->dir2[3 * i + k]);
        for (int k = 0; k < 3; k++)
            fprintf(f, ",%.7g", res->normal[3 * i + k]);
        if (flag)
            fprintf(f, ",%d,%.9g", (flag[i] & CURV_FLAG_BOUNDARY) ? 1 : 0, kdef[i]);
        fputc('\n', f);
    }
    return phys_file_commit(&pf, err);
}

int curv_write_csv(const char *path, const mesh *m, const curv_result *res, cls_error *err)
{
    return curv_csv(path, m, res, NULL, NULL, err);
}

/* The mesh with the values; flag/defect/kdef/rgb may be NULL. */
static int curv_mesh_out(const char *path, phys_format fmt, const mesh *m, const curv_result *res,
                         const unsigned char *flag, const double *defect, const double *kdef,
                         const unsigned char *rgb, const char *title, cls_error *err)
{
    mesh out = *m; /* shallow: only the normals may be replaced */
    float *nrm = NULL;
    int32_t *tn = NULL;
    if (!m->tri_n) {
        size_t nv = (size_t)(m->nverts ? m->nverts : 1), nf = (size_t)(m->nfaces ? m->nfaces : 1);
        nrm = malloc(3 * nv * sizeof *nrm);
        tn = malloc(3 * nf * sizeof *tn);
        if (!nrm || !tn) {
            free(nrm);
            free(tn);
            return cls_fail(err, CLS_EOTHER, "out of memory writing %s", path);
        }
        for (int64_t i = 0; i < 3 * m->nverts; i++)
            nrm[i] = (float)res->normal[i];
        memcpy(tn, m->tri, 3 * (size_t)m->nfaces * sizeof *tn);
        out.nrm = nrm;
        out.nnrm = m->nverts;
        out.tri_n = tn;
    }
    double *bnd = NULL;
    if (flag) {
        bnd = malloc((size_t)(m->nverts ? m->nverts : 1) * sizeof *bnd);
        if (!bnd) {
            free(nrm);
            free(tn);
            return cls_fail(err, CLS_EOTHER, "out of memory writing %s", path);
        }
        for (int64_t i = 0; i < m->nverts; i++)
            bnd[i] = (flag[i] & CURV_FLAG_BOUNDARY) ? 1.0 : 0.0;
    }
    mesh_field fields[9] = {{"k1", res->k1, 1},
                            {"k2", res->k2, 1},
                            {"mean_curvature", res->H, 1},
                            {"gaussian_curvature", res->K, 1},
                            {"d1", res->dir1, 3},
                            {"d2", res->dir2, 3},
                            {"boundary", bnd, 1},
                            {"angle_defect", defect, 1},
                            {"K_defect", kdef, 1}};
    mesh_out o = {.m = &out, .fields = fields, .nfields = flag ? 9 : 6, .rgb = rgb, .title = title};
    int rc = mesh_write(path, fmt, &o, err);
    free(nrm);
    free(tn);
    free(bnd);
    return rc;
}

int curv_write_ply(const char *path, const mesh *m, const curv_result *res, cls_error *err)
{
    return curv_mesh_out(path, PHYS_FMT_PLY, m, res, NULL, NULL, NULL, NULL,
                         "clsolve curvature (k1 >= k2, outward normals: sphere positive)", err);
}

static int curv_cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 90th percentile of |v| over the interior used vertices (1 when none or
 * zero, so a flat mesh still maps to the neutral colour): the few extreme
 * vertices (tips, creases) saturate, the rest of the surface spreads over
 * the map. */
static double curv_auto_range(const double *v, const unsigned char *flag, int64_t n)
{
    double *a = malloc((size_t)(n ? n : 1) * sizeof *a);
    if (!a)
        return 1.0;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if ((flag[i] & CURV_FLAG_USED) && !(flag[i] & CURV_FLAG_BOUNDARY) && isfinite(v[i]))
            a[k++] = fabs(v[i]);
    double r = 0.0;
    if (k) {
        qsort(a, (size_t)k, sizeof *a, curv_cmp_dbl);
        r = a[(int64_t)(0.90 * (double)(k - 1))];
    }
    free(a);
    return r > 0.0 ? r : 1.0;
}

/* ---- the run ---------------------------------------------------------------------------- */

typedef struct curv_state {
    mesh m;
    curv_adjacency adj;
    curv_result res, ref;
    curv_gpu g;
    phys_device dev;
    unsigned char *flag, *rgb;
    double *defect, *area, *kdef;
    curv_topology topo;
} curv_state;

static void curv_state_free(curv_state *s)
{
    curv_gpu_release(&s->g);
    phys_device_close(&s->dev);
    curv_result_free(&s->res);
    curv_result_free(&s->ref);
    curv_adjacency_free(&s->adj);
    mesh_free(&s->m);
    free(s->flag);
    free(s->rgb);
    free(s->defect);
    free(s->area);
    free(s->kdef);
}

int curv_run_local(const curv_run_opts *o, json_t **summary, cls_error *err)
{
    double t0 = cls_now();
    curv_state S;
    memset(&S, 0, sizeof S);
    phys_times T;
    phys_times_init(&T);
    double rel = NAN, range = NAN, kernel_s = 0.0;
    int rc = CLS_OK, which = 0, gb_holds = 0;
    phys_format fmt = PHYS_FMT_NONE;
    json_t *gb = NULL;
    *summary = NULL;

    if (o->color_by && curv_color_by_parse(o->color_by, &which)) {
        rc = cls_fail(err, CLS_EUSAGE, "curvature: colour by '%s' is not H, K, k1, k2 or K_defect",
                      o->color_by);
        goto done;
    }
    if (o->out_path &&
        (rc = phys_format_of_path(o->out_path, PHYS_FMT_CSV | PHYS_FMT_PLY | PHYS_FMT_VTK,
                                  "curvature", &fmt, err)))
        goto done;
    CLS_TRY(o->mesh_path ? mesh_read(o->mesh_path, &S.m, err)
                         : curv_mesh_saddle(o->saddle_k, 1.0, &S.m, err));
    if (o->mesh_path)
        CLS_TRY(mesh_check_float_range(&S.m, o->mesh_path, err));
    phys_times_add(&T, "read_s", cls_now() - t0);
    double t1 = cls_now();
    CLS_TRY(curv_adjacency_build(&S.m, &S.adj, err));
    size_t nv1 = (size_t)(S.m.nverts ? S.m.nverts : 1);
    S.flag = malloc(nv1);
    S.defect = malloc(nv1 * sizeof *S.defect);
    S.area = malloc(nv1 * sizeof *S.area);
    S.kdef = malloc(nv1 * sizeof *S.kdef);
    S.rgb = malloc(3 * nv1);
    if (!S.flag || !S.defect || !S.area || !S.kdef || !S.rgb) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for %lld vertices", (long long)S.m.nverts);
        goto done;
    }
    CLS_TRY(curv_topology_build(&S.m, S.flag, S.area, &S.topo, err));
    memcpy(S.defect, S.area, nv1 * sizeof *S.defect); /* the base angles */
    curv_flag_used(&S.adj, S.flag);
    phys_times_add(&T, "adjacency_s", cls_now() - t1);
    CLS_TRY(curv_result_alloc(&S.res, S.m.nverts, err));
    CLS_TRY(phys_device_open(&S.dev, o->device, err));
    CLS_TRY(curv_gpu_setup(&S.g, &S.dev.ctx, &S.m, &S.adj, err));
    phys_times_add(&T, "upload_s", S.g.upload_s);
    /* the first run builds caches and warms the device; the second is timed */
    CLS_TRY(curv_gpu_run(&S.g, o->est, &kernel_s, err));
    double t2 = cls_now();
    CLS_TRY(curv_gpu_run(&S.g, o->est, &kernel_s, err));
    phys_times_add(&T, "kernel_ms", 1e3 * kernel_s);
    phys_times_add(&T, "estimate_wall_ms", 1e3 * (cls_now() - t2));
    CLS_TRY(curv_gpu_read(&S.g, &S.res, err));

    double t3 = cls_now();
    curv_angle_defect(&S.m, S.flag, S.defect, S.defect, S.area);
    for (int64_t i = 0; i < S.m.nverts; i++)
        S.kdef[i] = S.area[i] > 0.0 ? S.defect[i] / S.area[i] : 0.0;
    {
        const char *what = NULL;
        int64_t bad = curv_nonfinite(&S.res, S.kdef, &what);
        if (bad >= 0) {
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "curvature: %s is not finite at vertex %lld: the float arithmetic "
                          "overflowed (scale the mesh towards unit size)",
                          what, (long long)bad);
            goto done;
        }
    }
    gb = curv_gauss_bonnet(&S.m, &S.topo, S.flag, S.defect, S.area, &S.res, &gb_holds);
    phys_times_add(&T, "gauss_bonnet_s", cls_now() - t3);
    if (o->check) {
        CLS_TRY(curv_result_alloc(&S.ref, S.m.nverts, err));
        double t4 = cls_now();
        curv_reference(&S.m, &S.adj, o->est, &S.ref);
        phys_times_add(&T, "cpu_reference_ms", 1e3 * (cls_now() - t4));
        rel = curv_rel_diff(&S.res, &S.ref);
    }
    if (o->out_path) {
        double t5 = cls_now();
        if (fmt == PHYS_FMT_CSV) {
            rc = curv_csv(o->out_path, &S.m, &S.res, S.flag, S.kdef, err);
        } else {
            const double *vals[5] = {S.res.H, S.res.K, S.res.k1, S.res.k2, S.kdef};
            range = isnan(o->color_range) || !(o->color_range > 0.0)
                        ? curv_auto_range(vals[which], S.flag, S.m.nverts)
                        : o->color_range;
            for (int64_t i = 0; i < S.m.nverts; i++) {
                unsigned char *c = S.rgb + 3 * i;
                if (!(S.flag[i] & CURV_FLAG_USED) || (S.flag[i] & CURV_FLAG_BOUNDARY))
                    c[0] = c[1] = c[2] = 64;
                else
                    mesh_colormap_coolwarm(vals[which][i] / range, c);
            }
            char title[160];
            snprintf(title, sizeof title,
                     "clsolve curvature, %s estimator, colour %s over [-%.6g, %.6g] (cool-warm)",
                     curv_estimator_name(o->est), curv_color_names[which], range, range);
            rc = curv_mesh_out(o->out_path, fmt, &S.m, &S.res, S.flag, S.defect, S.kdef, S.rgb,
                               title, err);
        }
        if (rc)
            goto done;
        phys_times_add(&T, "write_s", cls_now() - t5);
    }

done:;
    json_t *js = phys_report_new("curvature");
    json_object_set_new(js, "estimator", json_string(curv_estimator_name(o->est)));
    json_object_set_new(js, "mesh", o->mesh_path ? json_string(o->mesh_path) : json_null());
    if (!o->mesh_path)
        json_object_set_new(js, "saddle", json_integer(o->saddle_k));
    json_object_set_new(js, "vertices", json_integer(S.m.nverts));
    /* the faces as the file gave them, and the triangles they became */
    json_object_set_new(js, "faces", json_integer(S.m.poly_off ? S.m.npolys : S.m.nfaces));
    json_object_set_new(js, "triangles", json_integer(S.m.nfaces));
    if (!rc && S.m.nverts > 0) {
        /* ranges over the interior vertices: boundary values are one-sided */
        double hmin = INFINITY, hmax = -INFINITY, kmin = INFINITY, kmax = -INFINITY;
        for (int64_t i = 0; i < S.m.nverts; i++) {
            if (!(S.flag[i] & CURV_FLAG_USED) || (S.flag[i] & CURV_FLAG_BOUNDARY))
                continue;
            hmin = fmin(hmin, S.res.H[i]), hmax = fmax(hmax, S.res.H[i]);
            kmin = fmin(kmin, S.res.K[i]), kmax = fmax(kmax, S.res.K[i]);
        }
        if (hmin <= hmax) {
            json_object_set_new(js, "H_range", json_pack("[f, f]", hmin, hmax));
            json_object_set_new(js, "K_range", json_pack("[f, f]", kmin, kmax));
        }
        json_object_set_new(js, "boundary_vertices",
                            json_integer((json_int_t)S.topo.boundary_vertices));
        json_object_set_new(js, "topology", curv_topology_json(&S.topo));
    }
    if (gb)
        json_object_set_new(js, "gauss_bonnet", gb);
    json_t *dj = phys_device_json(&S.dev, S.g.local_size);
    if (dj)
        json_object_set_new(js, "device", dj);
    if (o->check)
        json_object_set_new(js, "rel_diff_vs_cpu_double",
                            isfinite(rel) ? json_real(rel) : json_null());
    json_object_set_new(js, "output", o->out_path ? json_string(o->out_path) : json_null());
    if (o->out_path && fmt != PHYS_FMT_NONE)
        json_object_set_new(js, "format", json_string(phys_format_name(fmt)));
    if (isfinite(range))
        json_object_set_new(js, "color",
                            json_pack("{s:s, s:f, s:s}", "by", curv_color_names[which], "range",
                                      range, "map", "cool-warm (Moreland 2009)"));
    phys_times_add(&T, "total_s", cls_now() - t0);
    json_object_set_new(js, "times", phys_times_json(&T));
    if (rc)
        phys_report_fail(js, rc, err);
    *summary = js;
    curv_state_free(&S);
    return rc;
}

/* ---- the job ----------------------------------------------------------------------------- */

/* options: {"estimator": "face"|"vertex", "format": "csv"|"ply"|"vtk",
 *           "check": bool, "saddle": k (when there is no input mesh),
 *           "color_by": "H"|"K"|"k1"|"k2"|"K_defect", "color_range": x > 0} */
int curvature_job_run(const char *options_json, const char *input_path, const char *out_dir,
                      const char *device, char **result_json, cls_error *err)
{
    *result_json = NULL;
    json_error_t jerr;
    json_t *opt =
        options_json && *options_json ? json_loads(options_json, 0, &jerr) : json_object();
    if (!opt || !json_is_object(opt)) {
        json_decref(opt);
        return cls_fail(err, CLS_EUSAGE, "curvature options: not a JSON object%s%s",
                        opt ? "" : ": ", opt ? "" : jerr.text);
    }
    curv_run_opts o = {.est = CURV_FACE, .device = device, .color_range = NAN};
    const char *fmt = "csv";
    const char *key;
    json_t *val;
    int rc = CLS_OK, which;
    json_object_foreach(opt, key, val)
    {
        const char *s = json_string_value(val);
        if (!strcmp(key, "estimator")) {
            if (!s || curv_estimator_parse(s, &o.est))
                rc = cls_fail(err, CLS_EUSAGE, "curvature option estimator: face or vertex");
        } else if (!strcmp(key, "format")) {
            if (!s || (strcmp(s, "csv") && strcmp(s, "ply") && strcmp(s, "vtk")))
                rc = cls_fail(err, CLS_EUSAGE, "curvature option format: csv, ply or vtk");
            else
                fmt = s;
        } else if (!strcmp(key, "check")) {
            if (!json_is_boolean(val))
                rc = cls_fail(err, CLS_EUSAGE, "curvature option check: true or false");
            else
                o.check = json_is_true(val);
        } else if (!strcmp(key, "saddle")) {
            if (!json_is_integer(val) || json_integer_value(val) < 2 ||
                json_integer_value(val) > 32767)
                rc = cls_fail(err, CLS_EUSAGE, "curvature option saddle: an integer in [2, 32767]");
            else
                o.saddle_k = (int)json_integer_value(val);
        } else if (!strcmp(key, "color_by")) {
            if (!s || curv_color_by_parse(s, &which))
                rc = cls_fail(err, CLS_EUSAGE,
                              "curvature option color_by: H, K, k1, k2 or K_defect");
            else
                o.color_by = s;
        } else if (!strcmp(key, "color_range")) {
            if (!json_is_number(val) || !(json_number_value(val) > 0.0) ||
                !isfinite(json_number_value(val)))
                rc = cls_fail(err, CLS_EUSAGE, "curvature option color_range: a number > 0");
            else
                o.color_range = json_number_value(val);
        } else {
            rc = cls_fail(err, CLS_EUSAGE, "curvature: unknown option '%s'", key);
        }
        if (rc)
            break;
    }
    if (!rc && !input_path && !o.saddle_k)
        rc = cls_fail(err, CLS_EUSAGE, "curvature: no mesh given (upload one or set \"saddle\")");
    char out_path[4096] = "";
    if (!rc && out_dir) {
        int n = snprintf(out_path, sizeof out_path, "%s/curvature.%s", out_dir, fmt);
        if (n < 0 || (size_t)n >= sizeof out_path)
            rc = cls_fail(err, CLS_EUSAGE, "curvature: output directory name too long");
    }
    if (rc) {
        json_decref(opt);
        return rc;
    }
    o.mesh_path = input_path;
    o.out_path = out_dir ? out_path : NULL;
    json_t *summary = NULL;
    rc = curv_run_local(&o, &summary, err);
    if (summary) {
        json_t *files = json_array();
        if (out_dir && !rc)
            json_array_append_new(files, json_string(strrchr(out_path, '/') + 1));
        int r2 = phys_report_result(summary, files, result_json, err);
        if (!rc)
            rc = r2;
    }
    json_decref(opt);
    return rc;
}
