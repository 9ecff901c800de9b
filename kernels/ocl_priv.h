/*
 * ocl_priv.h: what ocl.c (contexts) and ocl_build.c (programs) share: the
 * in-memory programs of the process's shared contexts.
 */
#ifndef CLS_KERNELS_OCL_PRIV_H
#define CLS_KERNELS_OCL_PRIV_H

#include <stdint.h>

#include "ocl.h"

/* A program already built in ctx's shared context for this key and these
 * options: a new reference, or NULL (always NULL for an unshared ctx). */
cl_program ocl_shared_program_find(const ocl_ctx *ctx, uint64_t key, const char *options);
/* Keeps p (a reference of its own) for later ocl_shared_program_find calls. */
void ocl_shared_program_keep(const ocl_ctx *ctx, uint64_t key, const char *options, cl_program p);

#endif
