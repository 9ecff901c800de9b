/*
 * preparse.h: the matrix of an upload parsed while it arrives (issue 23,
 * item 1), so that a job's parse ends about when its last byte lands.
 *
 * The upload (upload.c) streams the body to its file as before, durably.
 * Once a plain-text Matrix Market matrix part has passed PREPARSE_MIN_BYTES
 * and its header check, a thread runs the ordinary reader (mm_read_csr) on
 * the same file as it grows: at the written bytes' end the reader waits
 * (mm_read_options.grow) until the upload writes more or ends. The reader
 * works in 64 MiB blocks on every core, so it keeps up with the network
 * and the last block is parsed while the upload's fsync runs.
 *
 * The result waits in a small registry (PREPARSE_MAX entries), keyed by the
 * file's device and inode: the job's directory is renamed when the job is
 * accepted, the inode stays. The job's read (dsolve_options.take_matrix)
 * asks preparse_take for its path; a parse that failed, a file that
 * changed (size, inode) or one never asked for is not used: the job reads
 * the file itself as before, and its errors are that read's. Entries that
 * nobody takes (a refused or cancelled job) are freed PREPARSE_TTL_S after
 * their upload ended. Memory: a preparse reads with a quarter of the
 * available memory at most, and a new one starts only while fewer than
 * PREPARSE_MAX are held.
 *
 * Rank 0 preparses only when asked (`clsolved --parse-while-uploading on`,
 * preparse_enable). Under mpirun the job then takes the parsed matrix on
 * rank 0 and sends the other ranks their rows (dsolve_input), rather than
 * every rank reading its byte range of the file after the upload
 * (dinput_ranged.c), which is what happens without the option. It is
 * off by default because it did not pay on the host measured: on one H200
 * host (16 cores) it took 0.08 s off the job's parse of a 589 MB upload
 * (0.26-0.27 s left, mostly the CSR assembly after the last byte) but
 * slowed the receive about as much (docs/benchmarks.md). The reader's
 * output grows with the file (realloc, no huge-page hints: with them the
 * growth took 1.0 s), and the parse leaves two cores to the receive.
 */
#ifndef CLS_NET_PREPARSE_H
#define CLS_NET_PREPARSE_H

#include <stdint.h>

#include "../matrices/mm.h"

#define PREPARSE_MIN_BYTES ((uint64_t)4 << 20)
#define PREPARSE_MAX 2
#define PREPARSE_TTL_S 300

typedef struct preparse preparse;

/* On (--parse-while-uploading on) or off (the
 * default). CLSOLVE_PREPARSE=0 or 1 in the environment overrides `on`
 * (benchmarks compare the two in one daemon build). */
void preparse_enable(int on);
int preparse_enabled(void);

/* Starts parsing path, whose first `bytes` are written; NULL when off,
 * full, or the thread cannot start. */
preparse *preparse_start(const char *path, uint64_t bytes);
/* The upload has written `bytes` in all. */
void preparse_feed(preparse *p, uint64_t bytes);
/* The upload wrote its last byte (complete) or was abandoned; p is the
 * registry's from now on. Returns the parse's id, for preparse_forget. */
uint64_t preparse_end(preparse *p, int complete);
/* The upload's job will not run (refused after the upload, discarded):
 * its parse is freed now. 0 or an unknown id: nothing. */
void preparse_forget(uint64_t id);

/* The matrix parsed from path's file while it arrived: 1 (A, h, st
 * filled; A is the caller's) after waiting for the parse to end, 0 when
 * there is none for this file or it failed. */
int preparse_take(const char *path, csr_matrix *A, mm_header *h, mm_read_stats *st);

/* Frees every entry (at exit; tests). */
void preparse_clear(void);

#endif
