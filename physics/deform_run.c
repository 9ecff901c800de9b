/*
 * deform_run.c: the `deform` run (clsolve deform and the job; see
 * deform.h): read the domains, basis, q and mesh, then per frame u = U q
 * and, with a mesh, the vertex update on the device, checked against the
 * CPU double reference when asked, and the outputs: u.mtx, the unfolded
 * CSV and the deformed mesh of every frame.
 *
 * Float range: the device computes in float. Inputs beyond its range are
 * refused where they are read (deform_files.c, the mesh here: exit 3);
 * results are checked per frame as they come back, and one that
 * overflowed (u = U q, or x = R (x0 + u) + p) fails the run with
 * CLS_EBREAKDOWN (exit 5) naming the frame and the vertex, before any
 * output of the run is committed (u.mtx and the CSV are written at the
 * end; mesh frames before the failing one stay, as springs and nbody
 * frames do).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "deform.h"
#include "frame.h"
#include "job.h"
#include "mesh_write.h"

/* An allocation count that is never 0 (malloc(0) may return NULL). */
static inline size_t nz(int64_t n)
{
    return n > 0 ? (size_t)n : 1;
}

typedef struct deform_state {
    deform_domains D;
    int have_D;
    deform_model M;
    double *q, *u_all, *u_ref, *xg, *ng, *tg, *xr, *nr, *trf;
    deform_xform *T;
    int64_t frames;
    mesh m, out; /* the rest mesh; the deformed one written per frame */
    deform_unfolded uf;
    deform_gpu g;
    phys_device dev;
    phys_file csv;
    phys_frames seq;
    int have_seq;
} deform_state;

static void deform_state_free(deform_state *S)
{
    phys_file_abort(&S->csv);
    deform_gpu_release(&S->g);
    phys_device_close(&S->dev);
    free(S->q);
    free(S->u_all);
    free(S->u_ref);
    free(S->T);
    free(S->xg);
    free(S->ng);
    free(S->tg);
    free(S->xr);
    free(S->nr);
    free(S->trf);
    deform_unfolded_free(&S->uf);
    mesh_free(&S->m);
    mesh_free(&S->out);
    deform_model_free(&S->M);
    deform_domains_free(&S->D);
    if (S->have_seq)
        phys_frames_free(&S->seq);
}

/* q for every frame: inline, from a file, or none for a rigid-only model. */
static int deform_load_q(const deform_run_opts *o, deform_state *S, cls_error *err)
{
    const deform_model *M = &S->M;
    if (o->q_inline) {
        if (o->q_inline_r != M->ncols)
            return cls_fail(err, CLS_EUSAGE,
                            "deform: q has %lld entries per frame, the basis %lld columns",
                            (long long)o->q_inline_r, (long long)M->ncols);
        S->frames = o->q_frames;
        for (int64_t k = 0; k < M->ncols * S->frames; k++)
            if (phys_beyond_float(o->q_inline[k]))
                return cls_fail(err, CLS_EUSAGE,
                                "deform option q: frame %lld entry %lld (%g) is beyond the float "
                                "range the device computes in (|x| <= %g)",
                                (long long)(k / M->ncols), (long long)(k % M->ncols),
                                o->q_inline[k], (double)FLT_MAX);
        S->q = malloc(nz(M->ncols * S->frames) * sizeof(double));
        if (!S->q)
            return cls_fail(err, CLS_EOTHER, "out of memory for q");
        memcpy(S->q, o->q_inline, (size_t)(M->ncols * S->frames) * sizeof(double));
        return CLS_OK;
    }
    if (o->q)
        return deform_read_q(o->q, M->ncols, &S->q, &S->frames, err);
    if (M->ncols == 0) {
        S->frames = 1; /* only rigid domains: one frame, no q needed */
        S->q = calloc(1, sizeof(double));
        return S->q ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for q");
    }
    return cls_fail(err, CLS_EUSAGE, "deform: no q given");
}

/* CLS_EBREAKDOWN when one of the n values (3 per vertex, or per corner of
 * the unfolded list when corner_vertex is given) of frame f that came
 * back from the device is not finite: the float arithmetic overflowed. */
static int deform_check_frame(const char *what, const double *v, int64_t n,
                              const int32_t *corner_vertex, int64_t f, cls_error *err)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return cls_fail(err, CLS_EBREAKDOWN,
                            "deform: %s of frame %lld is not finite at vertex %lld: it overflows "
                            "the float range the device computes in (|x| <= %g); scale the "
                            "basis, q or the mesh down",
                            what, (long long)f,
                            (long long)(corner_vertex ? corner_vertex[i / 3] : i / 3),
                            (double)FLT_MAX);
    return CLS_OK;
}

/* The deformed mesh of frame f from the corners' device positions: every
 * corner of a vertex carries the same position. */
static int deform_write_mesh(deform_state *S, int64_t f, cls_error *err)
{
    for (int64_t c = 0; c < S->uf.ncorners; c++)
        memcpy(S->out.v + 3 * (int64_t)S->uf.vertex[c], S->xg + 3 * c, 3 * sizeof(double));
    int rc = mesh_normals_recompute(&S->out, err);
    char path[4200], title[96];
    if (!rc)
        rc = phys_frames_path(&S->seq, f, path, sizeof path, err);
    if (rc)
        return rc;
    snprintf(title, sizeof title, "clsolve deform, frame %lld", (long long)f);
    mesh_out mo = {.m = &S->out, .title = title};
    rc = mesh_write(path, phys_frames_file_format(&S->seq), &mo, err);
    if (!rc)
        rc = phys_frames_added(&S->seq, path, (double)f, err);
    return rc;
}

int deform_run_local(const deform_run_opts *o, struct json_t **summary, cls_error *err)
{
    double t0 = cls_now();
    deform_state S;
    memset(&S, 0, sizeof S);
    phys_times T;
    phys_times_init(&T);
    double worst_u = 0, worst_x = 0;
    int rc = CLS_OK;
    phys_format mfmt = PHYS_FMT_NONE;
    *summary = NULL;

    if (o->out_mesh) {
        if (!o->mesh) {
            rc =
                cls_fail(err, CLS_EUSAGE, "deform: a deformed mesh (%s) needs --mesh", o->out_mesh);
            goto done;
        }
        CLS_TRY(phys_format_of_path(o->out_mesh,
                                    PHYS_FMT_OBJ | PHYS_FMT_PLY | PHYS_FMT_VTK | PHYS_FMT_PVD,
                                    "deform", &mfmt, err));
    }
    if (o->domains) {
        CLS_TRY(deform_domains_read(o->domains, &S.D, err));
        S.have_D = 1;
    }
    CLS_TRY(deform_read_basis(o->basis, S.have_D ? &S.D : NULL, o->rank, &S.M, err));
    CLS_TRY(deform_load_q(o, &S, err));
    if (o->mesh) {
        CLS_TRY(mesh_read(o->mesh, &S.m, err));
        CLS_TRY(mesh_check_float_range(&S.m, o->mesh, err));
        if (S.m.nverts != S.M.nverts) {
            rc = cls_fail(err, CLS_EINPUT, "%s: mesh has %lld vertices, the basis %lld", o->mesh,
                          (long long)S.m.nverts, (long long)S.M.nverts);
            goto done;
        }
        CLS_TRY(deform_unfold(&S.m, &S.uf, err));
    }
    phys_times_add(&T, "read_s", cls_now() - t0);
    int64_t n3 = 3 * S.M.nverts, nc = S.uf.ncorners;
    S.u_all = malloc(nz(n3 * S.frames) * sizeof(double));
    S.u_ref = malloc(nz(n3) * sizeof(double));
    S.T = malloc((size_t)S.M.ndomains * sizeof(deform_xform));
    if (nc) {
        S.xg = malloc((size_t)nc * 3 * sizeof(double));
        S.ng = malloc((size_t)nc * 3 * sizeof(double));
        S.tg = malloc((size_t)nc * 3 * sizeof(double));
        S.xr = malloc((size_t)nc * 3 * sizeof(double));
        S.nr = malloc((size_t)nc * 3 * sizeof(double));
        S.trf = malloc((size_t)nc * 3 * sizeof(double));
    }
    if (!S.u_all || !S.u_ref || !S.T ||
        (nc && (!S.xg || !S.ng || !S.tg || !S.xr || !S.nr || !S.trf))) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the frames");
        goto done;
    }
    if (o->out_mesh) {
        CLS_TRY(mesh_copy(&S.m, &S.out, err));
        CLS_TRY(phys_frames_init(&S.seq, o->out_mesh, mfmt, S.frames > 1, err));
        S.have_seq = 1;
    }
    CLS_TRY(phys_device_open(&S.dev, o->device, err));
    CLS_TRY(deform_gpu_setup(&S.g, &S.dev.ctx, &S.M, nc ? &S.uf : NULL, err));
    phys_times_add(&T, "upload_s", S.g.upload_s);
    if (o->out_unfolded && nc) {
        CLS_TRY(phys_file_open(&S.csv, o->out_unfolded, err));
        fputs("frame,corner,vertex,domain,x,y,z,nx,ny,nz,tx,ty,tz\n", S.csv.f);
    }
    double uq_s = 0, upd_s = 0, write_s = 0;
    for (int64_t f = 0; f < S.frames; f++) {
        double ks = 0;
        if (physics_should_stop())
            CLS_TRY(cls_fail(err, CLS_EOTHER, "stopped at frame %lld", (long long)f));
        const double *qf = S.q + f * S.M.ncols;
        double *uf_out = S.u_all + f * n3;
        CLS_TRY(deform_gpu_uq(&S.g, qf, &ks, err));
        uq_s += ks;
        CLS_TRY(deform_gpu_read_u(&S.g, uf_out, err));
        CLS_TRY(deform_check_frame("u = U q", uf_out, n3, NULL, f, err));
        if (o->check) {
            deform_ref_uq(&S.M, qf, S.u_ref);
            worst_u = fmax(worst_u, deform_rel_diff(uf_out, S.u_ref, n3));
        }
        if (!nc)
            continue;
        if (S.have_D)
            deform_domains_transforms(&S.D, f, S.T);
        else
            for (int64_t d = 0; d < S.M.ndomains; d++)
                deform_xform_identity(&S.T[d]);
        CLS_TRY(deform_gpu_update(&S.g, S.T, &ks, err));
        upd_s += ks;
        CLS_TRY(deform_gpu_read_vertices(&S.g, S.xg, S.ng, S.tg, err));
        CLS_TRY(deform_check_frame("the deformed position", S.xg, 3 * nc, S.uf.vertex, f, err));
        CLS_TRY(deform_check_frame("the normal", S.ng, 3 * nc, S.uf.vertex, f, err));
        CLS_TRY(deform_check_frame("the tangent", S.tg, 3 * nc, S.uf.vertex, f, err));
        if (o->check) {
            deform_ref_update(&S.M, &S.uf, S.u_ref, S.T, S.xr, S.nr, S.trf);
            worst_x = fmax(worst_x, deform_rel_diff(S.xg, S.xr, 3 * nc));
            worst_x = fmax(worst_x, deform_rel_diff(S.ng, S.nr, 3 * nc));
            worst_x = fmax(worst_x, deform_rel_diff(S.tg, S.trf, 3 * nc));
        }
        double tw = cls_now();
        if (S.csv.f) {
            for (int64_t c = 0; c < nc; c++) {
                int64_t v = S.uf.vertex[c];
                const double *x = S.xg + 3 * c, *n = S.ng + 3 * c, *t = S.tg + 3 * c;
                fprintf(
                    S.csv.f, "%lld,%lld,%lld,%lld,%.9g,%.9g,%.9g,%.7g,%.7g,%.7g,%.7g,%.7g,%.7g\n",
                    (long long)f, (long long)c, (long long)v, (long long)deform_domain_of(&S.M, v),
                    x[0], x[1], x[2], n[0], n[1], n[2], t[0], t[1], t[2]);
            }
        }
        if (S.have_seq)
            CLS_TRY(deform_write_mesh(&S, f, err));
        write_s += cls_now() - tw;
    }
    double tw = cls_now();
    if (S.csv.f)
        CLS_TRY(phys_file_commit(&S.csv, err));
    if (S.have_seq)
        CLS_TRY(phys_frames_finish(&S.seq, err));
    if (o->out_u) {
        char comment[512];
        snprintf(comment, sizeof comment, "clsolve deform: u = U q, %lld frame(s), %lld domain(s)",
                 (long long)S.frames, (long long)S.M.ndomains);
        CLS_TRY(deform_write_u(o->out_u, S.u_all, n3, S.frames, comment, err));
    }
    write_s += cls_now() - tw;
    double fr = S.frames > 0 ? (double)S.frames : 1.0;
    phys_times_add(&T, "uq_kernel_ms_per_frame", 1e3 * uq_s / fr);
    phys_times_add(&T, "update_kernel_ms_per_frame", 1e3 * upd_s / fr);
    phys_times_add(&T, "write_s", write_s);

done:;
    json_t *js = phys_report_new("deform");
    json_object_set_new(js, "basis", o->basis ? json_string(o->basis) : json_null());
    json_object_set_new(js, "vertices", json_integer(S.M.nverts));
    json_object_set_new(js, "domains", json_integer(S.M.ndomains));
    json_object_set_new(js, "modes", json_integer(S.M.ncols));
    json_object_set_new(js, "frames", json_integer(S.frames));
    json_object_set_new(js, "corners", json_integer(S.uf.ncorners));
    json_t *dj = phys_device_json(&S.dev, S.g.local_size);
    if (dj)
        json_object_set_new(js, "device", dj);
    if (o->check && !rc) {
        json_object_set_new(js, "max_rel_err_u", json_real(worst_u));
        if (S.uf.ncorners)
            json_object_set_new(js, "max_rel_err_vertices", json_real(worst_x));
    }
    json_object_set_new(js, "output", o->out_u ? json_string(o->out_u) : json_null());
    if (S.have_seq && !rc)
        json_object_set_new(js, "mesh_output", phys_frames_json(&S.seq));
    phys_times_add(&T, "total_s", cls_now() - t0);
    json_object_set_new(js, "times", phys_times_json(&T));
    if (rc)
        phys_report_fail(js, rc, err);
    *summary = js;
    deform_state_free(&S);
    return rc;
}

/* options: {"q": [..] | [[..], ..] (one array per frame), "q_file": path,
 *           "mesh": path, "domains": path, "rank": n, "check": bool}
 * input_path: the basis. Writes out_dir/u.mtx and, with a mesh,
 * out_dir/unfolded.csv. */
int deform_job_run(const char *options_json, const char *input_path, const char *out_dir,
                   const char *device, char **result_json, cls_error *err)
{
    *result_json = NULL;
    if (!input_path)
        return cls_fail(err, CLS_EUSAGE, "deform: the job needs a basis file");
    json_error_t jerr;
    json_t *opt =
        options_json && *options_json ? json_loads(options_json, 0, &jerr) : json_object();
    if (!opt || !json_is_object(opt)) {
        json_decref(opt);
        return cls_fail(err, CLS_EUSAGE, "deform options: not a JSON object");
    }
    deform_run_opts o;
    memset(&o, 0, sizeof o);
    o.basis = input_path;
    o.device = device;
    double *qin = NULL;
    int rc = CLS_OK;
    const char *key;
    json_t *val;
    json_object_foreach(opt, key, val)
    {
        if (!strcmp(key, "q")) {
            /* [numbers] is one frame; [[numbers], ...] a sequence */
            if (!json_is_array(val) || json_array_size(val) == 0) {
                rc = cls_fail(err, CLS_EUSAGE, "deform option q: a non-empty array");
                break;
            }
            int seq = json_is_array(json_array_get(val, 0));
            size_t F = seq ? json_array_size(val) : 1;
            size_t R = seq ? json_array_size(json_array_get(val, 0)) : json_array_size(val);
            qin = malloc(nz((int64_t)(F * R)) * sizeof(double));
            if (!qin) {
                rc = cls_fail(err, CLS_EOTHER, "out of memory for q");
                break;
            }
            for (size_t f = 0; f < F && !rc; f++) {
                json_t *row = seq ? json_array_get(val, f) : val;
                if (!json_is_array(row) || json_array_size(row) != R) {
                    rc = cls_fail(err, CLS_EUSAGE,
                                  "deform option q: frame %zu does not have %zu "
                                  "numbers",
                                  f, R);
                    break;
                }
                for (size_t j = 0; j < R; j++) {
                    json_t *x = json_array_get(row, j);
                    if (!json_is_number(x)) {
                        rc = cls_fail(err, CLS_EUSAGE, "deform option q: not a number");
                        break;
                    }
                    qin[f * R + j] = json_number_value(x);
                }
            }
            o.q_inline = qin;
            o.q_frames = (int64_t)F;
            o.q_inline_r = (int64_t)R;
        } else if (!strcmp(key, "q_file") || !strcmp(key, "mesh") || !strcmp(key, "domains")) {
            if (!json_is_string(val)) {
                rc = cls_fail(err, CLS_EUSAGE, "deform option %s: a file name", key);
                break;
            }
            if (!strcmp(key, "q_file"))
                o.q = json_string_value(val);
            else if (!strcmp(key, "mesh"))
                o.mesh = json_string_value(val);
            else
                o.domains = json_string_value(val);
        } else if (!strcmp(key, "rank")) {
            if (!json_is_integer(val) || json_integer_value(val) < 1) {
                rc = cls_fail(err, CLS_EUSAGE, "deform option rank: a positive integer");
                break;
            }
            o.rank = json_integer_value(val);
        } else if (!strcmp(key, "check")) {
            if (!json_is_boolean(val)) {
                rc = cls_fail(err, CLS_EUSAGE, "deform option check: true or false");
                break;
            }
            o.check = json_is_true(val);
        } else {
            rc = cls_fail(err, CLS_EUSAGE, "deform: unknown option '%s'", key);
            break;
        }
    }
    if (!rc && o.q_inline && o.q)
        rc = cls_fail(err, CLS_EUSAGE, "deform: give q or q_file, not both");
    char pu[4096], pc[4096];
    if (!rc && out_dir) {
        int a = snprintf(pu, sizeof pu, "%s/u.mtx", out_dir);
        int b = snprintf(pc, sizeof pc, "%s/unfolded.csv", out_dir);
        if (a < 0 || b < 0 || (size_t)a >= sizeof pu || (size_t)b >= sizeof pc)
            rc = cls_fail(err, CLS_EUSAGE, "deform: output directory name too long");
        o.out_u = pu;
        o.out_unfolded = o.mesh ? pc : NULL;
    }
    if (!rc) {
        json_t *summary = NULL;
        rc = deform_run_local(&o, &summary, err);
        if (summary) {
            json_t *files = json_array();
            if (!rc && out_dir) {
                json_array_append_new(files, json_string("u.mtx"));
                if (o.mesh)
                    json_array_append_new(files, json_string("unfolded.csv"));
            }
            int r2 = phys_report_result(summary, files, result_json, err);
            if (!rc)
                rc = r2;
        }
    }
    free(qin);
    json_decref(opt);
    return rc;
}
