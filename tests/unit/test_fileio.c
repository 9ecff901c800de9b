/*
 * test_fileio.c: net/fileio.c's CRC-32 on the host's cores. A CRC per
 * range combined in order must equal zlib's one pass, for lengths around
 * the 4 MiB range grain and far past it, from memory and from a file; a
 * file shorter than the length asked for is a read error, not a CRC.
 * The bytes are fresh random ones each run (the seed is printed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "net/fileio.h"

int main(void)
{
    check_seed("test_fileio");
    const size_t MiB = (size_t)1 << 20;
    const size_t lens[] = {0, 1, 4 * MiB - 1, 4 * MiB, 4 * MiB + 1, 13 * MiB + 7, 41 * MiB + 3};
    const size_t maxlen = 41 * MiB + 3;
    unsigned char *buf = malloc(maxlen);
    CHECK(buf != NULL);
    if (!buf)
        return check_done("test_fileio");
    for (size_t i = 0; i < maxlen; i++)
        buf[i] = (unsigned char)(check_rand() >> 24);
    char path[] = "/tmp/test_fileio_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(fd >= 0 && write(fd, buf, maxlen) == (ssize_t)maxlen);
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        const size_t n = lens[k];
        uint32_t want = (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), buf, n);
        uint32_t got = fileio_crc32(buf, n);
        CHECK_MSG(got == want, "memory, %zu bytes: %08x, zlib %08x", n, (unsigned)got,
                  (unsigned)want);
        uint32_t gotf = 0;
        int rc = fileio_crc32_fd(fd, (int64_t)n, &gotf);
        CHECK_MSG(rc == 0 && gotf == want, "file, %zu bytes: rc %d, %08x, zlib %08x", n, rc,
                  (unsigned)gotf, (unsigned)want);
    }
    /* one flipped bit anywhere changes it */
    size_t at = (size_t)(check_rand() % maxlen);
    buf[at] ^= 1;
    uint32_t a = fileio_crc32(buf, maxlen), b = 0;
    CHECK(fileio_crc32_fd(fd, (int64_t)maxlen, &b) == 0 && a != b);
    /* a file shorter than asked: a read error */
    uint32_t c = 0;
    CHECK(fileio_crc32_fd(fd, (int64_t)maxlen + 1, &c) != 0);
    close(fd);
    unlink(path);
    free(buf);
    return check_done("test_fileio");
}
