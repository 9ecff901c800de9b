/*
 * fileio.h: the durable-file primitives the job store is built on.
 *
 * A state file is never rewritten in place: fileio_write_durable writes a
 * temporary file beside it, fsyncs it, renames it over the target and
 * fsyncs the directory, so after a crash at any instant the file holds
 * either the old or the new contents, never a mixture. fileio_sync_path
 * fsyncs a file (or directory) that was written by other means, so a job
 * is only acknowledged once everything it needs is on disk.
 */
#ifndef CLS_NET_FILEIO_H
#define CLS_NET_FILEIO_H

#include <stddef.h>
#include <stdint.h>

#include "../common/error.h"

int fileio_write_durable(const char *path, const void *data, size_t len, cls_error *err);
/* zlib's CRC-32 of len bytes, or of a file's first len bytes (-1 on a read
 * error), on the host's cores: a CRC per range, combined in order
 * (crc32_combine), the same value as one pass; one core took 40-60 ms of
 * a 64 MB solution's write, and again of its first download */
uint32_t fileio_crc32(const void *data, size_t len);
int fileio_crc32_fd(int fd, int64_t len, uint32_t *out);
int fileio_sync_path(const char *path, cls_error *err);
/* fsyncs the directory holding path (the parent of a renamed entry). */
int fileio_sync_parent(const char *path, cls_error *err);
/* The group commit's two halves: a file written (created or truncated)
 * without an fsync, for a directory not yet visible; then every dirty
 * page and entry of the file system holding path made durable at once
 * (syncfs(2): one flush for many files, where an fsync each costs a
 * journal commit each). */
int fileio_write_plain(const char *path, const void *data, size_t len, cls_error *err);
int fileio_sync_fs(const char *path, cls_error *err);
int fileio_mkdir(const char *path, cls_error *err); /* mkdir, EEXIST is fine */
/* Removes a directory and the plain files in it (one level: the job
 * directories hold no subdirectories except out/, which is removed too). */
int fileio_remove_tree(const char *path, cls_error *err);
/* Reads a whole small file (at most max bytes) into a malloc'ed,
 * NUL-terminated buffer. */
int fileio_read_small(const char *path, size_t max, char **data, size_t *len, cls_error *err);

#endif
