/*
 * job_files.h: the rule that every file a job reads is uploaded with it.
 *
 * A job submitted over HTTP may read only what arrived in its upload
 * (DATA/jobs/ID/...). Options that name a path would make the daemon open a
 * file on its own host, as its own user, for any client holding the token:
 * learn whether a path exists, read it, and see parts of it in the job's
 * error message. job_files_check refuses such options; the routes call it
 * at submission (400 bad-parameter, nothing stored) and the scheduler again
 * before a physics job runs (a record queued by an older daemon fails with
 * bad_request instead of reading the path).
 *
 * Today only the deform kind has path options: "mesh", "domains" and
 * "q_file" (physics/deform.c's deform_job_run). The command line
 * (`clsolve deform --mesh --domains --q`) reads local files and is not
 * concerned.
 *
 * It also holds the order a job's output files are listed in
 * (job_files_natural_cmp): frames NAME_NNNNNN.EXT by their step, whatever
 * order the directory returns them in.
 */
#ifndef CLS_NET_JOB_FILES_H
#define CLS_NET_JOB_FILES_H

#include <jansson.h>

#include "../common/error.h"

/* options: the job's options object (may be NULL). CLS_EUSAGE, with a
 * message naming the option and what to do instead, when an option of
 * kind names a file on the daemon's host; CLS_OK otherwise. */
int job_files_check(const char *kind, const json_t *options, cls_error *err);

/* Natural order of two file names, for GET /v1/jobs/ID/files: runs of
 * digits compare as numbers (frame_50 before frame_100, whatever their
 * zero padding; equal numbers with fewer leading zeros first), everything
 * else byte by byte. A total order (equal only for equal strings), so the
 * list is the same at every request. <0, 0 or >0 as strcmp. */
int job_files_natural_cmp(const char *a, const char *b);

#endif
