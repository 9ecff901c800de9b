/*
 * numfmt.h: doubles as people read them back. printf's %.17g always
 * round-trips but shows the binary value's noise (1e-12 becomes
 * 9.9999999999999998e-13, 0.1 becomes 0.10000000000000001); the fewest
 * digits of 15, 16 or 17 that strtod turns back into the same double show
 * what the user typed and lose nothing. jansson (2.14 here) has no such
 * mode: JSON_REAL_PRECISION(0) means %.17g, so its output is rewritten.
 */
#ifndef CLS_COMMON_NUMFMT_H
#define CLS_COMMON_NUMFMT_H

#include <stddef.h>

/* v in the shortest of %.15g, %.16g, %.17g that strtod reads back as v
 * (NaN and infinities as printf writes them). Returns snprintf's count. */
int cls_fmt_double(char *buf, size_t cap, double v);

/* printf's "%.17g" of v, the same bytes, at p (up to 24 characters; p needs
 * room for 25, as snprintf may end them with a NUL);
 * returns the end. Exact and about 5x faster than snprintf for 1.5e-11 <=
 * |v| < 1e17, where v * 10^(16-E) is m * 5^k * 2^s with 5^k in 64 bits, so
 * the 17 digits are an exact 128-bit product, shifted and rounded half to
 * even as glibc rounds; other values (zero, subnormal, huge, tiny, NaN,
 * Inf) go to snprintf. Writing x as text (a solve's -o, the daemon's .mtx
 * download) formats millions of these. */
char *cls_fmt_g17(char *p, double v);

/* Rewrites, in place, every real of a JSON text (a number with '.', 'e' or
 * 'E' outside strings, as jansson writes reals at any precision) in the
 * shortest form that reads back as the same double, keeping it a real
 * ("1.0", not "1"). The text only shrinks. Returns s (NULL stays NULL), so
 * it wraps json_dumps: cls_json_shorten(json_dumps(o, flags)). */
char *cls_json_shorten(char *s);

#endif
