/*
 * ids.h: job identifiers. An id is 128 random bits from getrandom(2),
 * written as 32 lowercase hex digits. ids_valid is the gate every request
 * path goes through before any file name is built from it: nothing but a
 * string of exactly 32 [0-9a-f] characters ever reaches the file system.
 */
#ifndef CLS_NET_IDS_H
#define CLS_NET_IDS_H

#include "../common/error.h"

#define IDS_LEN 32

/* Fills out (IDS_LEN + 1 bytes) with a new id. Fails only when the kernel's
 * random source fails. */
int ids_new(char out[IDS_LEN + 1], cls_error *err);

/* 1 when s is exactly IDS_LEN lowercase hex digits, 0 otherwise. */
int ids_valid(const char *s);

#endif
