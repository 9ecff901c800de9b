/*
 * test_dev.h: the opening every device test of double-precision set-ups
 * shares (test_amg_dsetup.c, test_ic0s.c, test_sparse.c): the default
 * OpenCL device (PoCL's CPU device in CI), skipped (exit 77) without one or
 * without fp64, its context, and a double-precision la context.
 */
#ifndef CLS_TEST_DEV_H
#define CLS_TEST_DEV_H

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "kernels/la.h"

/* opens the device into *ocl and *la (double); exits 77 (skip) where the
 * tests cannot run, 1 where the device fails to open */
static void test_dev_open(ocl_ctx *ocl, la_ctx *la)
{
    cls_error e;
    ocl_device dev;
    cls_error_clear(&e);
    if (ocl_pick_device("auto", &dev, &e))
        CHECK_SKIP("no OpenCL device: %s", e.msg);
    if (!dev.fp64)
        CHECK_SKIP("device %s has no double precision", dev.name);
    if (ocl_ctx_create(&dev, ocl, &e)) {
        fprintf(stderr, "ocl_ctx_create: %s\n", e.msg);
        exit(1);
    }
    printf("device: %s %s\n", ocl_type_name(dev.type), dev.name);
    if (la_init(la, ocl, LA_DOUBLE, NULL, &e)) {
        fprintf(stderr, "la_init: %s\n", e.msg);
        exit(1);
    }
}

#endif
