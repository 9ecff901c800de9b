/*
 * numfmt.c: shortest round-trip doubles, and %.17g without printf (see
 * numfmt.h).
 */
#include "numfmt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 5^k for k = 0..27 (5^27 < 2^63) */
static const uint64_t numfmt_pow5[28] = {
    1ull,
    5ull,
    25ull,
    125ull,
    625ull,
    3125ull,
    15625ull,
    78125ull,
    390625ull,
    1953125ull,
    9765625ull,
    48828125ull,
    244140625ull,
    1220703125ull,
    6103515625ull,
    30517578125ull,
    152587890625ull,
    762939453125ull,
    3814697265625ull,
    19073486328125ull,
    95367431640625ull,
    476837158203125ull,
    2384185791015625ull,
    11920928955078125ull,
    59604644775390625ull,
    298023223876953125ull,
    1490116119384765625ull,
    7450580596923828125ull,
};

static const char numfmt_digits2[201] = "00010203040506070809101112131415161718192021222324"
                                        "25262728293031323334353637383940414243444546474849"
                                        "50515253545556575859606162636465666768697071727374"
                                        "75767778798081828384858687888990919293949596979899";

#define NUMFMT_1E16 10000000000000000ull
#define NUMFMT_1E17 100000000000000000ull

char *cls_fmt_g17(char *p, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int be = (int)((bits >> 52) & 0x7ff);
    if (be == 0 || be == 0x7ff)
        goto slow; /* zero, subnormal, Inf, NaN */
    uint64_t m = (bits & ((1ull << 52) - 1)) | (1ull << 52);
    int e2 = be - 1075; /* |v| = m 2^e2, m in [2^52, 2^53) */
    /* E = floor(log10|v|) is this or one more: |v| >= 2^(e2+52) */
    int E = (int)floor((double)(e2 + 52) * 0.30102999566398120);
    uint64_t q = 0;
    for (int tries = 0;; tries++) {
        int k = 16 - E; /* |v| 10^k = m 5^k 2^(e2+k), in [1e16, 1e17) when E is right */
        if (k < 0 || k > 27 || tries > 2)
            goto slow;
        unsigned __int128 t = (unsigned __int128)m * numfmt_pow5[k]; /* < 2^116, exact */
        int s = e2 + k;
        unsigned __int128 rem = 0, half = 0;
        if (s >= 0) {
            if (s > 8)
                goto slow; /* past 2^61: E cannot be right (never happens) */
            q = (uint64_t)(t << s);
        } else {
            int r = -s;
            if (r >= 120)
                goto slow;
            q = (uint64_t)(t >> r); /* below 2^61 once E is within one */
            rem = t & (((unsigned __int128)1 << r) - 1);
            half = (unsigned __int128)1 << (r - 1);
        }
        if (q >= NUMFMT_1E17) {
            E++;
            continue;
        }
        if (q < NUMFMT_1E16) {
            E--;
            continue;
        }
        if (rem > half || (rem == half && half && (q & 1)))
            q++; /* to nearest, ties to even: glibc rounds the exact value so */
        if (q == NUMFMT_1E17) {
            q = NUMFMT_1E16;
            E++;
        }
        break;
    }
    if (E >= 17)
        goto slow; /* %g's exponent form for a value rounded up to 1e17 */
    char d[17];
    uint32_t hi = (uint32_t)(q / 100000000u), lo = (uint32_t)(q % 100000000u);
    for (int i = 16; i >= 9; i -= 2, lo /= 100) /* two digits a step, in 32 bits */
        memcpy(d + i - 1, numfmt_digits2 + 2 * (lo % 100), 2);
    for (int i = 8; i >= 1; i -= 2, hi /= 100)
        memcpy(d + i - 1, numfmt_digits2 + 2 * (hi % 100), 2);
    d[0] = (char)('0' + hi); /* hi was 9 digits, the first one left */
    int nd = 17;
    while (nd > 1 && d[nd - 1] == '0')
        nd--; /* %g drops trailing zeros */
    if (bits >> 63)
        *p++ = '-';
    if (E < -4) { /* d.ddde-XX, with E >= -11 here */
        *p++ = d[0];
        if (nd > 1) {
            *p++ = '.';
            memcpy(p, d + 1, (size_t)nd - 1);
            p += nd - 1;
        }
        *p++ = 'e';
        *p++ = '-';
        *p++ = (char)('0' + (-E) / 10);
        *p++ = (char)('0' + (-E) % 10);
    } else if (E < 0) { /* 0.000ddd */
        *p++ = '0';
        *p++ = '.';
        for (int i = 0; i < -E - 1; i++)
            *p++ = '0';
        memcpy(p, d, (size_t)nd);
        p += nd;
    } else { /* ddd.ddd */
        memcpy(p, d, (size_t)E + 1);
        p += E + 1;
        if (nd > E + 1) {
            *p++ = '.';
            memcpy(p, d + E + 1, (size_t)(nd - E - 1));
            p += nd - E - 1;
        }
    }
    return p;
slow:
    return p + snprintf(p, 25, "%.17g", v);
}

int cls_fmt_double(char *buf, size_t cap, double v)
{
    int n = 0;
    if (!isfinite(v))
        return snprintf(buf, cap, "%g", v);
    for (int prec = 15; prec <= 17; prec++) {
        char t[40];
        snprintf(t, sizeof t, "%.*g", prec, v);
        if (prec == 17 || strtod(t, NULL) == v) {
            n = snprintf(buf, cap, "%s", t);
            break;
        }
    }
    return n;
}

/* The significant digits of a number's text (its mantissa's digits after
 * any leading zeros). */
static int numfmt_sig_digits(const char *r, size_t n)
{
    int d = 0, lead = 1;
    for (size_t i = 0; i < n && r[i] != 'e' && r[i] != 'E'; i++) {
        if (r[i] < '0' || r[i] > '9')
            continue;
        if (lead && r[i] == '0')
            continue;
        lead = 0;
        d++;
    }
    return d;
}

char *cls_json_shorten(char *s)
{
    if (!s)
        return s;
    char *r = s, *w = s;
    int in_str = 0;
    while (*r) {
        char c = *r;
        if (in_str) {
            *w++ = *r++;
            if (c == '\\' && *r)
                *w++ = *r++; /* an escaped quote does not end the string */
            else if (c == '"')
                in_str = 0;
            continue;
        }
        if (c == '"') {
            in_str = 1;
            *w++ = *r++;
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            size_t n = strspn(r, "0123456789+-.eE");
            int real = memchr(r, '.', n) || memchr(r, 'e', n) || memchr(r, 'E', n);
            char t[40];
            /* 15 significant digits or fewer: already what %.15g writes (no
             * shorter form reads back the same), as in every real a text
             * shortened once holds: a reply built from a stored record
             * passes here twice, and the residual history of a long solve
             * (thousands of reals, polled by the dashboard) cost three
             * printf/strtod rounds a number each time */
            if (real && n < sizeof t && numfmt_sig_digits(r, n) > 15) {
                memcpy(t, r, n);
                t[n] = '\0';
                char *end;
                double v = strtod(t, &end);
                if (end == t + n && isfinite(v)) {
                    char f[48];
                    int m = cls_fmt_double(f, sizeof f - 2, v);
                    if (!strpbrk(f, ".eE")) /* %g dropped the point: JSON would read an integer */
                        memcpy(f + m, ".0", 3), m += 2;
                    if ((size_t)m <= n) { /* always, as 17 digits is the most; never grow */
                        memcpy(w, f, (size_t)m);
                        w += m;
                        r += n;
                        continue;
                    }
                }
            }
            memmove(w, r, n);
            w += n;
            r += n;
            continue;
        }
        *w++ = *r++;
    }
    *w = '\0';
    return s;
}
