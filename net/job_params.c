/*
 * job_params.c: parsing and validating job parameters (see job_params.h).
 * Numbers are parsed with strtod/strtoll and must use the whole value;
 * names are compared exactly; nothing here allocates more than the options
 * object the client sent.
 */
#include "job_params.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/numfmt.h"
#include "../solver/names.h"

void job_params_init(job_params *p)
{
    memset(p, 0, sizeof *p);
    strcpy(p->kind, "cg");
    p->tol = 1e-8;
    strcpy(p->precond, "none");
    pc_options_default(&p->pc);
    strcpy(p->method, "auto");
    strcpy(p->precision, "double");
    strcpy(p->backend, "auto");
}

void job_params_free(job_params *p)
{
    json_decref(p->options);
    p->options = NULL;
}

int job_params_is_cg(const job_params *p) { return strcmp(p->kind, "cg") == 0; }

int job_params_solve_options(const job_params *p, solve_options *o, cls_error *err)
{
    if (solver_method_parse(p->method, &o->method) ||
        solver_precision_parse(p->precision, &o->precision) ||
        solver_backend_parse(p->backend, &o->backend))
        return cls_fail(err, CLS_EUSAGE, "method '%s' or precision '%s' is unknown", p->method,
                        p->precision);
    o->tol = p->tol;
    o->atol = p->atol;
    o->maxiter = p->maxiter;
    o->precond = p->pc.type;
    return CLS_OK;
}

static int kind_is_physics(const char *k)
{
    return !strcmp(k, "springs") || !strcmp(k, "deform") || !strcmp(k, "curvature") ||
           !strcmp(k, "nbody");
}

static int set_tol(job_params *p, const char *v, cls_error *err)
{
    char *end;
    errno = 0;
    double t = strtod(v, &end);
    if (end == v || *end || errno || !(t > 0.0 && t < 1.0))
        return cls_fail(err, CLS_EINPUT, "tol: '%.64s' is not a number in (0, 1)", v);
    p->tol = t;
    return CLS_OK;
}

static int set_maxiter(job_params *p, const char *v, cls_error *err)
{
    char *end;
    errno = 0;
    long long m = strtoll(v, &end, 10);
    if (end == v || *end || errno || m < 1 || m > 1000000000LL)
        return cls_fail(err, CLS_EINPUT,
                        "maxiter: '%.64s' is not an integer between 1 and 1000000000", v);
    p->maxiter = m;
    return CLS_OK;
}

static int set_atol(job_params *p, const char *v, cls_error *err)
{
    char *end;
    errno = 0;
    double t = strtod(v, &end);
    if (end == v || *end || errno || !(t >= 0.0) || !isfinite(t))
        return cls_fail(err, CLS_EINPUT, "atol: '%.64s' is not a finite number >= 0", v);
    p->atol = t;
    return CLS_OK;
}

/* A choice the solver knows by name (solver/names.h): parse(v) is 0. */
static int set_choice(char *dst, size_t cap, const char *key, const char *v, int known,
                      const char *choices, cls_error *err)
{
    if (!known || strlen(v) >= cap)
        return cls_fail(err, CLS_EINPUT, "%s: '%.64s' is not %s", key, v, choices);
    snprintf(dst, cap, "%s", v);
    return CLS_OK;
}

/* 1 when s is UTF-8 as jansson takes it (json_string, object keys): no
 * overlong forms, no surrogates, nothing above U+10FFFF. Checked before a
 * client's text goes to jansson, so that text it would refuse is a 400
 * naming the parameter, not an "out of memory". */
static int utf8_valid(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        unsigned c = *u++;
        int n = c < 0x80 ? 0 : c < 0xC2 ? -1 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : c < 0xF5 ? 3 : -1;
        if (n < 0)
            return 0;
        unsigned cp = n == 0 ? c : c & (0x3Fu >> n);
        for (int i = 0; i < n; i++, u++) {
            if ((*u & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (*u & 0x3Fu);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
    }
    return 1;
}

/* A query value as JSON: integer, real, boolean or string. */
static json_t *value_json(const char *v)
{
    char *end;
    errno = 0;
    long long i = strtoll(v, &end, 10);
    if (*v && !*end && !errno)
        return json_integer(i);
    errno = 0;
    double d = strtod(v, &end);
    if (*v && !*end && !errno && isfinite(d))
        return json_real(d);
    if (!strcmp(v, "true"))
        return json_true();
    if (!strcmp(v, "false"))
        return json_false();
    return json_string(v);
}

int job_params_set(job_params *p, const char *key, const char *value, cls_error *err)
{
    solver_method me;
    la_precision pr;
    la_backend be;
    if (!value)
        value = "";
    if (!strcmp(key, "kind")) {
        if (strcmp(value, "cg") != 0 && !kind_is_physics(value))
            return cls_fail(err, CLS_EINPUT,
                            "kind: '%.64s' is not one of cg, springs, deform, curvature, nbody",
                            value);
        snprintf(p->kind, sizeof p->kind, "%s", value);
        p->kind_set = 1;
        return CLS_OK;
    }
    if (!strcmp(key, "keep")) { /* any kind: retention's, see job_params.h */
        if (strcmp(value, "until-fetched") != 0 && strcmp(value, "default") != 0)
            return cls_fail(err, CLS_EINPUT, "keep: '%.64s' is not one of until-fetched, default",
                            value);
        p->keep_until_fetched = !strcmp(value, "until-fetched");
        return CLS_OK;
    }
    if (!strcmp(key, "tol") || !strcmp(key, "atol") || !strcmp(key, "maxiter") ||
        pc_options_key(key) || !strcmp(key, "method") || !strcmp(key, "precision") ||
        !strcmp(key, "backend")) {
        /* remembered for job_params_finish: the kind may come later */
        if (!p->cg_given[0])
            snprintf(p->cg_given, sizeof p->cg_given, "%s", key);
    }
    if (!strcmp(key, "tol"))
        return set_tol(p, value, err);
    if (!strcmp(key, "atol"))
        return set_atol(p, value, err);
    if (!strcmp(key, "maxiter"))
        return set_maxiter(p, value, err);
    if (pc_options_key(key)) { /* precond, precond_degree, ...: solver/pc_options.h */
        int rc = pc_options_set(&p->pc, key, value, err);
        snprintf(p->precond, sizeof p->precond, "%s", pc_name(p->pc.type));
        return rc;
    }
    if (!strcmp(key, "method"))
        return set_choice(p->method, sizeof p->method, key, value,
                          solver_method_parse(value, &me) == 0, solver_method_choices(), err);
    if (!strcmp(key, "precision"))
        return set_choice(p->precision, sizeof p->precision, key, value,
                          solver_precision_parse(value, &pr) == 0, solver_precision_choices(), err);
    if (!strcmp(key, "backend"))
        return set_choice(p->backend, sizeof p->backend, key, value,
                          solver_backend_parse(value, &be) == 0, solver_backend_choices(), err);
    /* anything else is a physics option; for cg it is an error, decided in
     * job_params_finish once the kind is known */
    if (strlen(key) > 64)
        return cls_fail(err, CLS_EINPUT, "parameter '%.64s...': name longer than 64 characters",
                        key);
    if (!utf8_valid(key))
        return cls_fail(err, CLS_EINPUT, "parameter '%.64s': name is not valid UTF-8", key);
    if (!utf8_valid(value))
        return cls_fail(err, CLS_EINPUT, "%.64s: value is not valid UTF-8", key);
    if (!p->options && !(p->options = json_object()))
        return cls_fail(err, CLS_EOTHER, "out of memory");
    json_t *v = value_json(value);
    if (!v || json_object_set_new(p->options, key, v))
        return cls_fail(err, CLS_EOTHER, "out of memory");
    return CLS_OK;
}

int job_params_apply_json(job_params *p, const char *text, size_t len, cls_error *err)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return cls_fail_line(err, CLS_EINPUT, je.line > 0 ? je.line : 0,
                             "options:%d: not valid JSON: %s", je.line, je.text);
    if (!json_is_object(o)) {
        json_decref(o);
        return cls_fail(err, CLS_EINPUT, "options: must be a JSON object");
    }
    int rc = CLS_OK;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        char buf[64];
        const char *s = NULL;
        if (json_is_string(v))
            s = json_string_value(v);
        else if (json_is_integer(v)) {
            snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
            s = buf;
        } else if (json_is_real(v)) {
            cls_fmt_double(buf, sizeof buf, json_real_value(v));
            s = buf;
        }
        int cg_key = !strcmp(k, "kind") || !strcmp(k, "keep") || !strcmp(k, "tol") ||
                     !strcmp(k, "atol") || !strcmp(k, "maxiter") || pc_options_key(k) ||
                     !strcmp(k, "method") || !strcmp(k, "precision") || !strcmp(k, "backend");
        if (cg_key) {
            if (!s) {
                rc = cls_fail(err, CLS_EINPUT, "options: '%s' must be a string or a number", k);
                break;
            }
            if ((rc = job_params_set(p, k, s, err)))
                break;
        } else {
            /* physics options keep their JSON type */
            if (!p->options && !(p->options = json_object())) {
                rc = cls_fail(err, CLS_EOTHER, "out of memory");
                break;
            }
            json_object_set(p->options, k, v);
        }
    }
    json_decref(o);
    return rc;
}

int job_params_finish(job_params *p, cls_error *err)
{
    if (job_params_is_cg(p)) {
        if (p->options && json_object_size(p->options) > 0) {
            const char *k = json_object_iter_key(json_object_iter(p->options));
            return cls_fail(err, CLS_EINPUT,
                            "unknown parameter '%.64s' for kind=cg (known: kind, keep, tol, atol, "
                            "maxiter, precond, precond_degree, precond_lanczos, precond_sweeps, "
                            "precond_shift, precond_reuse, precond_setup, precond_coupling, method, precision)",
                            k);
        }
        return CLS_OK;
    }
    if (p->cg_given[0])
        return cls_fail(err, CLS_EINPUT,
                        "%s: applies to kind=cg only; a %s job takes its own options "
                        "(docs/physics.md)",
                        p->cg_given, p->kind);
#ifdef CLS_NET_HAVE_PHYSICS
    /* the kind was checked against the four physics kinds when it was set */
    return CLS_OK;
#else
    return cls_fail(err, CLS_EINPUT,
                    "kind: '%s' needs the physics jobs, which this daemon was built without",
                    p->kind);
#endif
}

json_t *job_params_to_json(const job_params *p)
{
    if (job_params_is_cg(p)) {
        json_t *o = json_object();
        json_object_set_new(o, "tol", json_real(p->tol));
        json_object_set_new(o, "atol", json_real(p->atol));
        json_object_set_new(o, "maxiter", p->maxiter ? json_integer(p->maxiter) : json_null());
        json_object_set_new(o, "precond", json_string(p->precond));
        /* the preconditioner's parameters where they differ from the defaults */
        pc_options d;
        pc_options_default(&d);
        if (p->pc.degree != d.degree)
            json_object_set_new(o, "precond_degree", json_integer(p->pc.degree));
        if (p->pc.lanczos != d.lanczos)
            json_object_set_new(o, "precond_lanczos", json_integer(p->pc.lanczos));
        if (p->pc.sweeps != d.sweeps)
            json_object_set_new(o, "precond_sweeps", json_integer(p->pc.sweeps));
        if (p->pc.shift != d.shift)
            json_object_set_new(o, "precond_shift", json_real(p->pc.shift));
        if (p->pc.reuse != d.reuse)
            json_object_set_new(o, "precond_reuse", json_integer(p->pc.reuse));
        if (p->pc.setup != d.setup)
            json_object_set_new(o, "precond_setup", json_string(pc_setup_name(p->pc.setup)));
        if (p->pc.coupling != d.coupling)
            json_object_set_new(o, "precond_coupling",
                                json_string(pc_coupling_name(p->pc.coupling)));
        json_object_set_new(o, "method", json_string(p->method));
        json_object_set_new(o, "precision", json_string(p->precision));
        if (strcmp(p->backend, "auto") != 0)
            json_object_set_new(o, "backend", json_string(p->backend));
        return o;
    }
    return p->options ? json_deep_copy(p->options) : json_object();
}

/* "stored parameters: " before the message err holds. */
static int stored_fail(cls_error *err)
{
    char m[sizeof err->msg];
    snprintf(m, sizeof m, "%s", err->msg);
    return cls_fail(err, CLS_EINPUT, "stored parameters: %s", m);
}

int job_params_from_json(job_params *p, const char *kind, json_t *params, cls_error *err)
{
    job_params_init(p);
    if (!kind || strlen(kind) >= sizeof p->kind)
        return cls_fail(err, CLS_EINPUT, "stored job has no kind");
    if (!json_is_object(params))
        return cls_fail(err, CLS_EINPUT, "stored job has no parameters");
    /* a stored record is checked as the request was: through the setters
     * (a record an older daemon or a hand wrote is refused, never run) */
    int rc = job_params_set(p, "kind", kind, err);
    if (rc)
        return stored_fail(err);
    if (!job_params_is_cg(p)) {
        p->options = json_deep_copy(params);
        return p->options ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory");
    }
    const char *key;
    json_t *v;
    json_object_foreach(params, key, v)
    {
        char buf[64];
        const char *text = NULL;
        if (json_is_string(v))
            text = json_string_value(v);
        else if (json_is_integer(v))
            snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v)), text = buf;
        else if (json_is_real(v))
            cls_fmt_double(buf, sizeof buf, json_real_value(v)), text = buf;
        else if (json_is_null(v) && !strcmp(key, "maxiter"))
            continue; /* the solver's default */
        if (!text || !strcmp(key, "kind"))
            rc = cls_fail(err, CLS_EINPUT, "'%.64s' is not a stored parameter value", key);
        else
            rc = job_params_set(p, key, text, err);
        if (rc)
            return stored_fail(err);
    }
    p->cg_given[0] = '\0';
    if ((rc = job_params_finish(p, err)))
        return stored_fail(err);
    return CLS_OK;
}
