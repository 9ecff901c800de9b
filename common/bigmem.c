/*
 * bigmem.c: huge-page hints for large arrays (bigmem.h).
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* madvise */
#endif
#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

void cls_hint_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t page = 4096;
    if (!p || bytes < ((size_t)8 << 20))
        return;
    uintptr_t b = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t e = ((uintptr_t)p + bytes) & ~(page - 1);
    if (e > b)
        madvise((void *)b, e - b, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

void *cls_big_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    cls_hint_huge(p, bytes);
    return p;
}

void *cls_big_calloc(size_t bytes)
{
    void *p = calloc(bytes ? bytes : 1, 1);
    cls_hint_huge(p, bytes);
    return p;
}
