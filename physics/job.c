/*
 * job.c: dispatch of a physics job to its kind, and the stop poll its step
 * loops call (see job.h).
 */
#include "job.h"

#include <string.h>

static const struct {
    const char *kind;
    int (*run)(const char *, const char *, const char *, const char *, char **, cls_error *);
} physics_kinds[] = {
    {"springs", springs_job_run},
    {"deform", deform_job_run},
    {"curvature", curvature_job_run},
    {"nbody", nbody_job_run},
};

static _Thread_local const physics_ctl *physics_cur;

int physics_should_stop(void)
{
    const physics_ctl *c = physics_cur;
    return c && c->stop && c->stop(c->ctx);
}

int physics_stop_armed(void)
{
    return physics_cur && physics_cur->stop;
}

int physics_job_run(const char *kind, const char *options_json, const char *input_path,
                    const char *out_dir, const char *device, const physics_ctl *ctl,
                    char **result_json, cls_error *err)
{
    for (size_t i = 0; i < sizeof physics_kinds / sizeof physics_kinds[0]; i++)
        if (!strcmp(kind, physics_kinds[i].kind)) {
            physics_cur = ctl;
            int rc =
                physics_kinds[i].run(options_json, input_path, out_dir, device, result_json, err);
            physics_cur = NULL;
            return rc;
        }
    return cls_fail(err, CLS_EUSAGE,
                    "unknown job kind '%s' (known: cg, springs, deform, curvature, nbody)", kind);
}
