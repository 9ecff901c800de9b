/*
 * job_params.h: what a client asks of a job, parsed and validated from the
 * request text: query parameters (?kind=cg&tol=1e-10...) and the optional
 * JSON `options` part. Pure functions over strings (no HTTP, no files), so
 * the fuzz targets can drive them, and every rejection is CLS_EINPUT with a
 * message naming the parameter, which the server answers as 400.
 *
 * cg jobs take tol, atol, maxiter, precond (and the precond_* parameters,
 * read by solver/pc_options.h's pc_options_set, as the command line's
 * --precond options are), method, precision and backend (the method's and the
 * precision's names parsed by solver/names.h, the solver's own table, so
 * every name `clsolve solve` accepts is accepted here); physics jobs
 * (springs, deform, curvature, nbody) take any options, passed to the
 * physics driver as one JSON object (query values that read as numbers or
 * booleans become JSON numbers or booleans).
 *
 * It is the one place a solve's parameters are checked: `clsolve solve`
 * and `clsolve submit` read their --tol, --atol, --maxiter, --method,
 * --precision and --precond options into a job_params through
 * job_params_set too (cli/clsolve.c's cli_solve_param), so the command
 * line and the daemon accept the same values with the same messages; each
 * caller only frames the failure (exit 2 with "--KEY: ...", or a 400).
 *
 * keep (until-fetched | default) applies to every kind: it is the store's
 * business (retention), not the solver's, so it is taken out before a
 * physics job's options are gathered and is not part of "parameters".
 */
#ifndef CLS_NET_JOB_PARAMS_H
#define CLS_NET_JOB_PARAMS_H

#include <jansson.h>
#include <stdint.h>

#include "../common/error.h"
#include "../solver/pc/pc_options.h"
#include "../solver/solve.h"

typedef struct job_params {
    char kind[16];       /* "cg" or a physics kind */
    int kind_set;
    double tol;          /* (0, 1) */
    double atol;         /* >= 0: stop when ||r|| <= max(tol ||b||, atol) */
    int64_t maxiter;     /* 0: the solver's default */
    char precond[16];    /* the preconditioner's canonical name (pc_name) */
    pc_options pc;       /* its type and parameters, read by pc_options_set */
    char method[16];     /* cg | pipecg */
    char precision[16];  /* double | float | mixed */
    char backend[8];     /* auto | opencl | native (a one-part CG on a CPU device) */
    json_t *options;     /* physics options (an object), owned */
    char cg_given[12];   /* the first cg-only parameter the request gave ("" none):
                          * a physics job refuses it in job_params_finish */
    int keep_until_fetched; /* keep=until-fetched (any kind): retention spares the
                             * finished job until its result was fetched once; stored
                             * in the record's "keep", not in "parameters" */
} job_params;

void job_params_init(job_params *p);
void job_params_free(job_params *p);

/* One query parameter. */
int job_params_set(job_params *p, const char *key, const char *value, cls_error *err);

/* The `options` part: a JSON object of at most len bytes. For cg its keys
 * are the query parameters' (numbers may be JSON numbers); for physics it
 * becomes the options object. A key given both ways takes the options
 * part's value (it is applied after the query). */
int job_params_apply_json(job_params *p, const char *text, size_t len, cls_error *err);

/* Checks the kind once all parameters are in: cg or a known physics kind;
 * a physics job given a cg-only parameter (tol, atol, maxiter, precond,
 * method, precision) is refused rather than run with the parameter ignored. */
int job_params_finish(job_params *p, cls_error *err);

int job_params_is_cg(const job_params *p);

/* A cg job's parameters as the solver's options: tol, atol, maxiter,
 * method, precision and the preconditioner's type (its parameters are
 * p->pc); o's other members are left as they are. CLS_EUSAGE if a name
 * is unknown, which job_params_set would have refused already. */
int job_params_solve_options(const job_params *p, solve_options *o, cls_error *err);

/* The parameters as the JSON object a job record stores (new reference). */
json_t *job_params_to_json(const job_params *p);
/* And back, from a stored record (the store's recovery). */
int job_params_from_json(job_params *p, const char *kind, json_t *params, cls_error *err);

#endif
