/*
 * numfmt.c: shortest round-trip doubles (see numfmt.h).
 */
#include "numfmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
