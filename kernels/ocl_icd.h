/*
 * ocl_icd.h: which OpenCL drivers (ICDs) the loader opens in a process that
 * asked for a GPU.
 *
 * The ICD loader opens every driver named in its vendors directory
 * (/etc/OpenCL/vendors) at the first OpenCL call, and asks each for its
 * devices to sort the platforms. On a GPU host that also has PoCL, that
 * loads PoCL, LLVM and libclang and starts PoCL's CPU device beside the
 * GPU driver: on one H200 host the driver's start (platforms, device,
 * context) took 0.30 s instead of 0.26 s median, and the read beside it
 * was slower, though `--device gpu` never uses the CPU device.
 *
 * ocl_icd_narrow("gpu") therefore points the loader at the one driver left
 * once the CPU-only runtimes (PoCL, Intel's CPU runtime) are dropped:
 * OCL_ICD_VENDORS names its .icd file (ocl-icd loads only that ICD), and
 * OCL_ICD_FILENAMES its library, added to the user's list (the Khronos
 * loader, which reads OCL_ICD_VENDORS as a directory only). It changes
 * nothing when:
 *  - the device asked for is not "gpu" (auto falls back to a CPU device
 *    when no GPU answers; an index counts every device);
 *  - the user set OCL_ICD_VENDORS, or OCL_ICD_FILENAMES naming a CPU-only
 *    runtime (their choice stands);
 *  - CLSOLVE_ICD_ALL=1 (keeps every driver: a PoCL built with a GPU
 *    back end, or a comparison);
 *  - no CPU-only runtime is listed, or more or fewer than one other
 *    driver is (several would need a directory of their own).
 * It runs before any thread starts (setenv is not safe beside getenv), and
 * child processes inherit the choice, so a device index they are given
 * counts the same devices.
 */
#ifndef CLS_KERNELS_OCL_ICD_H
#define CLS_KERNELS_OCL_ICD_H

#include <stddef.h>

typedef struct {
    char icd[4096]; /* the .icd file kept */
    char lib[4096]; /* the library it names */
    int dropped;    /* CPU-only runtimes left out */
} ocl_icd_choice;

/* Reads dir's *.icd files. Returns 1 and fills c when at least one names a
 * CPU-only runtime and exactly one other remains; 0 otherwise. */
int ocl_icd_gpu_only(const char *dir, ocl_icd_choice *c);

/* 1 when lib (an .icd file's library name or path) is a CPU-only runtime. */
int ocl_icd_cpu_only(const char *lib);

/* For device spec "gpu": narrows the loader as above and returns 1, with
 * the kept .icd in kept (when kept is not NULL) and in CLSOLVE_TRACE; 0
 * when it changed nothing. */
int ocl_icd_narrow(const char *spec, char *kept, size_t cap);

/* " (--device gpu opened only ...)" for an error about missing platforms
 * or devices when the loader was narrowed; "" otherwise. */
const char *ocl_icd_hint(void);

/* --device's value in argv[first..] as an option parser reads it: the
 * last "--device V" or "--device=V" before "--"; NULL when none. (An
 * option's value that is itself "--device", as in `-o --device`, would
 * be misread: the commands' own parsers run later, after threads.) */
const char *ocl_icd_device_arg(int argc, char **argv, int first);

#endif
