/*
 * bigmem.h: large arrays written once by many threads (the reader's
 * triplets, the CSR they become, the entries routed between ranks).
 * Transparent huge pages cut their page faults 512-fold where the system
 * allows it: below 8 MB the hint is not given.
 */
#ifndef CLS_COMMON_BIGMEM_H
#define CLS_COMMON_BIGMEM_H

#include <stddef.h>

/* Asks for huge pages over the whole pages inside [p, p + bytes). */
void cls_hint_huge(void *p, size_t bytes);
/* malloc / calloc (of at least one byte) with the hint */
void *cls_big_malloc(size_t bytes);
void *cls_big_calloc(size_t bytes);

#endif
