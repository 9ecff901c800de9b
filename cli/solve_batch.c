/*
 * solve_batch.c: `clsolve solve A1.mtx A2.mtx ...`: several independent
 * systems solved as one batch, in one kernel launch on one device
 * (solver/krylov/cg_batch.c: one work-group per system), b = A_i * 1 each.
 * A name may be a generator's (gen:poisson2d:N), as for one matrix.
 *
 * Each file is read and checked on its own: one that does not parse or is
 * not SPD-plausible fails alone, with its file and line, and the others are
 * solved. Each system ends as a solve of its own would (converged, not
 * converged, breakdown); the exit code is 0 when every system converged,
 * else the first failing system's (3 input, 4 not converged, 5 breakdown),
 * or 1 when the device failed. -o DIR writes DIR/NAME.x.mtx per solved
 * system (NAME: the file's name without .mtx or .mtx.gz; gen_poisson2d_20 for
 * gen:poisson2d:20). The batch runs
 * cg's recurrence with no preconditioner or Jacobi (auto is Jacobi here),
 * any precision, on one rank.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "common/timer.h"
#include "matrices/mm.h"
#include "solver/dbatch.h"
#include "solver/dist/dvec.h"
#include "solver/solve.h"

typedef struct batch_item {
    const char *path;
    csr_matrix A;
    double *b, *x;
    int rc; /* CLS_OK, or the reading's or solve's class */
    char msg[512];
    cg_batch_system *sys; /* in the batch, NULL if it failed before */
} batch_item;

static const char *reason_name(const batch_item *it)
{
    return it->sys ? cg_reason_name(it->sys->res.reason) : "bad_input";
}

/* DIR/NAME.x.mtx for path */
static void out_path(const char *dir, const char *path, char *buf, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 7 && !strcmp(base + len - 7, ".mtx.gz"))
        len -= 7;
    else if (len > 4 && !strcmp(base + len - 4, ".mtx"))
        len -= 4;
    int w = snprintf(buf, cap, "%s/", dir);
    snprintf(buf + w, cap - (size_t)w, "%.*s.x.mtx", (int)len, base);
    for (char *c = buf + w; *c; c++) /* gen:poisson2d:20 -> gen_poisson2d_20 */
        if (*c == ':')
            *c = '_';
}

int cli_solve_batch(const char *const *paths, int n, const solve_options *opt, int json,
                    const char *out_dir)
{
    const double t0 = cls_now();
    batch_item *it = calloc((size_t)n, sizeof *it);
    cg_batch_system *sys = calloc((size_t)n, sizeof *sys);
    if (!it || !sys) {
        fprintf(stderr, "clsolve solve: out of memory for a batch of %d systems\n", n);
        free(it);
        free(sys);
        return CLS_EOTHER;
    }
    const solver_precond pc = opt->precond == PRECOND_AUTO ? PRECOND_JACOBI : opt->precond;
    int ns = 0;
    int64_t rows = 0, nnz = 0;
    for (int i = 0; i < n; i++) {
        batch_item *t = &it[i];
        cls_error e;
        cls_error_clear(&e);
        t->path = paths[i];
        dbatch_input in;
        int rc = dbatch_read(t->path, NULL, NULL, &in, &e);
        if (!rc) {
            t->A = in.A; /* b = A*1: x = 1 exactly */
            t->b = in.b;
            t->x = calloc((size_t)(t->A.nrows > 0 ? t->A.nrows : 1), sizeof *t->x);
            if (!t->x)
                rc = cls_fail(&e, CLS_EOTHER, "%s: out of memory", t->path);
        }
        if (rc) {
            t->rc = rc;
            snprintf(t->msg, sizeof t->msg, "%.511s", e.msg);
            continue;
        }
        t->sys = &sys[ns++];
        *t->sys = (cg_batch_system){.A = &t->A, .b = t->b, .tol = opt->tol,
                                    .maxiter = opt->maxiter, .x = t->x};
        rows += t->A.nrows;
        nnz += t->A.nnz;
    }
    const double t_parse = cls_now() - t0;

    /* the device, and the batch */
    int rc = CLS_OK;
    cls_error err;
    cls_error_clear(&err);
    dbatch_info info;
    double t_solve = 0.0;
    memset(&info, 0, sizeof info);
    if (ns > 0) {
        const double t2 = cls_now();
        rc = dbatch_solve(opt->device, opt->precision, pc, sys, ns, &info, &err);
        t_solve = cls_now() - t2 - info.init_s;
    }
    const ocl_device dev = info.device;
    const int have_dev = ns > 0 && dev.name[0];
    const double device_s = info.device_s, t_setup = info.init_s;
    /* the exit code: the device's failure, else the first system's */
    int code = rc;
    for (int i = 0; i < n && !rc; i++)
        if (it[i].sys && it[i].sys->rc) { /* the solve's message, named by its file */
            it[i].rc = it[i].sys->rc;
            snprintf(it[i].msg, sizeof it[i].msg, "%.200s: %.300s", it[i].path, it[i].sys->msg);
        }
    for (int i = 0; i < n && !code; i++)
        code = it[i].rc;
    /* x files */
    int written = 0;
    if (out_dir && !rc) {
        if (mkdir(out_dir, 0777) && errno != EEXIST) {
            fprintf(stderr, "clsolve solve: cannot create %s: %s\n", out_dir, strerror(errno));
            code = code ? code : CLS_EOTHER;
        } else {
            for (int i = 0; i < n; i++) {
                if (!it[i].sys || (it[i].rc != CLS_OK && it[i].rc != CLS_ENOTCONV))
                    continue;
                char p[4096], comment[600];
                cls_error we;
                out_path(out_dir, it[i].path, p, sizeof p);
                snprintf(comment, sizeof comment, "clsolve batch solution of %s", it[i].path);
                if (mm_write_vector(p, it[i].x, it[i].A.nrows, comment, &we)) {
                    fprintf(stderr, "clsolve solve: %s\n", we.msg);
                    code = code ? code : CLS_EOTHER;
                } else {
                    written++;
                }
            }
        }
    }
    const double total = cls_now() - t0;
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++) {
            const batch_item *t = &it[i];
            json_t *o = json_pack("{s:s, s:b, s:s, s:i}", "matrix", t->path, "converged",
                                  t->sys && t->sys->res.converged, "reason", reason_name(t),
                                  "exit_code", t->rc);
            if (t->sys) {
                json_object_set_new(o, "rows", json_integer(t->A.nrows));
                json_object_set_new(o, "nnz", json_integer(t->A.nnz));
                json_object_set_new(o, "iterations", json_integer(t->sys->res.iterations));
                double tr = solve_true_residual(&t->A, t->b, t->x);
                json_object_set_new(o, "relative_residual",
                                    isfinite(t->sys->res.rel_residual)
                                        ? json_real(t->sys->res.rel_residual)
                                        : json_null());
                json_object_set_new(o, "true_relative_residual",
                                    isfinite(tr) ? json_real(tr) : json_null());
            }
            if (t->rc)
                json_object_set_new(o, "error", json_string(t->msg));
            json_array_append_new(arr, o);
        }
        json_t *root = json_pack(
            "{s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:o, s:{s:f, s:f, s:f, s:f, s:f}}", "method",
            "cg-batch", "precond", pc_name(pc), "precision", la_precision_name(opt->precision),
            "systems_total", n, "systems_solved", ns, "rows", (json_int_t)rows, "nnz",
            (json_int_t)nnz, "systems", arr, "times", "parse_s", t_parse, "setup_s", t_setup,
            "solve_s", t_solve, "device_s", device_s, "total_s", total);
        if (have_dev)
            json_object_set_new(root, "device",
                                json_pack("{s:s, s:s, s:s}", "name", dev.name, "platform",
                                          dev.platform_name, "type", ocl_type_name(dev.type)));
        json_object_set_new(root, "exit_code", json_integer(code));
        if (rc)
            json_object_set_new(root, "error", json_string(err.msg));
        char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        if (s)
            puts(s);
        free(s);
        json_decref(root);
    } else {
        for (int i = 0; i < n; i++) {
            const batch_item *t = &it[i];
            if (!t->sys || (t->rc && t->rc != CLS_ENOTCONV)) {
                fprintf(stderr, "clsolve solve: %s\n", t->msg);
                continue;
            }
            printf("%s: %lld rows, %s after %lld iterations: relative residual %.3e (true "
                   "%.3e)\n",
                   t->path, (long long)t->A.nrows,
                   t->sys->res.converged ? "converged" : "not converged",
                   (long long)t->sys->res.iterations, t->sys->res.rel_residual,
                   solve_true_residual(&t->A, t->b, t->x));
            if (t->rc)
                fprintf(stderr, "clsolve solve: %s\n", t->msg);
        }
        if (rc)
            fprintf(stderr, "clsolve solve: %s\n", err.msg);
        else if (ns > 0)
            printf("batch: %d of %d systems (%lld rows, %lld entries) in one launch on %s, "
                   "precond %s, precision %s: %.3f ms on the device; times: parse %.3f s, "
                   "setup %.3f s, solve %.3f s, total %.3f s\n",
                   ns, n, (long long)rows, (long long)nnz, dev.name, pc_name(pc),
                   la_precision_name(opt->precision), 1e3 * device_s, t_parse, t_setup, t_solve,
                   total);
        if (written)
            printf("%d solutions written to %s\n", written, out_dir);
    }
    dsys_warm_release_all();
    for (int i = 0; i < n; i++) {
        csr_free(&it[i].A);
        free(it[i].b);
        free(it[i].x);
    }
    free(it);
    free(sys);
    return code;
}
