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

/* Who may stop a running job, and how (the daemon: DELETE, and a drain
 * that ran out of time; issue 27, item 1: a physics job used to run to its
 * last step whatever was asked). The kinds' step loops poll
 * physics_should_stop() at their batch boundaries, at least every quarter
 * of a second of device work, and end with CLS_EOTHER "stopped at step N"
 * when it says so; the caller knows why it asked. NULL: nobody stops it
 * (the local commands). The poll reads a thread-local pointer set for the
 * run, so the kinds' own signatures do not carry it. */
typedef struct physics_ctl {
    int (*stop)(void *ctx); /* 1: stop now */
    void *ctx;
} physics_ctl;

/* 1 when the job running on this thread is asked to stop. */
int physics_should_stop(void);
/* 1 when someone may ask (a physics_ctl is set): a loop that queues work
 * ahead of the device then paces it, so that a stop takes effect within
 * about PHYSICS_POLL_S of device time, not after everything queued. */
int physics_stop_armed(void);
#define PHYSICS_POLL_S 0.1

/* kind: "springs", "deform", "curvature" or "nbody" (the daemon's
 * job_params.c checks requests against the same four names); device:
 * "auto", "cpu", "gpu" or an index. ctl may be NULL. */
int physics_job_run(const char *kind, const char *options_json, const char *input_path,
                    const char *out_dir, const char *device, const physics_ctl *ctl,
                    char **result_json, cls_error *err);

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
