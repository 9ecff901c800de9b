/*
 * csr_bin.h: the binary CSR form of a sparse matrix, for clients that hold
 * one in memory (the Python client sends a scipy matrix so): no text to
 * write, parse or measure, one read of the arrays as they are.
 *
 * Layout, every number little-endian:
 *   bytes 0..7     the magic "CLSCSR01"
 *   8, 16, 24      int64 rows, columns, stored entries (nnz)
 *   32             int64 row pointers, rows + 1 of them (0, ..., nnz)
 *   then           int32 column indices, nnz of them, 0-based
 *   then           float64 values, nnz of them
 * so a file is exactly 32 + 8 (rows + 1) + 12 nnz bytes. Every entry is
 * stored (no symmetric half); within a row the columns strictly increase
 * (scipy's canonical format: sorted, no duplicates).
 *
 * The reader checks what a Matrix Market file's reader checks of its
 * entries, against the bytes: the size against the header, the row
 * pointers (from 0, never decreasing, ending at nnz), every column in
 * range and increasing within its row; a failure names the file and the
 * row (or the byte offset for the header). mm_read_csr and mm_read_header
 * take such a file wherever they take a .mtx (the magic decides).
 */
#ifndef CLS_MATRICES_CSR_BIN_H
#define CLS_MATRICES_CSR_BIN_H

#include <stddef.h>
#include <stdint.h>

#include "../common/error.h"
#include "csr.h"
#include "mm_header.h"

#define CSR_BIN_MAGIC "CLSCSR01"
#define CSR_BIN_HEADER 32

/* 1 when the first n bytes of buf are (a prefix of) the magic: n >= 8
 * decides, fewer say it may still be */
int csr_bin_is_magic(const unsigned char *buf, size_t n);
/* The header's sizes (buf: CSR_BIN_HEADER bytes) as an mm_header
 * (coordinate, real, general; entries = nnz) and the file's exact size;
 * CLS_EINPUT naming `name` when the sizes cannot be a matrix. */
int csr_bin_header(const unsigned char *buf, const char *name, mm_header *h, uint64_t *bytes,
                   cls_error *err);
/* Reads and checks the file (max_memory: the arrays' bytes allowed, 0:
 * no limit; checked against the header before anything is allocated, and
 * the header against the file's size). */
int csr_bin_read(const char *path, uint64_t max_memory, csr_matrix *A, mm_header *h,
                 cls_error *err);
/* Ranged reads (several ranks, each its own rows): the header and every
 * row pointer, checked (from 0, never decreasing, ending at nnz; *rowptr
 * malloc'ed); then rows [r0, r1) alone (B: its row pointers from 0, the
 * columns and values read from their offsets), each row checked as
 * csr_bin_read checks it, the message naming the row of the file. */
int csr_bin_read_rowptr(const char *path, mm_header *h, int64_t **rowptr, cls_error *err);
int csr_bin_read_rows(const char *path, const mm_header *h, const int64_t *rowptr, int64_t r0,
                      int64_t r1, csr_matrix *B, cls_error *err);
/* Writes A in the form (tests, tools). */
int csr_bin_write(const char *path, const csr_matrix *A, cls_error *err);

#endif
