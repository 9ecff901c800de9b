/*
 * fuzz_params.c: libFuzzer target for the parsing of job requests:
 * net/job_params.c (query parameters, the multipart `options` part, the
 * check once all are in, the record's JSON and back) and net/ids.c (the
 * job id gate that the id in a path and `?after=` go through).
 *
 * Input: QUERY [NUL OPTIONS]
 *
 *   QUERY is split and decoded the way libmicrohttpd (0.9.7x,
 *   MHD_parse_arguments_ and MHD_http_unescape) hands GET arguments to
 *   routes_jobs.c's query_param: pairs separated by '&', the key ending at
 *   the first '=' of its pair, '+' read as a space, then %HH decoded (either
 *   case; any other '%' kept); a pair without '=' gives a NULL value, an
 *   empty pair an empty key. A decoded %00 ends the C string the callback
 *   sees. The pairs go to job_params_set in order until the first error,
 *   which is where the route stops (query_param answers MHD_NO).
 *   OPTIONS (present when the input has a NUL) is the `options` part of a
 *   multipart body: job_params_apply_json after the query, as mp_end does.
 *   Then job_params_finish, as routes_jobs_post_end does.
 *
 * Checks, beyond ASan (with its leak check), UBSan and libFuzzer's limits:
 *  - every rejection is CLS_EINPUT with a message naming what it rejects:
 *    a query parameter's key (its first 64 bytes), "options" or the cg key
 *    of the options part that failed, "kind" or the unknown parameter at
 *    job_params_finish;
 *  - an accepted cg job has tol in (0, 1), maxiter in [0, 10^9], precond,
 *    method and precision from their sets and no physics options; an
 *    accepted physics job has one of the four physics kinds and options
 *    that are an object;
 *  - in an accepted job every key of the options part has that part's
 *    value, whatever the query said (the documented precedence);
 *  - the record round-trips as the store keeps it: job_params_to_json,
 *    dumped as job_store.c dumps it (compact, 17 digits), loaded as its
 *    recovery loads it (flags 0), job_params_from_json, job_params_to_json
 *    again gives an equal JSON (json_equal, and the same text) and the same
 *    fields (kind; tol bit for bit, maxiter, precond, method, precision for
 *    cg; the options for physics);
 *  - OPTIONS is also read as a stored record's "parameters" under the
 *    request's kind (a damaged or hand-edited job.json): from_json fails
 *    with CLS_EINPUT and a message, or gives parameters that are stable
 *    under to_json and from_json; a NULL kind is refused;
 *  - ids_valid agrees with a plain reference (exactly 32 characters of
 *    [0-9a-f]) on every decoded key and value, each in a heap block of
 *    exactly its size, and an id from ids_new is valid.
 *
 * job_params.c is compiled with CLS_NET_HAVE_PHYSICS, as the daemon is
 * built. Violations call abort().
 */
#define _GNU_SOURCE /* memmem */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/ids.h"
#include "net/job_params.h"

static void fp_die(const char *what, const char *detail, const cls_error *e)
{
    fprintf(stderr, "fuzz_params: %s", what);
    if (detail)
        fprintf(stderr, " [%.200s]", detail);
    if (e)
        fprintf(stderr, " (code %d, '%s')", e->code, e->msg);
    fputc('\n', stderr);
    abort();
}

/* --- the query string as libmicrohttpd delivers it --- */

static int fp_hex(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* MHD_unescape_plus then MHD_http_unescape, in place. */
static void fp_unescape(char *s)
{
    for (char *p = s; *p; p++)
        if (*p == '+')
            *p = ' ';
    char *r = s, *w = s;
    while (*r) {
        int h, l;
        if (*r == '%' && (h = fp_hex(r[1])) >= 0 && (l = fp_hex(r[2])) >= 0) {
            *w++ = (char)(h * 16 + l);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* The reference for ids_valid: exactly IDS_LEN lowercase hex digits. */
static void fp_check_id(const char *s)
{
    if (!s)
        return;
    size_t n = strlen(s);
    int want = n == IDS_LEN;
    for (size_t i = 0; want && i < n; i++)
        want = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');
    char *copy = malloc(n + 1); /* exactly the string: ASan sees a read past it */
    if (!copy)
        abort();
    memcpy(copy, s, n + 1);
    if (ids_valid(copy) != want)
        fp_die(want ? "ids_valid refuses a valid id" : "ids_valid accepts a bad id", s, NULL);
    free(copy);
}

/* Does msg name key (its first 64 bytes, which is what messages quote)? */
static int fp_names(const char *msg, const char *key)
{
    size_t n = strlen(key);
    if (n > 64)
        n = 64;
    return memmem(msg, strlen(msg), key, n) != NULL;
}

static void fp_check_fail(int rc, const cls_error *e, const char *what)
{
    if (rc != CLS_EINPUT || e->code != CLS_EINPUT)
        fp_die("a rejection is not CLS_EINPUT", what, e);
    if (!e->msg[0])
        fp_die("a rejection without a message", what, e);
}

/* Feeds the query's pairs to job_params_set as routes_jobs.c's query_param
 * does. Returns the first error's code (err set), or CLS_OK. */
static int fp_query(job_params *p, const char *q, size_t len, cls_error *err)
{
    char *args = malloc(len + 1);
    if (!args)
        abort();
    memcpy(args, q, len);
    args[len] = '\0';
    char *a = args;
    int rc = CLS_OK;
    while (a && *a && rc == CLS_OK) {
        char *eq = strchr(a, '='), *amp = strchr(a, '&');
        char *key = a, *value = NULL;
        if (amp) {
            *amp = '\0';
            a = amp + 1;
        } else {
            a = NULL;
        }
        if (eq && (!amp || eq < amp)) {
            *eq = '\0';
            value = eq + 1;
        }
        fp_unescape(key);
        if (value)
            fp_unescape(value);
        fp_check_id(key);
        fp_check_id(value);
        rc = job_params_set(p, key, value, err);
        if (rc) {
            fp_check_fail(rc, err, key);
            if (!fp_names(err->msg, key))
                fp_die("a rejected parameter is not named in the message", key, err);
        }
    }
    free(args);
    return rc;
}

/* --- the accepted job and its record --- */

static int fp_in(const char *s, size_t cap, const char *const *set)
{
    if (!memchr(s, '\0', cap))
        return 0;
    for (int i = 0; set[i]; i++)
        if (!strcmp(s, set[i]))
            return 1;
    return 0;
}

static void fp_check_accepted(const job_params *p)
{
    static const char *const preconds[] = {"none", "jacobi", "chebyshev", "ic0",
                                           "amg",  "auto",   NULL};
    static const char *const methods[] = {"auto", "cg", "cg-single", "cg-small", "pipecg", NULL};
    static const char *const precisions[] = {"double", "float", "mixed", NULL};
    static const char *const backends[] = {"auto", "opencl", "native", NULL};
    if (!memchr(p->kind, '\0', sizeof p->kind))
        fp_die("kind not terminated", NULL, NULL);
    if (job_params_is_cg(p)) {
        if (!(p->tol > 0.0 && p->tol < 1.0))
            fp_die("an accepted cg job has tol outside (0, 1)", NULL, NULL);
        if (p->maxiter < 0 || p->maxiter > 1000000000LL)
            fp_die("an accepted cg job has maxiter outside [0, 1e9]", NULL, NULL);
        if (!fp_in(p->precond, sizeof p->precond, preconds) ||
            !fp_in(p->method, sizeof p->method, methods) ||
            !fp_in(p->precision, sizeof p->precision, precisions) ||
            !fp_in(p->backend, sizeof p->backend, backends))
            fp_die("an accepted cg job has a choice outside its set", p->precond, NULL);
        if (p->options && json_object_size(p->options) > 0)
            fp_die("an accepted cg job has physics options", NULL, NULL);
        if (strcmp(p->precond, pc_name(p->pc.type)) || p->pc.degree < 1 || p->pc.degree > 32 ||
            p->pc.lanczos < 2 || p->pc.lanczos > 100 || p->pc.sweeps < 0 || p->pc.sweeps > 32 ||
            !(p->pc.shift >= 0.0 && p->pc.shift <= 10.0) || (p->pc.reuse != 0 && p->pc.reuse != 1))
            fp_die("an accepted cg job has preconditioner options outside their ranges",
                   p->precond, NULL);
    } else {
        static const char *const kinds[] = {"springs", "deform", "curvature", "nbody", NULL};
        if (!fp_in(p->kind, sizeof p->kind, kinds))
            fp_die("an accepted job has an unknown kind", p->kind, NULL);
        if (p->options && !json_is_object(p->options))
            fp_die("physics options that are not an object", NULL, NULL);
    }
}

/* "A key given both ways takes the options part's value" (job_params.h):
 * every key of an accepted request's options part has the value the job
 * ends with. cg keys went through job_params_set as text (a string, or a
 * number printed %lld / %.17g), physics keys keep their JSON value. */
static void fp_check_precedence(const job_params *p, const char *text, size_t len)
{
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(o))
        fp_die("an accepted request's options part is not an object", NULL, NULL);
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        const char *s = json_string_value(v);
        int ok;
        if (!strcmp(k, "tol"))
            ok = p->tol == (s ? strtod(s, NULL) : json_number_value(v));
        else if (!strcmp(k, "atol"))
            ok = p->atol == (s ? strtod(s, NULL) : json_number_value(v));
        else if (!strcmp(k, "maxiter"))
            ok = p->maxiter == (s                    ? strtoll(s, NULL, 10)
                                : json_is_integer(v) ? (long long)json_integer_value(v)
                                                     : (long long)json_real_value(v));
        else if (!strcmp(k, "kind"))
            ok = s && !strcmp(p->kind, s);
        else if (pc_options_key(k)) {
            /* the preconditioner's keys (aliases allowed): setting the
             * value again changes nothing */
            char buf[64];
            const char *t = s;
            if (!t && json_is_integer(v)) {
                snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
                t = buf;
            } else if (!t && json_is_real(v)) {
                snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
                t = buf;
            }
            pc_options q = p->pc;
            cls_error e;
            ok = t && pc_options_set(&q, k, t, &e) == CLS_OK && q.type == p->pc.type &&
                 q.degree == p->pc.degree && q.lanczos == p->pc.lanczos &&
                 q.sweeps == p->pc.sweeps && q.shift == p->pc.shift && q.reuse == p->pc.reuse;
        }
        else if (!strcmp(k, "method"))
            ok = s && !strcmp(p->method, s);
        else if (!strcmp(k, "precision"))
            ok = s && !strcmp(p->precision, s);
        else if (!strcmp(k, "backend")) /* a cg parameter, kept apart like method */
            ok = s && !strcmp(p->backend, s);
        else
            ok = p->options && json_equal(json_object_get(p->options, k), v);
        if (!ok)
            fp_die("the options part's value is not the job's", k, NULL);
    }
    json_decref(o);
}

/* Options as to_json sees them: none and {} are the same. */
static int fp_options_equal(const json_t *a, const json_t *b)
{
    if (!a || !b) {
        const json_t *o = a ? a : b;
        return !o || (json_is_object(o) && json_object_size(o) == 0);
    }
    return json_equal(a, b);
}

/* The fields a job of its kind uses. */
static void fp_same_fields(const job_params *a, const job_params *b, const char *what)
{
    if (strcmp(a->kind, b->kind) != 0)
        fp_die("the kind changed", what, NULL);
    if (job_params_is_cg(a)) {
        if (memcmp(&a->tol, &b->tol, sizeof a->tol) != 0 || a->maxiter != b->maxiter ||
            strcmp(a->precond, b->precond) || strcmp(a->method, b->method) ||
            strcmp(a->precision, b->precision) || strcmp(a->backend, b->backend) ||
            a->pc.type != b->pc.type ||
            a->pc.degree != b->pc.degree || a->pc.lanczos != b->pc.lanczos ||
            a->pc.sweeps != b->pc.sweeps || a->pc.shift != b->pc.shift ||
            a->pc.reuse != b->pc.reuse)
            fp_die("cg fields changed", what, NULL);
        if (!fp_options_equal(a->options, b->options))
            fp_die("cg options changed", what, NULL);
    } else if (!fp_options_equal(a->options, b->options)) {
        fp_die("physics options changed", what, NULL);
    }
}

/* to_json, as the store writes it and reads it back, from_json, to_json:
 * the same JSON and the same fields. */
static void fp_round_trip(const job_params *p, const char *what)
{
    json_t *j1 = job_params_to_json(p);
    if (!json_is_object(j1))
        fp_die("to_json did not give an object", what, NULL);
    char *t1 = json_dumps(j1, JSON_COMPACT | JSON_REAL_PRECISION(17)); /* job_store.c's dump */
    if (!t1)
        fp_die("the record does not dump", what, NULL);
    json_error_t je;
    json_t *loaded = json_loads(t1, 0, &je); /* as load_one's json_load_file(path, 0) */
    if (!loaded)
        fp_die("the dumped record does not load", je.text, NULL);
    job_params q;
    cls_error err;
    cls_error_clear(&err);
    if (job_params_from_json(&q, p->kind, loaded, &err) != CLS_OK)
        fp_die("from_json refuses what to_json wrote", what, &err);
    json_t *j2 = job_params_to_json(&q);
    char *t2 = json_dumps(j2, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!json_equal(j1, j2) || !t2 || strcmp(t1, t2) != 0)
        fp_die("the record does not round-trip", t1, NULL);
    fp_same_fields(p, &q, what);
    free(t1);
    free(t2);
    json_decref(j1);
    json_decref(j2);
    json_decref(loaded);
    job_params_free(&q);
}

/* OPTIONS as a stored record's "parameters" (what recovery reads from a
 * job.json that may be damaged): refused with CLS_EINPUT, or stable. */
static void fp_stored(const char *kind, const char *text, size_t len)
{
    json_error_t je;
    json_t *rec = json_loadb(text, len, 0, &je);
    if (!rec)
        return;
    job_params r;
    cls_error err;
    cls_error_clear(&err);
    int rc = job_params_from_json(&r, kind, rec, &err);
    if (rc)
        fp_check_fail(rc, &err, "from_json of a stored record");
    else
        fp_round_trip(&r, "a stored record");
    job_params_free(&r);
    cls_error_clear(&err);
    rc = job_params_from_json(&r, NULL, rec, &err);
    if (rc == CLS_OK)
        fp_die("from_json accepts a record without a kind", NULL, NULL);
    fp_check_fail(rc, &err, "from_json without a kind");
    job_params_free(&r);
    json_decref(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int id_checked;
    if (!id_checked) {
        /* once: getrandom's bytes do not depend on the input */
        char id[IDS_LEN + 1];
        cls_error e;
        if (ids_new(id, &e) != CLS_OK || !ids_valid(id))
            fp_die("ids_new gave an invalid id", id, &e);
        if (ids_valid(NULL))
            fp_die("ids_valid accepts NULL", NULL, NULL);
        id_checked = 1;
    }
    const char *in = (const char *)data;
    const char *nul = memchr(in, '\0', size);
    size_t qlen = nul ? (size_t)(nul - in) : size;
    const char *opts = nul ? nul + 1 : NULL;
    size_t olen = nul ? size - qlen - 1 : 0;

    job_params p;
    cls_error err;
    job_params_init(&p);
    cls_error_clear(&err);
    int rc = fp_query(&p, in, qlen, &err);
    if (rc == CLS_OK && opts) {
        /* an exact-size copy: the options part is not NUL-terminated */
        char *o = malloc(olen ? olen : 1);
        if (!o)
            abort();
        memcpy(o, opts, olen);
        rc = job_params_apply_json(&p, o, olen, &err);
        free(o);
        if (rc) {
            fp_check_fail(rc, &err, "options");
            static const char *const cg_keys[] = {
                "options", "kind:", "keep:", "tol:", "atol:", "maxiter:", "precond:", "precond_",
                "method:", "precision:", "backend:", NULL};
            int named = 0;
            for (int i = 0; cg_keys[i] && !named; i++)
                named = !strncmp(err.msg, cg_keys[i], strlen(cg_keys[i]));
            if (!named)
                fp_die("an options error names neither options nor a key", NULL, &err);
        }
    }
    if (rc == CLS_OK) {
        rc = job_params_finish(&p, &err);
        if (rc) {
            fp_check_fail(rc, &err, "finish");
            /* a physics job given a cg parameter: "atol: applies to kind=cg
             * only", "precond_degree: ..." */
            static const char *const named[] = {"kind:", "keep:", "unknown parameter '", "tol:", "atol:",
                                                "maxiter:", "precond:", "precond_", "method:",
                                                "precision:", "backend:", NULL};
            int ok = 0;
            for (int i = 0; named[i] && !ok; i++)
                ok = !strncmp(err.msg, named[i], strlen(named[i]));
            if (!ok)
                fp_die("a finish error names neither the kind nor a parameter", NULL, &err);
        } else {
            fp_check_accepted(&p);
            if (opts)
                fp_check_precedence(&p, opts, olen);
            fp_round_trip(&p, "an accepted request");
        }
    }
    if (opts)
        fp_stored(p.kind, opts, olen);
    job_params_free(&p);
    return 0;
}
