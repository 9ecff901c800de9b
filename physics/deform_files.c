/*
 * deform_files.c: the deformer's inputs and outputs on disk (see
 * deform.h): the domains file, the basis U (Matrix Market or raw .f32 /
 * .f64), the q sequence, and u written as a Matrix Market array. Every
 * error in what a file holds is CLS_EINPUT "FILE:LINE: what"; a file that
 * cannot be opened or read is an I/O failure (CLS_EOTHER).
 *
 * The device computes in float, so a basis entry, a q entry or a
 * translation beyond the float range is bad input here, where the file
 * and the entry can be named, rather than an inf in the results.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../matrices/mm.h"
#include "deform.h"
#include "frame.h"

/* An allocation count that is never 0 (malloc(0) may return NULL). */
static inline size_t nz(int64_t n)
{
    return n > 0 ? (size_t)n : 1;
}

/* -------------------------------------------------------------- domains file */

void deform_domains_free(deform_domains *D)
{
    free(D->nv);
    free(D->r);
    free(D->tf_frame);
    free(D->tf_domain);
    free(D->tf);
    memset(D, 0, sizeof *D);
}

static int parse_i64(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (end == s || *end || errno)
        return -1;
    *v = x;
    return 0;
}

static int parse_dbl(const char *s, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(x))
        return -1;
    *v = x;
    return 0;
}

#define DOM_FAIL(...) (rc = cls_fail_line(err, CLS_EINPUT, lineno, __VA_ARGS__))

int deform_domains_parse(const char *text, size_t len, const char *name, deform_domains *D,
                         cls_error *err)
{
    memset(D, 0, sizeof *D);
    int rc = CLS_OK;
    long long lineno = 0;
    int64_t seen = 0, tcap = 0;
    size_t pos = 0;
    char line[4096];
    while (pos < len && !rc) {
        size_t e = pos;
        while (e < len && text[e] != '\n')
            e++;
        lineno++;
        size_t l = e - pos;
        if (l >= sizeof line) {
            DOM_FAIL("%s:%lld: line longer than %zu bytes", name, lineno, sizeof line - 1);
            break;
        }
        memcpy(line, text + pos, l);
        line[l] = '\0';
        pos = e + 1;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *tok[20], *save = NULL;
        int nt = 0;
        for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
            if (nt == 20) {
                nt++;
                break;
            }
            tok[nt++] = t;
        }
        if (nt == 0)
            continue;
        if (!strcmp(tok[0], "domains")) {
            int64_t d;
            if (D->nv)
                DOM_FAIL("%s:%lld: second 'domains' line", name, lineno);
            else if (nt != 2 || parse_i64(tok[1], &d) || d < 1 || d > INT_MAX / 2)
                DOM_FAIL("%s:%lld: expected 'domains D' with D >= 1", name, lineno);
            else if (d > (int64_t)len) /* every domain needs a line: never trust the count */
                DOM_FAIL("%s:%lld: %lld domains declared but the file is %zu bytes", name, lineno,
                         (long long)d, len);
            else {
                D->ndomains = d;
                D->nv = calloc((size_t)d, sizeof(int64_t));
                D->r = calloc((size_t)d, sizeof(int32_t));
                if (!D->nv || !D->r)
                    rc = cls_fail(err, CLS_EOTHER, "out of memory for %lld domains", (long long)d);
            }
        } else if (!strcmp(tok[0], "domain")) {
            int64_t idx, nv, r;
            if (!D->nv)
                DOM_FAIL("%s:%lld: 'domain' before 'domains D'", name, lineno);
            else if (nt != 4 || parse_i64(tok[1], &idx) || parse_i64(tok[2], &nv) ||
                     parse_i64(tok[3], &r))
                DOM_FAIL("%s:%lld: expected 'domain INDEX NVERTS R'", name, lineno);
            else if (idx != seen)
                DOM_FAIL("%s:%lld: domain %lld out of order (expected %lld)", name, lineno,
                         (long long)idx, (long long)seen);
            else if (seen >= D->ndomains)
                DOM_FAIL("%s:%lld: more domains than the %lld declared", name, lineno,
                         (long long)D->ndomains);
            else if (nv < 1 || nv > ((int64_t)1 << 40))
                DOM_FAIL("%s:%lld: domain %lld: NVERTS must be >= 1", name, lineno, (long long)idx);
            else if (r < 0 || r > 65536)
                DOM_FAIL("%s:%lld: domain %lld: R must be in [0, 65536]", name, lineno,
                         (long long)idx);
            else {
                D->nv[seen] = nv;
                D->r[seen] = (int32_t)r;
                seen++;
            }
        } else if (!strcmp(tok[0], "transform")) {
            int64_t fr, dom;
            double v[12];
            int bad = nt != 15 || parse_i64(tok[1], &fr) || parse_i64(tok[2], &dom);
            for (int k = 0; k < 12 && !bad; k++)
                bad = parse_dbl(tok[3 + k], &v[k]);
            if (bad) {
                DOM_FAIL("%s:%lld: expected 'transform FRAME DOMAIN' and 12 numbers (R row-major, "
                         "p)",
                         name, lineno);
                break;
            }
            if (!D->nv || dom < 0 || dom >= D->ndomains || fr < 0) {
                DOM_FAIL("%s:%lld: transform of unknown domain %lld or negative frame", name,
                         lineno, (long long)dom);
                break;
            }
            int far = -1;
            for (int k = 9; k < 12 && far < 0; k++)
                if (phys_beyond_float(v[k]))
                    far = k - 9;
            if (far >= 0) {
                DOM_FAIL("%s:%lld: transform of domain %lld: p[%d] = %g is beyond the float range "
                         "the device computes in (|x| <= %g)",
                         name, lineno, (long long)dom, far, v[9 + far], (double)FLT_MAX);
                break;
            }
            /* R must be a rotation */
            double worst = 0;
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    double s = 0;
                    for (int k = 0; k < 3; k++)
                        s += v[3 * k + a] * v[3 * k + b];
                    worst = fmax(worst, fabs(s - (a == b)));
                }
            double det = v[0] * (v[4] * v[8] - v[5] * v[7]) - v[1] * (v[3] * v[8] - v[5] * v[6]) +
                         v[2] * (v[3] * v[7] - v[4] * v[6]);
            if (worst > 1e-4 || det <= 0) {
                DOM_FAIL("%s:%lld: transform of domain %lld: R is not a rotation (|R^T R - I| = "
                         "%.2g, det %.3g)",
                         name, lineno, (long long)dom, worst, det);
                break;
            }
            if (D->ntransforms == tcap) {
                int64_t nc = tcap ? 2 * tcap : 16;
                int64_t *a = realloc(D->tf_frame, (size_t)nc * sizeof(int64_t));
                if (a)
                    D->tf_frame = a;
                int64_t *b = realloc(D->tf_domain, (size_t)nc * sizeof(int64_t));
                if (b)
                    D->tf_domain = b;
                deform_xform *c = realloc(D->tf, (size_t)nc * sizeof(deform_xform));
                if (c)
                    D->tf = c;
                if (!a || !b || !c) {
                    rc = cls_fail(err, CLS_EOTHER, "out of memory for the transforms");
                    break;
                }
                tcap = nc;
            }
            int64_t k = D->ntransforms++;
            D->tf_frame[k] = fr;
            D->tf_domain[k] = dom;
            memcpy(D->tf[k].R, v, 9 * sizeof(double));
            memcpy(D->tf[k].p, v + 9, 3 * sizeof(double));
        } else {
            DOM_FAIL("%s:%lld: unknown keyword '%s' (domains, domain, transform)", name, lineno,
                     tok[0]);
        }
    }
    if (!rc && !D->nv)
        rc = cls_fail_line(err, CLS_EINPUT, lineno ? lineno : 1, "%s:%lld: no 'domains D' line",
                           name, lineno ? lineno : 1);
    else if (!rc && seen != D->ndomains)
        rc = cls_fail_line(err, CLS_EINPUT, lineno, "%s:%lld: %lld domains declared, %lld given",
                           name, lineno, (long long)D->ndomains, (long long)seen);
    if (!rc) {
        /* stable insertion sort by frame: file order within a frame */
        for (int64_t i = 1; i < D->ntransforms; i++) {
            int64_t fr = D->tf_frame[i], dm = D->tf_domain[i];
            deform_xform x = D->tf[i];
            int64_t j = i - 1;
            while (j >= 0 && D->tf_frame[j] > fr) {
                D->tf_frame[j + 1] = D->tf_frame[j];
                D->tf_domain[j + 1] = D->tf_domain[j];
                D->tf[j + 1] = D->tf[j];
                j--;
            }
            D->tf_frame[j + 1] = fr;
            D->tf_domain[j + 1] = dm;
            D->tf[j + 1] = x;
        }
    }
    if (rc)
        deform_domains_free(D);
    return rc;
}

int deform_domains_read(const char *path, deform_domains *D, cls_error *err)
{
    char *buf;
    size_t len;
    int rc = phys_read_file(path, &buf, &len, err);
    if (rc)
        return rc;
    rc = deform_domains_parse(buf, len, path, D, err);
    free(buf);
    return rc;
}

void deform_domains_transforms(const deform_domains *D, int64_t frame, deform_xform *T)
{
    for (int64_t d = 0; d < D->ndomains; d++)
        deform_xform_identity(&T[d]);
    for (int64_t k = 0; k < D->ntransforms && D->tf_frame[k] <= frame; k++)
        T[D->tf_domain[k]] = D->tf[k];
}

/* ------------------------------------------------------------ basis and q */

static int raw_kind(const char *path) /* 4: .f32, 8: .f64, 0: Matrix Market */
{
    size_t n = strlen(path);
    if (n > 4 && !strcmp(path + n - 4, ".f32"))
        return 4;
    if (n > 4 && !strcmp(path + n - 4, ".f64"))
        return 8;
    return 0;
}

/* Raw little-endian values as doubles. */
static int read_raw(const char *path, int width, double **vals, int64_t *count, cls_error *err)
{
    char *buf;
    size_t len;
    int rc = phys_read_file(path, &buf, &len, err);
    if (rc)
        return rc;
    if (len % (size_t)width) {
        free(buf);
        return cls_fail(err, CLS_EINPUT, "%s: %zu bytes is not a whole number of %d-byte values",
                        path, len, width);
    }
    int64_t n = (int64_t)(len / (size_t)width);
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    if (!v) {
        free(buf);
        return cls_fail(err, CLS_EOTHER, "%s: out of memory", path);
    }
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)buf + (size_t)i * (size_t)width;
        if (width == 4) {
            uint32_t b =
                (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            float f;
            memcpy(&f, &b, 4);
            v[i] = f;
        } else {
            uint64_t b = 0;
            for (int k = 7; k >= 0; k--)
                b = b << 8 | p[k];
            memcpy(&v[i], &b, 8);
        }
        if (!isfinite(v[i])) {
            free(buf);
            free(v);
            return cls_fail(err, CLS_EINPUT, "%s: value %lld is not finite", path, (long long)i);
        }
        if (phys_beyond_float(v[i])) {
            double x = v[i];
            free(buf);
            free(v);
            return cls_fail(err, CLS_EINPUT,
                            "%s: value %lld (%g) is beyond the float range the device computes "
                            "in (|x| <= %g)",
                            path, (long long)i, x, (double)FLT_MAX);
        }
    }
    free(buf);
    *vals = v;
    *count = n;
    return CLS_OK;
}

int deform_read_basis(const char *path, const deform_domains *D, int64_t rank, deform_model *M,
                      cls_error *err)
{
    memset(M, 0, sizeof *M);
    int width = raw_kind(path);
    int rc;
    if (width) {
        double *v;
        int64_t n;
        rc = read_raw(path, width, &v, &n, err);
        if (rc)
            return rc;
        int64_t one_nv;
        int32_t one_r;
        if (D) {
            rc = deform_model_alloc(M, D->ndomains, D->nv, D->r, err);
        } else {
            if (rank < 1) {
                free(v);
                return cls_fail(err, CLS_EUSAGE,
                                "%s: a raw basis needs its rank (columns) or a "
                                "domains file",
                                path);
            }
            if (n % (3 * rank) || n == 0) {
                free(v);
                return cls_fail(err, CLS_EINPUT, "%s: %lld values are not 3n x %lld", path,
                                (long long)n, (long long)rank);
            }
            one_nv = n / (3 * rank);
            one_r = (int32_t)rank;
            rc = deform_model_alloc(M, 1, &one_nv, &one_r, err);
        }
        if (rc) {
            free(v);
            return rc;
        }
        int64_t need = 0;
        for (int64_t d = 0; d < M->ndomains; d++)
            need += 3 * (M->vert0[d + 1] - M->vert0[d]) * M->r[d];
        if (need != n) {
            free(v);
            deform_model_free(M);
            return cls_fail(err, CLS_EINPUT, "%s: %lld values, the domains need %lld", path,
                            (long long)n, (long long)need);
        }
        int64_t k = 0;
        for (int64_t d = 0; d < M->ndomains; d++) {
            int64_t rows = 3 * (M->vert0[d + 1] - M->vert0[d]);
            for (int32_t j = 0; j < M->r[d]; j++)
                for (int64_t i = 0; i < rows; i++)
                    *deform_U_at(M, d, i, j) = (float)v[k++];
        }
        free(v);
        return CLS_OK;
    }
    csr_matrix A;
    csr_init(&A);
    mm_header h;
    rc = mm_read_csr(path, NULL, &A, &h, NULL, err);
    if (rc)
        return rc;
    if (D) {
        int64_t nv = 0, R = 0;
        for (int64_t d = 0; d < D->ndomains; d++)
            nv += D->nv[d], R += D->r[d];
        if (A.nrows != 3 * nv || A.ncols != R) {
            rc = cls_fail(err, CLS_EINPUT, "%s: basis is %lld x %lld, the domains need %lld x %lld",
                          path, (long long)A.nrows, (long long)A.ncols, (long long)(3 * nv),
                          (long long)R);
            csr_free(&A);
            return rc;
        }
        rc = deform_model_alloc(M, D->ndomains, D->nv, D->r, err);
    } else {
        if (A.nrows % 3 || A.nrows == 0 || A.ncols >= INT32_MAX) {
            rc = cls_fail(err, CLS_EINPUT, "%s: basis has %lld rows, not 3 per vertex", path,
                          (long long)A.nrows);
            csr_free(&A);
            return rc;
        }
        int64_t one_nv = A.nrows / 3;
        int32_t one_r = (int32_t)A.ncols;
        rc = deform_model_alloc(M, 1, &one_nv, &one_r, err);
    }
    if (rc) {
        csr_free(&A);
        return rc;
    }
    for (int64_t i = 0; i < A.nrows; i++) {
        int64_t d = deform_domain_of(M, i / 3);
        int64_t row = i - 3 * M->vert0[d];
        for (int64_t k = A.rowptr[i]; k < A.rowptr[i + 1]; k++) {
            int64_t j = A.col[k] - M->col0[d];
            if (j < 0 || j >= M->r[d]) {
                rc = cls_fail(err, CLS_EINPUT,
                              "%s: entry (%lld, %d) lies outside the block of "
                              "domain %lld (columns %lld..%lld)",
                              path, (long long)(i + 1), (int)A.col[k] + 1, (long long)d,
                              (long long)M->col0[d] + 1, (long long)M->col0[d + 1]);
                break;
            }
            if (phys_beyond_float(A.val[k])) {
                rc = cls_fail(err, CLS_EINPUT,
                              "%s: entry (%lld, %d) = %g is beyond the float range the device "
                              "computes in (|x| <= %g)",
                              path, (long long)(i + 1), (int)A.col[k] + 1, A.val[k],
                              (double)FLT_MAX);
                break;
            }
            *deform_U_at(M, d, row, j) = (float)A.val[k];
        }
        if (rc)
            break;
    }
    csr_free(&A);
    if (rc)
        deform_model_free(M);
    return rc;
}

int deform_read_q(const char *path, int64_t R, double **q, int64_t *frames, cls_error *err)
{
    *q = NULL;
    *frames = 0;
    int width = raw_kind(path);
    if (width) {
        double *v;
        int64_t n;
        int rc = read_raw(path, width, &v, &n, err);
        if (rc)
            return rc;
        if (R == 0 || n == 0 || n % R) {
            free(v);
            return cls_fail(err, CLS_EINPUT, "%s: %lld values are not whole frames of %lld", path,
                            (long long)n, (long long)R);
        }
        *q = v;
        *frames = n / R;
        return CLS_OK;
    }
    csr_matrix A;
    csr_init(&A);
    mm_header h;
    int rc = mm_read_csr(path, NULL, &A, &h, NULL, err);
    if (rc)
        return rc;
    int transposed = 0;
    int64_t F;
    if (A.nrows == R && A.ncols >= 1)
        F = A.ncols;
    else if (A.nrows == 1 && A.ncols == R)
        F = 1, transposed = 1;
    else {
        rc = cls_fail(err, CLS_EINPUT,
                      "%s: q is %lld x %lld, expected %lld rows (one column per "
                      "frame)",
                      path, (long long)A.nrows, (long long)A.ncols, (long long)R);
        csr_free(&A);
        return rc;
    }
    double *v = calloc(nz(R * F), sizeof(double));
    if (!v) {
        csr_free(&A);
        return cls_fail(err, CLS_EOTHER, "%s: out of memory", path);
    }
    for (int64_t i = 0; i < A.nrows && !rc; i++)
        for (int64_t k = A.rowptr[i]; k < A.rowptr[i + 1]; k++) {
            if (phys_beyond_float(A.val[k])) {
                rc = cls_fail(err, CLS_EINPUT,
                              "%s: entry (%lld, %d) = %g is beyond the float range the device "
                              "computes in (|x| <= %g)",
                              path, (long long)(i + 1), (int)A.col[k] + 1, A.val[k],
                              (double)FLT_MAX);
                break;
            }
            if (transposed)
                v[A.col[k]] = A.val[k];
            else
                v[(int64_t)A.col[k] * R + i] = A.val[k];
        }
    csr_free(&A);
    if (rc) {
        free(v);
        return rc;
    }
    *q = v;
    *frames = F;
    return CLS_OK;
}

int deform_write_u(const char *path, const double *u, int64_t rows, int64_t frames,
                   const char *comment, cls_error *err)
{
    phys_file pf;
    int rc = phys_refuse_nonfinite(path, "u", u, rows * frames, 1, err);
    if (!rc)
        rc = phys_file_open(&pf, path, err);
    if (rc)
        return rc;
    fprintf(pf.f, "%%%%MatrixMarket matrix array real general\n");
    if (comment)
        fprintf(pf.f, "%% %s\n", comment);
    fprintf(pf.f, "%lld %lld\n", (long long)rows, (long long)frames);
    for (int64_t k = 0; k < rows * frames; k++)
        fprintf(pf.f, "%.9g\n", u[k]);
    return phys_file_commit(&pf, err);
}
