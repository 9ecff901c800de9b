/*
 * mm_scan.c: the Matrix Market reader's range parser (mm_scan.h); the
 * driver that cuts blocks into ranges, places their output and takes them
 * in file order is mm.c.
 *
 * Every range ends with '\n' (mm.c gives a final line without one a
 * sentinel), so the scanners never test for the end of the buffer: every
 * character class they loop over excludes '\n'. The number scanners are
 * hand-written, exact where the decimal fits a double's exact operands and
 * strtod's otherwise (scan_real); the fast index scanner reads eight digits
 * at once where the block has eight bytes to spare (lim). parse_range is
 * specialised by constant arguments (array or coordinate, the value kind)
 * and always inlined into its five wrappers, so there is no per-entry
 * indirection. The newline count is
 * 32 bytes a step (GCC vector extensions) and gives each range an exact
 * bound on its entries before anything is written.
 */
#include "mm_scan.h"
#include "mm_lex.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* number scanners for the entry section                                     */

/* Every range ends with '\n' and every loop below stops at a character that
 * is not in its class, so none of them needs an end pointer. */

enum { IDX_OK = 0, IDX_NAN, IDX_BIG, IDX_NEG };

/* [+-]? digits at p, the integer scanners' common part: neg, the first
 * digit d0, the first after the leading zeros d1, the value x (wraps past
 * 19 significant digits: p - d1 > 19 tells); returns the first non-digit. */
static inline __attribute__((always_inline)) const char *
scan_digits(const char *p, int *neg, const char **d0, const char **d1, uint64_t *x)
{
    *neg = *p == '-';
    if (*p == '+' || *p == '-')
        p++;
    *d0 = p;
    while (*p == '0')
        p++;
    *d1 = p;
    uint64_t v = 0;
    unsigned d;
    while ((d = (unsigned)(unsigned char)*p - '0') < 10u) {
        v = v * 10 + d;
        p++;
    }
    *x = v;
    return p;
}

static inline int scan_index(const char **pp, uint64_t *out)
{
    int neg;
    const char *d0, *d1;
    uint64_t x;
    const char *p = scan_digits(*pp, &neg, &d0, &d1, &x);
    if (p == d0 || !mm_is_end(*p))
        return IDX_NAN;
    *pp = p;
    if (p - d1 > 19) /* past 19 digits x has wrapped */
        return IDX_BIG;
    if (neg && x)
        return IDX_NEG;
    *out = x;
    return IDX_OK;
}

enum { VAL_OK = 0, VAL_NAN, VAL_INF, VAL_NOTINT, VAL_BIGINT };

static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Is s (starting after an optional sign) "nan", "inf" or "infinity"? */
static int is_nonfinite_word(const char *s)
{
    size_t n = 0;
    while (!mm_is_end(s[n]) && n < 9)
        n++;
    if (!mm_is_end(s[n]))
        return 0;
    return mm_span_ieq(s, n, "nan") || mm_span_ieq(s, n, "inf") || mm_span_ieq(s, n, "infinity");
}

/* Real value: [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?
 * Fast path (Clinger): at most 19 significant digits, mantissa <= 2^53 and
 * a decimal exponent within +-22 give one correctly rounded operation on
 * exact operands. Anything else goes to strtod on a copy of the token, so
 * every result is correctly rounded. */
static inline int scan_real(const char **pp, double *out)
{
    const char *s = *pp, *p = s;
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    } else if (*p == '+')
        p++;
    uint64_t m = 0;
    int nd = 0, dexp = 0, trunc = 0, any = 0;
    unsigned d;
    while (*p == '0') {
        p++;
        any = 1;
    }
    while ((d = (unsigned)(unsigned char)*p - '0') < 10u) {
        if (nd < 19) {
            m = m * 10 + d;
            nd++;
        } else {
            dexp++;
            trunc |= d != 0;
        }
        p++;
        any = 1;
    }
    if (*p == '.') {
        p++;
        if (nd == 0)
            while (*p == '0') {
                p++;
                dexp--;
                any = 1;
            }
        while ((d = (unsigned)(unsigned char)*p - '0') < 10u) {
            if (nd < 19) {
                m = m * 10 + d;
                nd++;
                dexp--;
            } else
                trunc |= d != 0;
            p++;
            any = 1;
        }
    }
    if (!any) {
        const char *w = (*s == '-' || *s == '+') ? s + 1 : s;
        return is_nonfinite_word(w) ? VAL_INF : VAL_NAN;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        int eneg = 0;
        if (*p == '-') {
            eneg = 1;
            p++;
        } else if (*p == '+')
            p++;
        if ((unsigned)(unsigned char)*p - '0' >= 10u)
            return VAL_NAN;
        int ev = 0;
        while ((d = (unsigned)(unsigned char)*p - '0') < 10u) {
            if (ev < 100000)
                ev = ev * 10 + (int)d;
            p++;
        }
        dexp += eneg ? -ev : ev;
    }
    if (!mm_is_end(*p))
        return VAL_NAN;
    *pp = p;
    if (m == 0) {
        *out = neg ? -0.0 : 0.0;
        return VAL_OK;
    }
    if (!trunc && m <= (1ULL << 53) && dexp >= -22 && dexp <= 22) {
        double v = (double)m;
        v = dexp < 0 ? v / pow10_exact[-dexp] : v * pow10_exact[dexp];
        *out = neg ? -v : v;
        return VAL_OK;
    }
    /* slow path: correctly rounded by the C library */
    size_t n = (size_t)(p - s);
    char small[128];
    char *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp)
        return VAL_NAN;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    double v = strtod(tmp, NULL);
    if (tmp != small)
        free(tmp);
    if (isinf(v))
        return VAL_INF;
    *out = v;
    return VAL_OK;
}

/* Integer value for the "integer" field: [+-]? digits. */
static inline int scan_int_value(const char **pp, double *out)
{
    int neg;
    const char *d0, *d1;
    uint64_t x;
    const char *p = scan_digits(*pp, &neg, &d0, &d1, &x);
    if (!mm_is_end(*p)) {
        if (p > d0 && (*p == '.' || *p == 'e' || *p == 'E'))
            return VAL_NOTINT;
        if (p == d0 && is_nonfinite_word(d0))
            return VAL_INF;
        return VAL_NAN;
    }
    if (p == d0)
        return VAL_NAN;
    if (p - d1 > 19)
        return VAL_BIGINT;
    *pp = p;
    double v = (double)x;
    *out = neg ? -v : v;
    return VAL_OK;
}

/* Fast path for indices: a run of 1..15 plain digits followed by a token end
 * is read eight bytes at a time (SWAR: Lemire's eight-digit conversion), with
 * no per-digit branch; anything else (signs, 16+ digits, bad characters)
 * goes to scan_index, so the results and errors are the same. lim is the
 * end of the memory that may be read: the fast path needs 8 readable bytes.
 * (The same fast path for values measured slower on the poisson files: the
 * larger parse loop spilled registers; -DMM_NO_SWAR turns it off.) */
#if !defined(MM_NO_SWAR) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MM_SWAR 1
/* The number of digits at p (0..8) and, if any, their value. */
static inline __attribute__((always_inline)) int digit_run(const char *p, uint64_t *out)
{
    uint64_t w;
    memcpy(&w, p, 8);
    const uint64_t hi = 0xF0F0F0F0F0F0F0F0ULL, zeros = 0x3030303030303030ULL;
    /* a byte is a digit iff its high nibble is 3 and stays 3 after adding 6;
     * a carry out of a byte >= 0xFA only reaches bytes past a non-digit */
    uint64_t bad = ((w & hi) ^ zeros) | (((w + 0x0606060606060606ULL) & hi) ^ zeros);
    int len = bad ? __builtin_ctzll(bad) >> 3 : 8;
    if (len == 0)
        return 0;
    uint64_t v = (w - zeros) << (8 * (8 - len)); /* the run as the low digits of 8 */
    v = v * 10 + (v >> 8);
    v = (((v & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
         (((v >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
    *out = v;
    return len;
}
#else
#define MM_SWAR 0
static inline int digit_run(const char *p, uint64_t *out)
{
    (void)p;
    (void)out;
    return 0;
}
#endif

static const uint64_t pow10_u64[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};

static inline __attribute__((always_inline)) int scan_index_fast(const char **pp,
                                                                 const char *lim, uint64_t *out)
{
    const char *p = *pp;
    uint64_t v, v2 = 0;
    int len, len2;
    if (MM_SWAR && lim - p >= 8 && (len = digit_run(p, &v)) > 0) {
        if (len < 8) {
            if (mm_is_end(p[len])) {
                *pp = p + len;
                *out = v;
                return IDX_OK;
            }
        } else if (lim - p >= 16 && (len2 = digit_run(p + 8, &v2)) < 8 && mm_is_end(p[8 + len2])) {
            /* 8 to 15 digits: the first eight, then the rest. Without this
             * a matrix of 10^7 rows or more (poisson3d 256: 40% of its
             * indices have eight digits) took the per-digit loop */
            *pp = p + 8 + len2;
            *out = v * pow10_u64[len2] + v2;
            return IDX_OK;
        }
    }
    return scan_index(pp, out);
}

/* ------------------------------------------------------------------------ */
/* per-thread range parser                                                   */


static void idx_error(mm_scan_job *J, const char *what, const char *tok, int rc, uint64_t val,
                      int64_t hi)
{
    char t[48];
    mm_tok_str(tok, 64, t);
    J->err = 1;
    if (rc == IDX_NAN)
        snprintf(J->msg, sizeof J->msg, "%s index is not a number: '%s'", what, t);
    else if (hi == 0)
        snprintf(J->msg, sizeof J->msg, "%s index %s out of range: the matrix has no %s", what,
                 t, what[0] == 'r' ? "rows" : "columns");
    else
        snprintf(J->msg, sizeof J->msg, "%s index %s out of range 1..%lld%s", what, t,
                 (long long)hi, (rc == IDX_OK && val == 0) ? " (indices are 1-based)" : "");
}

static void val_error(mm_scan_job *J, const char *tok, int rc)
{
    char t[48];
    mm_tok_str(tok, 64, t);
    J->err = 1;
    switch (rc) {
    case VAL_INF:
        snprintf(J->msg, sizeof J->msg, "value '%s' is not a finite number", t);
        break;
    case VAL_NOTINT:
        snprintf(J->msg, sizeof J->msg,
                 "value '%s' is not an integer (the banner declares integer)", t);
        break;
    case VAL_BIGINT:
        snprintf(J->msg, sizeof J->msg, "integer value '%s' is too large", t);
        break;
    default:
        snprintf(J->msg, sizeof J->msg, "value is not a number: '%s'", t);
        break;
    }
}

static void simple_error(mm_scan_job *J, const char *msg)
{
    J->err = 1;
    snprintf(J->msg, sizeof J->msg, "%s", msg);
}

/* The body, specialised by constant arguments: array (values only) or
 * coordinate, and the value kind. Always inlined into the five wrappers,
 * so there is no per-entry indirection. */
static inline __attribute__((always_inline)) void parse_range(mm_scan_job *J, const int array,
                                                              const int vk)
{
    const char *p = J->beg, *end = J->end, *lim = J->lim;
    int64_t nl = 0, n = 0;
    const int64_t cap = (int64_t)J->cap;
    const uint64_t nr = (uint64_t)J->nrows, nc = (uint64_t)J->ncols;
    int32_t *R = J->r, *C = J->c;
    double *V = J->v;
    const int skew = J->skew;
    while (p < end) {
        while (mm_is_ws(*p))
            p++;
        if (*p == '\n') {
            p++;
            nl++;
            continue;
        }
        if (*p == '%') {
            p = memchr(p, '\n', (size_t)(end - p));
            p++;
            nl++;
            continue;
        }
        if (n >= cap) { /* cannot happen: every entry line ends with a counted '\n' */
            simple_error(J, "internal error: entry buffer too small");
            goto fail;
        }
        uint64_t i = 0, j = 0;
        double val = 1.0;
        const char *tok;
        if (!array) {
            tok = p;
            int rc = scan_index_fast(&p, lim, &i);
            if (rc != IDX_OK || i < 1 || i > nr) {
                idx_error(J, "row", tok, rc, i, (int64_t)nr);
                goto fail;
            }
            while (mm_is_ws(*p))
                p++;
            if (*p == '\n') {
                simple_error(J, vk == VK_NONE
                                    ? "missing column index (a pattern entry is: row column)"
                                    : "missing column index (an entry is: row column value)");
                goto fail;
            }
            tok = p;
            rc = scan_index_fast(&p, lim, &j);
            if (rc != IDX_OK || j < 1 || j > nc) {
                idx_error(J, "column", tok, rc, j, (int64_t)nc);
                goto fail;
            }
            if (vk != VK_NONE) {
                while (mm_is_ws(*p))
                    p++;
                if (*p == '\n') {
                    simple_error(J, vk == VK_REAL
                                        ? "missing value (a real entry is: row column value)"
                                        : "missing value (an integer entry is: row column value)");
                    goto fail;
                }
            }
        }
        if (vk != VK_NONE) {
            tok = p;
            int rc = vk == VK_REAL ? scan_real(&p, &val) : scan_int_value(&p, &val);
            if (rc != VAL_OK) {
                val_error(J, tok, rc);
                goto fail;
            }
        }
        while (mm_is_ws(*p))
            p++;
        if (*p != '\n') {
            char t[48], m[160];
            snprintf(m, sizeof m, "unexpected extra field '%s' after the %s", mm_tok_str(p, 64, t),
                     vk == VK_NONE ? "column index" : "value");
            simple_error(J, m);
            goto fail;
        }
        if (!array && skew && i == j) {
            snprintf(J->msg, sizeof J->msg,
                     "diagonal entry (%llu,%llu) in a skew-symmetric matrix (its diagonal is "
                     "zero and is not stored)",
                     (unsigned long long)i, (unsigned long long)j);
            J->err = 1;
            goto fail;
        }
        p++;
        nl++;
        if (!array) {
            R[n] = (int32_t)(i - 1);
            C[n] = (int32_t)(j - 1);
        }
        V[n] = val; /* 1.0 for pattern */
        n++;
    }
    J->n = n;
    J->nl = nl;
    J->err = 0;
    return;
fail:
    J->n = n;
    J->nl = nl;
}

void *mm_scan_coord_real(void *a) { parse_range(a, 0, VK_REAL); return NULL; }
void *mm_scan_coord_int(void *a) { parse_range(a, 0, VK_INT); return NULL; }
void *mm_scan_coord_pat(void *a) { parse_range(a, 0, VK_NONE); return NULL; }
void *mm_scan_array_real(void *a) { parse_range(a, 1, VK_REAL); return NULL; }
void *mm_scan_array_int(void *a) { parse_range(a, 1, VK_INT); return NULL; }

/* Newlines before the (k+1)-th entry line of a range (k 0-based). */
int64_t mm_scan_nl_before_entry(const char *p, const char *end, int64_t k)
{
    int64_t nl = 0, n = 0;
    while (p < end) {
        while (mm_is_ws(*p))
            p++;
        if (*p != '\n' && *p != '%') {
            if (n == k)
                return nl;
            n++;
        }
        p = memchr(p, '\n', (size_t)(end - p));
        p++;
        nl++;
    }
    return nl;
}

/* Newlines in p[0..n): 32 bytes a step with GCC vector extensions (16-byte
 * vectors, which every x86-64 and AArch64 target has natively: a compare
 * and a subtract each), byte counters flushed every 255 steps; then eight
 * bytes at a time (SWAR zero-byte test). */
typedef unsigned char mm_v16 __attribute__((vector_size(16)));
typedef uint64_t mm_v16q __attribute__((vector_size(16)));

static inline int64_t v16_sum(mm_v16 acc) /* sum of the 16 byte lanes */
{
    mm_v16q q;
    memcpy(&q, &acc, sizeof q);
    int64_t c = 0;
    for (int l = 0; l < 2; l++) { /* 16-bit pair sums, then one multiply */
        uint64_t h = (q[l] & 0x00FF00FF00FF00FFULL) + ((q[l] >> 8) & 0x00FF00FF00FF00FFULL);
        c += (int64_t)((h * 0x0001000100010001ULL) >> 48);
    }
    return c;
}

static int64_t count_newlines(const char *p, size_t n)
{
    const uint64_t ones = 0x0101010101010101ULL, low7 = 0x7F7F7F7F7F7F7F7FULL;
    int64_t c = 0;
    size_t k = 0;
    const mm_v16 nlv = {'\n', '\n', '\n', '\n', '\n', '\n', '\n', '\n',
                        '\n', '\n', '\n', '\n', '\n', '\n', '\n', '\n'};
    while (k + 32 <= n) {
        size_t steps = (n - k) / 32;
        if (steps > 255)
            steps = 255;
        mm_v16 a0 = {0}, a1 = {0};
        for (size_t s = 0; s < steps; s++, k += 32) {
            mm_v16 w0, w1;
            memcpy(&w0, p + k, 16);
            memcpy(&w1, p + k + 16, 16);
            a0 -= (mm_v16)(w0 == nlv); /* a match is 0xFF, i.e. -1 */
            a1 -= (mm_v16)(w1 == nlv);
        }
        c += v16_sum(a0) + v16_sum(a1);
    }
    for (; k + 8 <= n; k += 8) {
        uint64_t w;
        memcpy(&w, p + k, 8);
        w ^= ones * '\n'; /* '\n' bytes become zero */
        uint64_t t = ((w & low7) + low7) | w;
        c += (int64_t)((((~t & ~low7) >> 7) * ones) >> 56);
    }
    for (; k < n; k++)
        c += p[k] == '\n';
    return c;
}

void *mm_scan_count(void *arg)
{
    mm_scan_job *J = arg;
    J->cap = count_newlines(J->beg, (size_t)(J->end - J->beg));
    return NULL;
}

typedef struct job_pool {
    mm_scan_job *jobs;
    int n;
    atomic_int next;
    void *(*fn)(void *);
} job_pool;

static void *pool_run(void *arg)
{
    job_pool *P = arg;
    for (;;) {
        int k = atomic_fetch_add_explicit(&P->next, 1, memory_order_relaxed);
        if (k >= P->n)
            return NULL;
        if (P->jobs[k].beg < P->jobs[k].end)
            P->fn(&P->jobs[k]);
    }
}

/* Runs fn on jobs[0..n) with up to nt threads (this one included), each
 * claiming the next job until none is left: a slow thread (other load on
 * the machine) holds up one small range, not a 1/nt share. A thread that
 * cannot be started leaves its share to the others. */
void mm_scan_run(mm_scan_job *jobs, int n, int nt, void *(*fn)(void *))
{
    job_pool P = {.jobs = jobs, .n = n, .fn = fn};
    atomic_init(&P.next, 0);
    pthread_t tid[MM_MAX_THREADS];
    int started[MM_MAX_THREADS];
    if (nt > n)
        nt = n;
    for (int t = 1; t < nt; t++)
        started[t] = pthread_create(&tid[t], NULL, pool_run, &P) == 0;
    pool_run(&P);
    for (int t = 1; t < nt; t++)
        if (started[t])
            pthread_join(tid[t], NULL);
}

int64_t mm_count_newlines(const char *p, size_t n)
{
    return count_newlines(p, n);
}
