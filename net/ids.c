/*
 * ids.c: random job ids (see ids.h). getrandom(2) blocks only until the
 * kernel's pool is first initialised, which a running system has long
 * passed; short reads and EINTR are retried.
 */
#include "ids.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

int ids_new(char out[IDS_LEN + 1], cls_error *err)
{
    unsigned char raw[IDS_LEN / 2];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return cls_fail(err, CLS_EOTHER, "getrandom failed: %s", strerror(errno));
        }
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[IDS_LEN] = '\0';
    return CLS_OK;
}

int ids_valid(const char *s)
{
    if (!s)
        return 0;
    for (int i = 0; i < IDS_LEN; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
    }
    return s[IDS_LEN] == '\0';
}
