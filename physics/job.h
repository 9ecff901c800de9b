/*
 * job.h: the physics kinds as jobs, one entry point for the daemon and the
 * local commands alike: a kind name, its options as a JSON object, an input
 * file (mesh, bodies, basis, ...; may be NULL when the options generate the
 * input), and a directory for the outputs. The result is a JSON object (a
 * malloc'ed string) with the summary the job record shows and the names of
 * the files written into out_dir.
 */
#ifndef CLS_PHYSICS_JOB_H
#define CLS_PHYSICS_JOB_H

#include "../common/error.h"

/* kind: "springs", "deform", "curvature" or "nbody" (the daemon's
 * job_params.c checks requests against the same four names); device:
 * "auto", "cpu", "gpu" or an index. */
int physics_job_run(const char *kind, const char *options_json, const char *input_path,
                    const char *out_dir, const char *device, char **result_json,
                    cls_error *err);

/* One per kind, each in physics/<kind>.c. */
int springs_job_run(const char *options_json, const char *input_path, const char *out_dir,
                    const char *device, char **result_json, cls_error *err);
int nbody_job_run(const char *options_json, const char *input_path, const char *out_dir,
                  const char *device, char **result_json, cls_error *err);
int curvature_job_run(const char *options_json, const char *input_path, const char *out_dir,
                      const char *device, char **result_json, cls_error *err);
int deform_job_run(const char *options_json, const char *input_path, const char *out_dir,
                   const char *device, char **result_json, cls_error *err);

#endif
