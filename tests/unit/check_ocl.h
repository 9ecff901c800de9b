/*
 * check_ocl.h: the OpenCL device a C unit test runs on: "auto" (PoCL's CPU
 * device in CI, the GPU on a GPU machine). A test that needs one and finds
 * none fails with the reason; it is not skipped.
 */
#ifndef CLS_TESTS_CHECK_OCL_H
#define CLS_TESTS_CHECK_OCL_H

#include "check.h"
#include "kernels/ocl.h"

/* 0 with *dev picked and *ctx made, else -1 after a failed check. */
static inline int check_ocl_open(ocl_device *dev, ocl_ctx *ctx)
{
    cls_error err;
    if (ocl_pick_device("auto", dev, &err) || ocl_ctx_create(dev, ctx, &err)) {
        CHECK_MSG(0, "no OpenCL device: %s", err.msg);
        return -1;
    }
    return 0;
}

#endif
