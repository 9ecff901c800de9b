/*
 * test_tune.c: the tuning database and the profiler, on PoCL.
 *
 *   - a database round-trips through its JSON file, entry for entry;
 *   - a corrupt file (garbage, truncated JSON, wrong format tag or version,
 *     an entry this device cannot run, a malformed entry) and a foreign one
 *     (another device or driver) are ignored with a warning naming the
 *     reason, and la_init / la_csr_upload then run on the defaults;
 *   - a valid database steers la_csr_upload: the fused CG's geometry, the
 *     SpMV format for the shape, "tuned (nearest size)" from another class;
 *   - `tune_run` on a tiny problem (capped grid) measures every kernel,
 *     reports the early-stopped choice no better than the exhaustive best
 *     and Bueno's start no better than the best, writes a database that
 *     loads back, and the next la_init uses it.
 * Every file lives in a fresh directory under $TMPDIR (CLSOLVE_TUNE_DIR).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "kernels/la.h"
#include "kernels/tune.h"
#include "kernels/tunedb.h"
#include "matrices/gen.h"

static cls_error err;
static char dir[512], path[4400];

static void write_file(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");
    if (!f) {
        perror(p);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

static tunedb_entry mk(const char *kernel, int cls, const char *shape, size_t ls, size_t g)
{
    tunedb_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.kernel, sizeof e.kernel, "%s", kernel);
    snprintf(e.precision, sizeof e.precision, "double");
    snprintf(e.shape, sizeof e.shape, "%s", shape);
    e.size_class = cls;
    e.local_size = ls;
    e.groups_per_cu = g;
    e.pow2_local_size = 32;
    e.pow2_groups_per_cu = g;
    e.ms = 0.5 + (double)ls / 1000.0;
    e.bueno_ms = 1.25;
    e.default_ms = 0.75;
    e.early_ms = 0.625;
    e.early_local_size = ls;
    e.early_groups_per_cu = g + 1;
    e.points = 40;
    e.early_points = 9;
    e.exhaustive = 1;
    return e;
}

static void test_roundtrip(const ocl_device *dev)
{
    tunedb db, back;
    tunedb_init(&db, dev);
    tunedb_entry a = mk("cgf_update", 1, "", 96, 3), b = mk("spmv_sell", 1, "short", 64, 2);
    b.param = 8;
    tunedb_entry f = mk("format", 1, "short", 1, 1);
    snprintf(f.format, sizeof f.format, "adaptive");
    CHECK(tunedb_put(&db, &a) == 0 && tunedb_put(&db, &b) == 0 && tunedb_put(&db, &f) == 0);
    /* same key replaces */
    a.groups_per_cu = 5;
    CHECK(tunedb_put(&db, &a) == 0 && db.n == 3);
    cls_error_clear(&err);
    CHECK_MSG(tunedb_save(path, &db, &err) == CLS_OK, "save: %s", err.msg);
    char warn[1200];
    int rc = tunedb_load(path, dev, &back, warn, sizeof warn);
    CHECK_MSG(rc == 0, "load -> %d: %s", rc, warn);
    CHECK(back.n == 3);
    for (int i = 0; i < db.n && i < back.n; i++) {
        const tunedb_entry *x = &db.e[i];
        int ex = 0;
        const tunedb_entry *y = tunedb_find(&back, x->kernel, x->precision, x->size_class,
                                            x->shape, &ex);
        CHECK_MSG(y && ex, "entry %s lost", x->kernel);
        if (!y)
            continue;
        CHECK(y->local_size == x->local_size && y->groups_per_cu == x->groups_per_cu &&
              y->param == x->param && y->pow2_local_size == x->pow2_local_size &&
              y->early_local_size == x->early_local_size && y->points == x->points &&
              y->early_points == x->early_points && y->exhaustive == x->exhaustive);
        CHECK(y->ms == x->ms && y->bueno_ms == x->bueno_ms && y->early_ms == x->early_ms &&
              y->default_ms == x->default_ms);
        CHECK(!strcmp(y->format, x->format));
    }
    int ex = 1;
    const tunedb_entry *near = tunedb_find(&back, "cgf_update", "double", 3, "", &ex);
    CHECK(near && !ex && near->size_class == 1);
    CHECK(tunedb_find(&back, "dot", "double", 1, "", &ex) == NULL);
    tunedb_free(&db);
    tunedb_free(&back);
}

/* every kind of bad file is ignored with a reason */
static void test_bad_files(ocl_ctx *ocl)
{
    const ocl_device *dev = &ocl->dev;
    char good_dev[1200];
    snprintf(good_dev, sizeof good_dev,
             "\"device\": {\"name\": \"%s\", \"driver\": \"%s\", \"platform\": \"%s\"}",
             dev->name, dev->driver, dev->platform_name);
    char entry_ok[] = "{\"kernel\": \"cgf_update\", \"precision\": \"double\", \"size_class\": "
                      "1, \"shape\": \"\", \"local_size\": 64, \"groups_per_cu\": 2, \"param\": "
                      "0, \"pow2_local_size\": 64, \"pow2_groups_per_cu\": 2}";
    struct {
        const char *what, *reason;
        char text[4000];
    } cases[8];
    int n = 0;
    cases[n].what = "garbage";
    cases[n].reason = "not valid JSON";
    snprintf(cases[n++].text, 4000, "\x7f" "ELF\x02\x01 garbage {{{");
    cases[n].what = "truncated";
    cases[n].reason = "not valid JSON";
    snprintf(cases[n++].text, 4000, "{\"format\": \"clsolve-tuning\", \"version\": 1, %s, "
             "\"entries\": [%s", good_dev, entry_ok);
    cases[n].what = "wrong format tag";
    cases[n].reason = "not a clsolve tuning database";
    snprintf(cases[n++].text, 4000, "{\"format\": \"something-else\", \"version\": 1, %s, "
             "\"entries\": []}", good_dev);
    cases[n].what = "wrong version";
    cases[n].reason = "version";
    snprintf(cases[n++].text, 4000, "{\"format\": \"clsolve-tuning\", \"version\": 99, %s, "
             "\"entries\": []}", good_dev);
    cases[n].what = "foreign device";
    cases[n].reason = "another device";
    snprintf(cases[n++].text, 4000,
             "{\"format\": \"clsolve-tuning\", \"version\": 1, \"device\": {\"name\": \"NVIDIA "
             "H200\", \"driver\": \"580.159.04\", \"platform\": \"NVIDIA CUDA\"}, \"entries\": "
             "[%s]}", entry_ok);
    cases[n].what = "foreign driver";
    cases[n].reason = "another device";
    snprintf(cases[n++].text, 4000,
             "{\"format\": \"clsolve-tuning\", \"version\": 1, \"device\": {\"name\": \"%s\", "
             "\"driver\": \"0.0-other\", \"platform\": \"%s\"}, \"entries\": [%s]}",
             dev->name, dev->platform_name, entry_ok);
    cases[n].what = "impossible local size";
    cases[n].reason = "cannot run";
    snprintf(cases[n++].text, 4000,
             "{\"format\": \"clsolve-tuning\", \"version\": 1, %s, \"entries\": [%s, {\"kernel\": "
             "\"dot\", \"precision\": \"double\", \"size_class\": 1, \"shape\": \"\", "
             "\"local_size\": 99999999, \"groups_per_cu\": 2, \"param\": 0, "
             "\"pow2_local_size\": 64, \"pow2_groups_per_cu\": 2}]}",
             good_dev, entry_ok);
    cases[n].what = "malformed entry";
    cases[n].reason = "malformed";
    snprintf(cases[n++].text, 4000,
             "{\"format\": \"clsolve-tuning\", \"version\": 1, %s, \"entries\": [%s, "
             "{\"kernel\": \"rm -rf\", \"precision\": \"double\", \"size_class\": 7}]}",
             good_dev, entry_ok);
    for (int i = 0; i < n; i++) {
        write_file(path, cases[i].text);
        tunedb db;
        char warn[1200] = "";
        int rc = tunedb_load(path, dev, &db, warn, sizeof warn);
        CHECK_MSG(rc == 2 && db.n == 0 && strstr(warn, cases[i].reason),
                  "%s: load -> %d, %d entries, warning '%s'", cases[i].what, rc, db.n, warn);
        tunedb_free(&db);
        /* and the library falls back to the defaults, warning on stderr */
        tunedb_forget();
        CHECK(tunedb_for_device(dev) == NULL);
        la_ctx la;
        cls_error_clear(&err);
        int irc = la_init(&la, ocl, LA_DOUBLE, NULL, &err);
        CHECK_MSG(irc == CLS_OK, "la_init with a %s database: %s", cases[i].what, err.msg);
        if (irc)
            continue;
        csr_matrix A;
        gen_matrix(GEN_POISSON3D, 8, &A, &err);
        la_csr dA;
        CHECK(la_csr_upload(&la, &A, LA_SPMV_AUTO, &dA, &err) == CLS_OK);
        CHECK_MSG(!strcmp(la.cfg.source, "default"), "%s: source %s", cases[i].what,
                  la.cfg.source);
        la_config d;
        la_config_default(dev, &d);
        CHECK(la.cfg.cg_local_size == d.cg_local_size || la.cfg.cg_local_size < d.cg_local_size);
        la_csr_release(&dA);
        csr_free(&A);
        la_release(&la);
    }
    /* no file at all is not an error */
    unlink(path);
    tunedb db;
    CHECK(tunedb_load(path, dev, &db, NULL, 0) == 1 && db.n == 0);
    tunedb_free(&db);
}

/* a valid database steers the upload */
static void test_db_applied(ocl_ctx *ocl)
{
    const ocl_device *dev = &ocl->dev;
    tunedb db;
    tunedb_init(&db, dev);
    csr_matrix A;
    gen_matrix(GEN_POISSON3D, 12, &A, &err); /* 1728 rows: class 0, shape short */
    int cls = tunedb_size_class(A.nrows);
    tunedb_entry a = mk("cgf_update", cls, "", 48, 3);
    tunedb_entry f = mk("format", cls, "short", 1, 1);
    snprintf(f.format, sizeof f.format, "adaptive");
    tunedb_entry s = mk("spmv_adaptive", cls, "short", 40, 2);
    tunedb_put(&db, &a);
    tunedb_put(&db, &f);
    tunedb_put(&db, &s);
    CHECK(tunedb_save(path, &db, &err) == CLS_OK);
    tunedb_free(&db);
    tunedb_forget();
    la_ctx la;
    if (la_init(&la, ocl, LA_DOUBLE, NULL, &err)) {
        CHECK_MSG(0, "la_init: %s", err.msg);
        return;
    }
    la_csr dA;
    CHECK(la_csr_upload(&la, &A, LA_SPMV_AUTO, &dA, &err) == CLS_OK);
    CHECK_MSG(dA.variant == LA_SPMV_ADAPTIVE, "database format ignored: %s",
              la_spmv_variant_name(dA.variant));
    CHECK_MSG(la.cfg.cg_local_size == 48 && la.cfg.cg_groups_per_cu == 3,
              "fused geometry %zu x %zu", la.cfg.cg_local_size, la.cfg.cg_groups_per_cu);
    CHECK(dA.local_size == 40 && la.cfg.fmt_local_size == 40);
    CHECK_MSG(!strcmp(la.cfg.source, "tuned"), "source %s", la.cfg.source);
    CHECK(dA.cfg.format == LA_SPMV_ADAPTIVE && la.cfg.format == LA_SPMV_ADAPTIVE);
    la_csr_release(&dA);
    /* an explicit format overrides the database */
    CHECK(la_csr_upload(&la, &A, LA_SPMV_SCALAR, &dA, &err) == CLS_OK &&
          dA.variant == LA_SPMV_SCALAR);
    la_csr_release(&dA);
    /* another size class: the nearest tuned one */
    csr_matrix B;
    gen_matrix(GEN_POISSON3D, 60, &B, &err); /* 216000 rows: class 1 */
    CHECK(la_csr_upload(&la, &B, LA_SPMV_AUTO, &dA, &err) == CLS_OK);
    CHECK_MSG(!strcmp(la.cfg.source, "tuned (nearest size)"), "source %s", la.cfg.source);
    la_csr_release(&dA);
    csr_free(&B);
    la_release(&la);
    /* a configuration given to la_init is used as is */
    la_config mine;
    la_config_default(dev, &mine);
    CHECK(la_init(&la, ocl, LA_DOUBLE, &mine, &err) == CLS_OK);
    CHECK(la_csr_upload(&la, &A, LA_SPMV_AUTO, &dA, &err) == CLS_OK);
    CHECK(!strcmp(la.cfg.source, "user") && dA.variant != LA_SPMV_ADAPTIVE);
    la_csr_release(&dA);
    la_release(&la);
    csr_free(&A);
    unlink(path);
    tunedb_forget();
}

static void test_profiler(ocl_ctx *ocl)
{
    int64_t sizes[] = {10};
    for (int exhaustive = 1; exhaustive >= 0; exhaustive--) {
        tune_options o = {.device = "auto", .sizes = sizes, .nsizes = 1,
                          .stencil = "poisson3d", .exhaustive = exhaustive, .reps = 5,
                          .prec = LA_DOUBLE, .save = 1, .max_local = 128, .max_ladder = 3,
                          .formats = 1};
        tune_report rep;
        cls_error_clear(&err);
        int rc = tune_run(&o, &rep, &err);
        CHECK_MSG(rc == CLS_OK, "tune_run: %s", err.msg);
        CHECK(rep.saved && rep.n >= 5);
        int kinds = 0, formats = 0;
        for (int i = 0; i < rep.n; i++) {
            const tunedb_entry *e = &rep.e[i];
            if (!strcmp(e->kernel, "format")) {
                formats++;
                la_spmv_variant v;
                CHECK(la_spmv_variant_parse(e->format, &v) == 0);
                continue;
            }
            kinds++;
            CHECK_MSG(e->ms > 0 && e->bueno_ms > 0 && e->early_ms > 0 && e->local_size > 0 &&
                          e->groups_per_cu > 0 && e->local_size <= 128,
                      "%s: ms %g start %g early %g ls %zu", e->kernel, e->ms, e->bueno_ms,
                      e->early_ms, e->local_size);
            CHECK_MSG(e->early_ms >= e->ms && e->bueno_ms >= e->ms,
                      "%s: best %g, early %g, start %g", e->kernel, e->ms, e->early_ms,
                      e->bueno_ms);
            CHECK(e->early_points >= 1 && e->early_points <= e->points + 1);
            CHECK(e->exhaustive == exhaustive);
        }
        CHECK(kinds >= 5 && formats == 1);
        tunedb db;
        char warn[1200];
        CHECK_MSG(tunedb_load(rep.path, &rep.dev, &db, warn, sizeof warn) == 0, "%s", warn);
        CHECK(db.n == rep.n);
        tunedb_free(&db);
        tune_report_free(&rep);
    }
    /* the next la_init uses it */
    tunedb_forget();
    la_ctx la;
    CHECK(la_init(&la, ocl, LA_DOUBLE, NULL, &err) == CLS_OK);
    csr_matrix A;
    gen_matrix(GEN_POISSON3D, 10, &A, &err);
    la_csr dA;
    CHECK(la_csr_upload(&la, &A, LA_SPMV_AUTO, &dA, &err) == CLS_OK);
    CHECK_MSG(!strcmp(la.cfg.source, "tuned"), "after tune: source %s", la.cfg.source);
    la_csr_release(&dA);
    csr_free(&A);
    la_release(&la);
}

int main(void)
{
    check_seed("test_tune");
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/clsolve-test-tune-%ld", tmp, (long)getpid());
    setenv("CLSOLVE_TUNE_DIR", dir, 1);
    ocl_device dev;
    cls_error_clear(&err);
    if (ocl_pick_device("auto", &dev, &err))
        CHECK_SKIP("no OpenCL device: %s", err.msg);
    if (!dev.fp64)
        CHECK_SKIP("device has no fp64");
    ocl_ctx ocl;
    if (ocl_ctx_create(&dev, &ocl, &err)) {
        fprintf(stderr, "ocl_ctx_create: %s\n", err.msg);
        return 1;
    }
    CHECK(tunedb_path(&dev, path, sizeof path) && strstr(path, dir) == path);
    CHECK(tunedb_size_class(1000) == 0 && tunedb_size_class(262144) == 1 &&
          tunedb_size_class(2097152) == 2 && tunedb_size_class(16777216) == 3);
    test_roundtrip(&dev);
    test_bad_files(&ocl);
    test_db_applied(&ocl);
    test_profiler(&ocl);
    unlink(path);
    rmdir(dir);
    ocl_ctx_release(&ocl);
    return check_done("test_tune");
}
