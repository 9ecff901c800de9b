/*
 * tunedb.c: the per-device tuning database (see tunedb.h).
 *
 * The file is JSON (jansson), written whole to a temporary file, fsync'ed
 * and renamed, so a reader sees the old file or the new one, never half.
 * Loading validates everything before any entry is used: the format tag and
 * version, the device identity (name, driver, platform: a database measured
 * with another driver is foreign), and every entry (known kernel and
 * precision, size class in range, local size between 1 and the device's
 * maximum, groups per compute unit >= 1, finite times). One bad entry
 * rejects the file: it was written by something else, or damaged.
 */
#include "tunedb.h"

#include <errno.h>
#include <pthread.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tunedb_data_dir[4096];

void tunedb_set_data_dir(const char *dir)
{
    snprintf(tunedb_data_dir, sizeof tunedb_data_dir, "%s", dir ? dir : "");
    tunedb_forget();
}

int tunedb_size_class(long long n)
{
    if (n < (1LL << 17))
        return 0;
    if (n < (1LL << 20))
        return 1;
    if (n < (1LL << 23))
        return 2;
    return 3;
}

const char *tunedb_class_name(int c)
{
    static const char *const names[TUNEDB_NCLASSES] = {"<128k", "<1M", "<8M", ">=8M"};
    return c >= 0 && c < TUNEDB_NCLASSES ? names[c] : "?";
}

int tunedb_dir(char *buf, size_t cap)
{
    const char *e = getenv("CLSOLVE_TUNE_DIR");
    int n;
    if (e && *e)
        n = snprintf(buf, cap, "%s", e);
    else if (tunedb_data_dir[0])
        n = snprintf(buf, cap, "%s/tuning", tunedb_data_dir);
    else if ((e = getenv("XDG_CACHE_HOME")) && *e)
        n = snprintf(buf, cap, "%s/clsolve/tuning", e);
    else if ((e = getenv("HOME")) && *e)
        n = snprintf(buf, cap, "%s/.cache/clsolve/tuning", e);
    else
        return 0;
    return n > 0 && (size_t)n < cap;
}

/* FNV-1a over the identity, so the name is short and filesystem-safe */
static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    h ^= 0xff; /* separator */
    h *= 1099511628211ULL;
    return h;
}

int tunedb_path(const ocl_device *dev, char *buf, size_t cap)
{
    char dir[4096];
    if (!tunedb_dir(dir, sizeof dir))
        return 0;
    uint64_t h = 1469598103934665603ULL;
    h = fnv1a(h, dev->name);
    h = fnv1a(h, dev->driver);
    h = fnv1a(h, dev->platform_name);
    char slug[48];
    size_t k = 0;
    for (const char *s = dev->name; *s && k < sizeof slug - 1; s++)
        slug[k++] = (char)(((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                            (*s >= '0' && *s <= '9'))
                               ? *s
                               : '-');
    slug[k] = '\0';
    int n = snprintf(buf, cap, "%s/%s-%016llx.json", dir, slug, (unsigned long long)h);
    return n > 0 && (size_t)n < cap;
}

void tunedb_init(tunedb *db, const ocl_device *dev)
{
    memset(db, 0, sizeof *db);
    if (dev) {
        snprintf(db->device, sizeof db->device, "%s", dev->name);
        snprintf(db->driver, sizeof db->driver, "%s", dev->driver);
        snprintf(db->platform, sizeof db->platform, "%s", dev->platform_name);
    }
}

void tunedb_free(tunedb *db)
{
    if (db) {
        free(db->e);
        db->e = NULL;
        db->n = db->cap = 0;
        db->nfig = 0;
    }
}

const char *tunedb_figure_method(const tunedb_figure *f)
{
    return f->method[0] ? f->method : "cg";
}

int tunedb_put_figure(tunedb *db, const tunedb_figure *f)
{
    for (int i = 0; i < db->nfig; i++)
        if (!strcmp(db->fig[i].precision, f->precision) && db->fig[i].rows == f->rows &&
            !strcmp(tunedb_figure_method(&db->fig[i]), tunedb_figure_method(f))) {
            db->fig[i] = *f;
            return 0;
        }
    if (db->nfig == TUNEDB_MAX_FIGURES)
        return -1;
    db->fig[db->nfig++] = *f;
    return 0;
}

static int same_key(const tunedb_entry *a, const tunedb_entry *b)
{
    return !strcmp(a->kernel, b->kernel) && !strcmp(a->precision, b->precision) &&
           a->size_class == b->size_class && !strcmp(a->shape, b->shape);
}

int tunedb_put(tunedb *db, const tunedb_entry *e)
{
    for (int i = 0; i < db->n; i++)
        if (same_key(&db->e[i], e)) {
            db->e[i] = *e;
            return 0;
        }
    if (db->n == db->cap) {
        int ncap = db->cap ? 2 * db->cap : 32;
        tunedb_entry *ne = realloc(db->e, (size_t)ncap * sizeof *ne);
        if (!ne)
            return -1;
        db->e = ne;
        db->cap = ncap;
    }
    db->e[db->n++] = *e;
    return 0;
}

const tunedb_entry *tunedb_find(const tunedb *db, const char *kernel, const char *precision,
                                int size_class, const char *shape, int *exact)
{
    const tunedb_entry *best = NULL;
    int bestd = 1 << 30;
    if (!db)
        return NULL;
    for (int i = 0; i < db->n; i++) {
        const tunedb_entry *e = &db->e[i];
        if (strcmp(e->kernel, kernel) || strcmp(e->precision, precision) ||
            strcmp(e->shape, shape ? shape : ""))
            continue;
        int d = abs(e->size_class - size_class);
        /* prefer the larger class on ties: its configuration is the safer
         * one for a problem between two tuned sizes */
        if (d < bestd || (d == bestd && best && e->size_class > best->size_class)) {
            best = e;
            bestd = d;
        }
    }
    if (exact)
        *exact = best && bestd == 0;
    return best;
}

static const char *const known_kernels[] = {"dot",           "cg_update",     "cgf_update",
                                            "spmv_scalar",   "spmv_vector",   "spmv_adaptive",
                                            "spmv_sell",     "spmv_bcsr",     "format"};

static int known_kernel(const char *k)
{
    for (size_t i = 0; i < sizeof known_kernels / sizeof *known_kernels; i++)
        if (!strcmp(k, known_kernels[i]))
            return 1;
    return 0;
}

static int warnf(char *warn, size_t wcap, const char *fmt, const char *a, const char *b)
{
    if (warn && wcap)
        snprintf(warn, wcap, fmt, a, b);
    return 2;
}

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int jsize(json_t *o, const char *k, size_t *out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (size_t)json_integer_value(v);
    return 0;
}

static int jnum(json_t *o, const char *k, double *out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return isfinite(*out) ? 0 : -1;
}

int tunedb_load(const char *path, const ocl_device *dev, tunedb *db, char *warn, size_t wcap)
{
    tunedb_init(db, dev);
    if (warn && wcap)
        warn[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? 1 : warnf(warn, wcap, "%s: %s", path, strerror(errno));
    fclose(f);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        char what[300];
        snprintf(what, sizeof what, "line %d: %s", je.line, je.text);
        return warnf(warn, wcap, "%s is not valid JSON (%s)", path, what);
    }
    int rc = 0;
    const char *fmt = jstr(root, "format");
    json_t *ver = json_object_get(root, "version");
    json_t *devj = json_object_get(root, "device");
    json_t *entries = json_object_get(root, "entries");
    if (!fmt || strcmp(fmt, TUNEDB_FORMAT) || !json_is_integer(ver)) {
        rc = warnf(warn, wcap, "%s is not a clsolve tuning database%s", path, "");
        goto out;
    }
    if (json_integer_value(ver) != TUNEDB_VERSION) {
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)json_integer_value(ver));
        rc = warnf(warn, wcap, "%s has version %s, this build reads version 1", path, v);
        goto out;
    }
    const char *dn = json_is_object(devj) ? jstr(devj, "name") : NULL;
    const char *dd = json_is_object(devj) ? jstr(devj, "driver") : NULL;
    const char *dp = json_is_object(devj) ? jstr(devj, "platform") : NULL;
    if (!dn || !dd || !dp) {
        rc = warnf(warn, wcap, "%s does not name its device, driver and platform%s", path, "");
        goto out;
    }
    if (strcmp(dn, dev->name) || strcmp(dd, dev->driver) || strcmp(dp, dev->platform_name)) {
        char who[700];
        snprintf(who, sizeof who, "%s, driver %s, %s", dn, dd, dp);
        rc = warnf(warn, wcap, "%s was measured on another device or driver (%s)", path, who);
        goto out;
    }
    if (!json_is_array(entries)) {
        rc = warnf(warn, wcap, "%s has no entries array%s", path, "");
        goto out;
    }
    size_t i;
    json_t *ej;
    json_array_foreach(entries, i, ej)
    {
        tunedb_entry e;
        memset(&e, 0, sizeof e);
        const char *k = json_is_object(ej) ? jstr(ej, "kernel") : NULL;
        const char *p = json_is_object(ej) ? jstr(ej, "precision") : NULL;
        const char *sh = json_is_object(ej) ? jstr(ej, "shape") : NULL;
        json_t *cl = json_is_object(ej) ? json_object_get(ej, "size_class") : NULL;
        char idx[32];
        snprintf(idx, sizeof idx, "%zu", i);
        if (!k || !p || !sh || !json_is_integer(cl) || !known_kernel(k) ||
            (strcmp(p, "double") && strcmp(p, "float") && strcmp(p, "mixed")) ||
            json_integer_value(cl) < 0 || json_integer_value(cl) >= TUNEDB_NCLASSES ||
            strlen(k) >= sizeof e.kernel || strlen(sh) >= sizeof e.shape) {
            rc = warnf(warn, wcap, "%s: entry %s is malformed", path, idx);
            goto out;
        }
        snprintf(e.kernel, sizeof e.kernel, "%s", k);
        snprintf(e.precision, sizeof e.precision, "%s", p);
        snprintf(e.shape, sizeof e.shape, "%s", sh);
        e.size_class = (int)json_integer_value(cl);
        if (!strcmp(k, "format")) {
            const char *fm = jstr(ej, "format");
            if (!fm || strlen(fm) >= sizeof e.format) {
                rc = warnf(warn, wcap, "%s: entry %s names no format", path, idx);
                goto out;
            }
            snprintf(e.format, sizeof e.format, "%s", fm);
            /* the configuration fields are informative here */
            jsize(ej, "local_size", &e.local_size);
            jsize(ej, "groups_per_cu", &e.groups_per_cu);
            jsize(ej, "param", &e.param);
            jsize(ej, "pow2_local_size", &e.pow2_local_size);
            jsize(ej, "pow2_groups_per_cu", &e.pow2_groups_per_cu);
        } else {
            if (jsize(ej, "local_size", &e.local_size) ||
                jsize(ej, "groups_per_cu", &e.groups_per_cu) || jsize(ej, "param", &e.param) ||
                jsize(ej, "pow2_local_size", &e.pow2_local_size) ||
                jsize(ej, "pow2_groups_per_cu", &e.pow2_groups_per_cu) || e.local_size == 0 ||
                e.local_size > dev->max_work_group || e.pow2_local_size == 0 ||
                e.pow2_local_size > dev->max_work_group ||
                (e.pow2_local_size & (e.pow2_local_size - 1)) || e.groups_per_cu == 0 ||
                e.pow2_groups_per_cu == 0 || e.groups_per_cu > 1000000 ||
                e.pow2_groups_per_cu > 1000000 || e.param > 4096) {
                rc = warnf(warn, wcap,
                           "%s: entry %s has a configuration this device cannot run", path, idx);
                goto out;
            }
        }
        /* measurements are informative; absent ones read as 0 */
        jnum(ej, "ms", &e.ms);
        jnum(ej, "bueno_ms", &e.bueno_ms);
        jnum(ej, "default_ms", &e.default_ms);
        jnum(ej, "early_ms", &e.early_ms);
        jsize(ej, "early_local_size", &e.early_local_size);
        jsize(ej, "early_groups_per_cu", &e.early_groups_per_cu);
        size_t pts = 0, epts = 0;
        jsize(ej, "points", &pts);
        jsize(ej, "early_points", &epts);
        e.points = (int)pts;
        e.early_points = (int)epts;
        json_t *ex = json_object_get(ej, "exhaustive");
        e.exhaustive = json_is_true(ex);
        if (tunedb_put(db, &e)) {
            rc = warnf(warn, wcap, "%s: out of memory%s", path, "");
            goto out;
        }
    }
    /* figures: optional; each must be a plausible measurement */
    json_t *figs = json_object_get(root, "figures");
    if (figs && !json_is_array(figs)) {
        rc = warnf(warn, wcap, "%s: figures is not an array%s", path, "");
        goto out;
    }
    json_array_foreach(figs, i, ej)
    {
        tunedb_figure f;
        memset(&f, 0, sizeof f);
        const char *p = json_is_object(ej) ? jstr(ej, "precision") : NULL;
        json_t *jr = json_object_get(ej, "rows"), *jn = json_object_get(ej, "nnz");
        json_t *jm = json_object_get(ej, "ms_per_iteration");
        json_t *jme = json_object_get(ej, "method"); /* absent in files before cg-small's */
        const char *me = json_is_string(jme) ? json_string_value(jme) : "cg";
        snprintf(f.method, sizeof f.method, "%s", me);
        if (!p || (strcmp(p, "double") && strcmp(p, "float") && strcmp(p, "mixed")) ||
            (jme && !json_is_string(jme)) || (strcmp(me, "cg") && strcmp(me, "cg-small")) ||
            !json_is_integer(jr) || !json_is_integer(jn) || !json_is_number(jm) ||
            json_integer_value(jr) < 1 || json_integer_value(jn) < 1 ||
            !(json_number_value(jm) > 0.0 && json_number_value(jm) < 1e6) ||
            tunedb_put_figure(db, &f)) {
            char idx[32];
            snprintf(idx, sizeof idx, "%zu", i);
            rc = warnf(warn, wcap, "%s: figure %s is malformed", path, idx);
            goto out;
        }
        tunedb_figure *d = &db->fig[db->nfig - 1];
        snprintf(d->precision, sizeof d->precision, "%s", p);
        d->rows = json_integer_value(jr);
        d->nnz = json_integer_value(jn);
        d->ms = json_number_value(jm);
    }
out:
    json_decref(root);
    if (rc)
        tunedb_free(db);
    return rc;
}

static int mkdir_p(const char *dir)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

int tunedb_save(const char *path, const tunedb *db, cls_error *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        if (dir[0] && mkdir_p(dir))
            return cls_fail(err, CLS_EOTHER, "cannot create %s: %s", dir, strerror(errno));
    }
    json_t *arr = json_array();
    for (int i = 0; i < db->n; i++) {
        const tunedb_entry *e = &db->e[i];
        json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:s}", "kernel", e->kernel, "precision",
                              e->precision, "size_class", e->size_class, "size", 
                              tunedb_class_name(e->size_class), "shape", e->shape);
        if (!strcmp(e->kernel, "format"))
            json_object_set_new(o, "format", json_string(e->format));
        {
            json_object_set_new(o, "local_size", json_integer((json_int_t)e->local_size));
            json_object_set_new(o, "groups_per_cu", json_integer((json_int_t)e->groups_per_cu));
            json_object_set_new(o, "param", json_integer((json_int_t)e->param));
            json_object_set_new(o, "pow2_local_size",
                                json_integer((json_int_t)e->pow2_local_size));
            json_object_set_new(o, "pow2_groups_per_cu",
                                json_integer((json_int_t)e->pow2_groups_per_cu));
            json_object_set_new(o, "early_local_size",
                                json_integer((json_int_t)e->early_local_size));
            json_object_set_new(o, "early_groups_per_cu",
                                json_integer((json_int_t)e->early_groups_per_cu));
            json_object_set_new(o, "points", json_integer(e->points));
            json_object_set_new(o, "early_points", json_integer(e->early_points));
            json_object_set_new(o, "exhaustive", json_boolean(e->exhaustive));
        }
        json_object_set_new(o, "ms", json_real(e->ms));
        json_object_set_new(o, "bueno_ms", json_real(e->bueno_ms));
        json_object_set_new(o, "default_ms", json_real(e->default_ms));
        json_object_set_new(o, "early_ms", json_real(e->early_ms));
        json_array_append_new(arr, o);
    }
    json_t *root = json_pack("{s:s, s:i, s:{s:s, s:s, s:s}, s:o}", "format", TUNEDB_FORMAT,
                             "version", TUNEDB_VERSION, "device", "name", db->device, "driver",
                             db->driver, "platform", db->platform, "entries", arr);
    if (db->nfig > 0) {
        json_t *figs = json_array();
        for (int i = 0; i < db->nfig; i++)
            json_array_append_new(
                figs, json_pack("{s:s, s:s, s:I, s:I, s:f}", "method",
                                tunedb_figure_method(&db->fig[i]), "precision",
                                db->fig[i].precision, "rows", (json_int_t)db->fig[i].rows, "nnz",
                                (json_int_t)db->fig[i].nnz, "ms_per_iteration", db->fig[i].ms));
        json_object_set_new(root, "figures", figs);
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        json_decref(root);
        return cls_fail(err, CLS_EOTHER, "cannot write %s: %s", tmp, strerror(errno));
    }
    int bad = json_dumpf(root, f, JSON_INDENT(1)) != 0;
    bad |= fputc('\n', f) == EOF;
    bad |= fflush(f) != 0;
    bad |= fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    json_decref(root);
    if (bad || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return cls_fail(err, CLS_EOTHER, "cannot write %s: %s", path, strerror(e));
    }
    tunedb_forget();
    return CLS_OK;
}

/* Process-wide cache: each device's database, loaded on first use and
 * kept until tunedb_forget. Several threads solve at once in the daemon
 * (scheduler lanes), on the same device or on different ones, so the cache
 * is locked and an entry is never freed while the process may hold its
 * pointer: a one-entry cache reloaded on every change of device would free
 * the database another lane is reading. */
#define TUNEDB_CACHE_MAX 32
static struct tunedb_cached {
    char key[600];
    tunedb db;
    int ok;
} tunedb_cache[TUNEDB_CACHE_MAX];
static int tunedb_ncached;
static pthread_mutex_t tunedb_mu = PTHREAD_MUTEX_INITIALIZER;

const tunedb *tunedb_for_device(const ocl_device *dev)
{
    char key[600];
    snprintf(key, sizeof key, "%s|%s|%s", dev->name, dev->driver, dev->platform_name);
    const tunedb *out = NULL;
    pthread_mutex_lock(&tunedb_mu);
    int i;
    for (i = 0; i < tunedb_ncached; i++)
        if (!strcmp(key, tunedb_cache[i].key))
            break;
    if (i == tunedb_ncached) {
        if (tunedb_ncached == TUNEDB_CACHE_MAX) { /* more devices than any host has */
            pthread_mutex_unlock(&tunedb_mu);
            return NULL;
        }
        struct tunedb_cached *c = &tunedb_cache[tunedb_ncached++];
        memset(c, 0, sizeof *c);
        snprintf(c->key, sizeof c->key, "%s", key);
        char path[4400], warn[1200];
        if (tunedb_path(dev, path, sizeof path)) {
            int rc = tunedb_load(path, dev, &c->db, warn, sizeof warn);
            if (rc == 2)
                fprintf(stderr,
                        "clsolve: warning: tuning database ignored: %s; using the defaults\n",
                        warn);
            c->ok = rc == 0;
        }
    }
    if (tunedb_cache[i].ok)
        out = &tunedb_cache[i].db;
    pthread_mutex_unlock(&tunedb_mu);
    return out;
}

void tunedb_refresh(const ocl_device *dev)
{
    char key[600];
    snprintf(key, sizeof key, "%s|%s|%s", dev->name, dev->driver, dev->platform_name);
    pthread_mutex_lock(&tunedb_mu);
    for (int i = 0; i < tunedb_ncached; i++)
        if (!strcmp(key, tunedb_cache[i].key))
            tunedb_cache[i].key[0] = '\0'; /* stale: kept, a solve may hold it */
    pthread_mutex_unlock(&tunedb_mu);
}

void tunedb_forget(void)
{
    pthread_mutex_lock(&tunedb_mu);
    for (int i = 0; i < tunedb_ncached; i++)
        tunedb_free(&tunedb_cache[i].db);
    memset(tunedb_cache, 0, sizeof tunedb_cache);
    tunedb_ncached = 0;
    pthread_mutex_unlock(&tunedb_mu);
}
