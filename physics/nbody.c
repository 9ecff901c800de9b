/*
 * nbody.c: the N-body system (see nbody.h): generated initial conditions
 * (uniform ball, Plummer sphere, disk), the bodies CSV, and the CPU double
 * reference (accelerations, both integrators, energies and momenta). The
 * device driver is nbody_gpu.c, the run and the job nbody_run.c.
 */
#include "nbody.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

void nbody_init(nbody_system *s)
{
    memset(s, 0, sizeof *s);
}

void nbody_free(nbody_system *s)
{
    free(s->x);
    free(s->v);
    free(s->m);
    nbody_init(s);
}

static int nbody_oom(cls_error *err)
{
    return cls_fail(err, CLS_EOTHER, "nbody: out of memory");
}

static int nbody_alloc(nbody_system *s, int64_t n, cls_error *err)
{
    nbody_init(s);
    if (n < 0 || n > INT32_MAX)
        return cls_fail(err, CLS_EUSAGE, "%lld bodies is outside [1, %d]", (long long)n, INT32_MAX);
    size_t c = (size_t)(n ? n : 1);
    s->x = malloc(3 * c * sizeof *s->x);
    s->v = malloc(3 * c * sizeof *s->v);
    s->m = malloc(c * sizeof *s->m);
    if (!s->x || !s->v || !s->m) {
        nbody_free(s);
        return nbody_oom(err);
    }
    s->n = n;
    return CLS_OK;
}

/* splitmix64: a seedable generator independent of the C library */
static uint64_t nbody_rng(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double nbody_uniform(uint64_t *st) /* [0, 1) */
{
    return (double)(nbody_rng(st) >> 11) * (1.0 / 9007199254740992.0);
}

int nbody_random(nbody_system *s, int64_t n, uint64_t seed, cls_error *err)
{
    if (n < 1)
        return cls_fail(err, CLS_EUSAGE, "--random needs at least 1 body");
    int rc = nbody_alloc(s, n, err);
    if (rc)
        return rc;
    uint64_t st = seed;
    for (int64_t i = 0; i < n; i++) {
        double p[3], r2;
        do {
            for (int c = 0; c < 3; c++)
                p[c] = 2.0 * nbody_uniform(&st) - 1.0;
            r2 = p[0] * p[0] + p[1] * p[1] + p[2] * p[2];
        } while (r2 > 1.0);
        for (int c = 0; c < 3; c++) {
            s->x[3 * i + c] = p[c];
            s->v[3 * i + c] = 0.1 * nbody_uniform(&st) - 0.05;
        }
        s->m[i] = (0.5 + nbody_uniform(&st)) / (double)n;
    }
    return CLS_OK;
}

/* Moves the system to its centre-of-mass frame (position and velocity). */
static void nbody_com_frame(nbody_system *s)
{
    double M = 0, cx[3] = {0, 0, 0}, cv[3] = {0, 0, 0};
    for (int64_t i = 0; i < s->n; i++) {
        M += s->m[i];
        for (int c = 0; c < 3; c++) {
            cx[c] += s->m[i] * s->x[3 * i + c];
            cv[c] += s->m[i] * s->v[3 * i + c];
        }
    }
    if (!(M > 0))
        return;
    for (int64_t i = 0; i < s->n; i++)
        for (int c = 0; c < 3; c++) {
            s->x[3 * i + c] -= cx[c] / M;
            s->v[3 * i + c] -= cv[c] / M;
        }
}

/* A random unit vector times r (uniform on the sphere: z uniform, angle
 * uniform). */
static void nbody_isotropic(uint64_t *st, double r, double *out)
{
    double z = 2.0 * nbody_uniform(st) - 1.0, phi = 2.0 * M_PI * nbody_uniform(st);
    double rho = sqrt(fmax(0.0, 1.0 - z * z));
    out[0] = r * rho * cos(phi);
    out[1] = r * rho * sin(phi);
    out[2] = r * z;
}

int nbody_plummer(nbody_system *s, int64_t n, uint64_t seed, cls_error *err)
{
    if (n < 1)
        return cls_fail(err, CLS_EUSAGE, "--plummer needs at least 1 body");
    int rc = nbody_alloc(s, n, err);
    if (rc)
        return rc;
    const double a = 3.0 * M_PI / 16.0; /* Henon units: E = -1/4 */
    uint64_t st = seed;
    for (int64_t i = 0; i < n; i++) {
        s->m[i] = 1.0 / (double)n;
        /* the mass inside r is X = (1 + a^2 / r^2)^(-3/2): r = a / sqrt(X^(-2/3) - 1) */
        double X;
        do
            X = nbody_uniform(&st);
        while (X < 1e-10 || X > 0.999);
        double r = a / sqrt(pow(X, -2.0 / 3.0) - 1.0);
        nbody_isotropic(&st, r, s->x + 3 * i);
        /* speed q v_esc, v_esc = sqrt(2 / sqrt(r^2 + a^2)), q from the
         * density g(q) = q^2 (1 - q^2)^(7/2) (its maximum is below 0.1) */
        double q, y;
        do {
            q = nbody_uniform(&st);
            y = 0.1 * nbody_uniform(&st);
        } while (y > q * q * pow(1.0 - q * q, 3.5));
        double vesc = sqrt(2.0 / sqrt(r * r + a * a));
        nbody_isotropic(&st, q * vesc, s->v + 3 * i);
    }
    nbody_com_frame(s);
    return CLS_OK;
}

int nbody_disk(nbody_system *s, int64_t n, uint64_t seed, cls_error *err)
{
    if (n < 2)
        return cls_fail(err, CLS_EUSAGE, "--disk needs at least 2 bodies (a centre and a disk)");
    int rc = nbody_alloc(s, n, err);
    if (rc)
        return rc;
    const double M0 = 1.0, Md = 0.1, r0 = 0.2, r1 = 1.0;
    uint64_t st = seed;
    for (int c = 0; c < 3; c++)
        s->x[c] = s->v[c] = 0.0;
    s->m[0] = M0;
    for (int64_t i = 1; i < n; i++) {
        s->m[i] = Md / (double)(n - 1);
        double R = sqrt(r0 * r0 + nbody_uniform(&st) * (r1 * r1 - r0 * r0));
        double phi = 2.0 * M_PI * nbody_uniform(&st);
        double z = 0.01 * R * (2.0 * nbody_uniform(&st) - 1.0);
        double Menc = M0 + Md * (R * R - r0 * r0) / (r1 * r1 - r0 * r0);
        double v = sqrt(Menc / R);
        double *x = s->x + 3 * i, *u = s->v + 3 * i;
        x[0] = R * cos(phi);
        x[1] = R * sin(phi);
        x[2] = z;
        u[0] = -v * sin(phi);
        u[1] = v * cos(phi);
        u[2] = 0.0;
    }
    nbody_com_frame(s);
    return CLS_OK;
}

const char *nbody_integrator_name(nbody_integrator k)
{
    return k == NBODY_LEAPFROG ? "leapfrog" : "euler";
}

int nbody_integrator_parse(const char *s, nbody_integrator *k)
{
    if (s && !strcmp(s, "euler"))
        *k = NBODY_EULER;
    else if (s && !strcmp(s, "leapfrog"))
        *k = NBODY_LEAPFROG;
    else
        return -1;
    return 0;
}

/* ---- CSV ------------------------------------------------------------------- */

static const char *const nbody_cols[7] = {"x", "y", "z", "vx", "vy", "vz", "m"};

/* Splits s at commas into at most 8 trimmed fields, in place. */
static int nbody_fields(char *s, char **f)
{
    int n = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (n == 8)
            return 9;
        f[n++] = s;
        char *c = strchr(s, ',');
        char *end = c ? c : s + strlen(s);
        char *t = end;
        while (t > s && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r'))
            t--;
        *t = '\0';
        if (!c)
            return n;
        s = c + 1;
    }
}

int nbody_read_csv_buf(const char *buf, size_t len, const char *name, nbody_system *s,
                       cls_error *err)
{
    nbody_init(s);
    if (!name)
        name = "(bodies)";
    int64_t cap = 0, n = 0;
    char *line = NULL;
    size_t line_cap = 0, pos = 0;
    long long lineno = 0;
    int seen_data = 0, rc = CLS_OK;
    while (pos < len) {
        const char *p = buf + pos;
        const char *nl = memchr(p, '\n', len - pos);
        size_t L = nl ? (size_t)(nl - p) : len - pos;
        pos += L + (nl ? 1 : 0);
        lineno++;
        if (memchr(p, '\0', L)) {
            rc = cls_fail_line(err, CLS_EINPUT, lineno, "%s:%lld: NUL byte in a text file", name,
                               lineno);
            break;
        }
        if (L + 1 > line_cap) {
            size_t nc = line_cap ? line_cap : 256;
            while (nc < L + 1)
                nc *= 2;
            char *q = realloc(line, nc);
            if (!q) {
                rc = nbody_oom(err);
                break;
            }
            line = q;
            line_cap = nc;
        }
        memcpy(line, p, L);
        line[L] = '\0';
        char *h = strchr(line, '#');
        if (h)
            *h = '\0';
        char *t = line;
        while (*t && isspace((unsigned char)*t))
            t++;
        if (!*t)
            continue;
        char *f[9];
        int nf = nbody_fields(t, f);
        char *endp;
        if (!seen_data && isalpha((unsigned char)f[0][0]) && (strtod(f[0], &endp), endp == f[0])) {
            /* the header: exactly the seven names */
            if (nf != 7) {
                rc = cls_fail_line(err, CLS_EINPUT, lineno,
                                   "%s:%lld: header has %d columns, expected x,y,z,vx,vy,vz,m",
                                   name, lineno, nf > 8 ? 9 : nf);
                break;
            }
            for (int c = 0; c < 7; c++)
                if (strcmp(f[c], nbody_cols[c])) {
                    rc = cls_fail_line(err, CLS_EINPUT, lineno,
                                       "%s:%lld: header column %d is '%s', expected '%s' "
                                       "(columns x,y,z,vx,vy,vz,m)",
                                       name, lineno, c + 1, f[c], nbody_cols[c]);
                    break;
                }
            if (rc)
                break;
            seen_data = 1;
            continue;
        }
        seen_data = 1;
        if (nf != 7) {
            rc = cls_fail_line(err, CLS_EINPUT, lineno,
                               "%s:%lld: expected 7 comma-separated values (x,y,z,vx,vy,vz,m), "
                               "got %s%d",
                               name, lineno, nf > 8 ? "more than " : "", nf > 8 ? 8 : nf);
            break;
        }
        double val[7];
        for (int c = 0; c < 7 && !rc; c++) {
            char *end;
            errno = 0;
            val[c] = strtod(f[c], &end);
            if (end == f[c] || *end)
                rc = cls_fail_line(err, CLS_EINPUT, lineno, "%s:%lld: %s: '%s' is not a number",
                                   name, lineno, nbody_cols[c], f[c]);
            else if (!isfinite(val[c]))
                rc = cls_fail_line(err, CLS_EINPUT, lineno,
                                   "%s:%lld: %s: '%s' is not a finite number", name, lineno,
                                   nbody_cols[c], f[c]);
        }
        if (rc)
            break;
        if (val[6] < 0.0) {
            rc = cls_fail_line(err, CLS_EINPUT, lineno, "%s:%lld: mass %g is negative", name,
                               lineno, val[6]);
            break;
        }
        if (n == INT32_MAX) {
            rc = cls_fail_line(err, CLS_EINPUT, lineno, "%s:%lld: more than %d bodies", name,
                               lineno, INT32_MAX);
            break;
        }
        if (n == cap) {
            int64_t nc = cap ? 2 * cap : 1024;
            double *x = realloc(s->x, 3 * (size_t)nc * sizeof *x);
            if (x)
                s->x = x;
            double *v = realloc(s->v, 3 * (size_t)nc * sizeof *v);
            if (v)
                s->v = v;
            double *m = realloc(s->m, (size_t)nc * sizeof *m);
            if (m)
                s->m = m;
            if (!x || !v || !m) {
                rc = nbody_oom(err);
                break;
            }
            cap = nc;
        }
        for (int c = 0; c < 3; c++) {
            s->x[3 * n + c] = val[c];
            s->v[3 * n + c] = val[3 + c];
        }
        s->m[n] = val[6];
        n++;
    }
    free(line);
    if (!rc && n == 0)
        rc = cls_fail_line(err, CLS_EINPUT, lineno ? lineno : 1, "%s:%lld: no bodies", name,
                           lineno ? lineno : 1);
    if (rc) {
        nbody_free(s);
        return rc;
    }
    s->n = n;
    return CLS_OK;
}

int nbody_read_csv(const char *path, nbody_system *s, cls_error *err)
{
    nbody_init(s);
    char *buf = NULL;
    size_t len = 0;
    int rc = phys_read_file(path, &buf, &len, err);
    if (rc)
        return rc;
    rc = nbody_read_csv_buf(buf, len, path, s, err);
    free(buf);
    return rc;
}

int nbody_write_csv(const char *path, const nbody_system *s, cls_error *err)
{
    phys_file pf;
    int rc = phys_refuse_nonfinite(path, "the position", s->x, s->n, 3, err);
    if (!rc)
        rc = phys_refuse_nonfinite(path, "the velocity", s->v, s->n, 3, err);
    if (!rc)
        rc = phys_refuse_nonfinite(path, "the mass", s->m, s->n, 1, err);
    if (!rc)
        rc = phys_file_open(&pf, path, err);
    if (rc)
        return rc;
    fputs("x,y,z,vx,vy,vz,m\n", pf.f);
    for (int64_t i = 0; i < s->n; i++)
        fprintf(pf.f, "%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", s->x[3 * i], s->x[3 * i + 1],
                s->x[3 * i + 2], s->v[3 * i], s->v[3 * i + 1], s->v[3 * i + 2], s->m[i]);
    return phys_file_commit(&pf, err);
}

/* ---- CPU reference ------------------------------------------------------- */

void nbody_accel_ref_one(const nbody_system *s, double eps2, int64_t i, double a[3])
{
    double ax = 0, ay = 0, az = 0;
    const double *xi = s->x + 3 * i;
    for (int64_t j = 0; j < s->n; j++) {
        double rx = s->x[3 * j] - xi[0], ry = s->x[3 * j + 1] - xi[1], rz = s->x[3 * j + 2] - xi[2];
        double d2 = rx * rx + ry * ry + rz * rz + eps2; /* |r|^2 + eps2 */
        double inv = 1.0 / sqrt(d2);
        double f = s->m[j] * inv * inv * inv; /* m_j / (|r|^2 + eps2)^(3/2) */
        ax += rx * f;
        ay += ry * f;
        az += rz * f;
    }
    a[0] = ax;
    a[1] = ay;
    a[2] = az;
}

void nbody_accel_ref(const nbody_system *s, double eps2, double *acc)
{
    for (int64_t i = 0; i < s->n; i++)
        nbody_accel_ref_one(s, eps2, i, acc + 3 * i);
}

/* v <- (v + a kick) damping; x <- x + v drift, a from the current x. */
static void nbody_kick_drift(nbody_system *s, double *a, double kick, double drift, double eps2,
                             double damping)
{
    nbody_accel_ref(s, eps2, a);
    for (int64_t i = 0; i < 3 * s->n; i++) {
        s->v[i] = (s->v[i] + a[i] * kick) * damping;
        s->x[i] += s->v[i] * drift;
    }
}

void nbody_run_ref(nbody_system *s, nbody_integrator k, int64_t steps, double dt, double eps2,
                   double damping)
{
    double *a = malloc(3 * (size_t)(s->n ? s->n : 1) * sizeof *a);
    if (!a)
        return;
    for (int64_t t = 0; t < steps; t++) {
        if (k == NBODY_EULER) {
            nbody_kick_drift(s, a, dt, dt, eps2, damping);
            continue;
        }
        /* kick-drift-kick, the same merged launches as the device: half
         * kick and drift first, full kicks between, a closing half kick */
        nbody_kick_drift(s, a, t == 0 ? 0.5 * dt : dt, dt, eps2, damping);
        if (t == steps - 1)
            nbody_kick_drift(s, a, 0.5 * dt, 0.0, eps2, damping);
    }
    free(a);
}

double nbody_kinetic(const nbody_system *s)
{
    double k = 0;
    for (int64_t i = 0; i < s->n; i++) {
        const double *v = s->v + 3 * i;
        k += 0.5 * s->m[i] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    }
    return k;
}

double nbody_potential_ref(const nbody_system *s, double eps2)
{
    double w = 0;
    for (int64_t i = 0; i < s->n; i++)
        for (int64_t j = i + 1; j < s->n; j++) {
            double d[3];
            for (int c = 0; c < 3; c++)
                d[c] = s->x[3 * j + c] - s->x[3 * i + c];
            w -= s->m[i] * s->m[j] / sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2);
        }
    return w;
}

void nbody_momentum(const nbody_system *s, double p[3])
{
    p[0] = p[1] = p[2] = 0.0;
    for (int64_t i = 0; i < s->n; i++)
        for (int c = 0; c < 3; c++)
            p[c] += s->m[i] * s->v[3 * i + c];
}

void nbody_angular_momentum(const nbody_system *s, double l[3])
{
    l[0] = l[1] = l[2] = 0.0;
    for (int64_t i = 0; i < s->n; i++) {
        const double *x = s->x + 3 * i, *v = s->v + 3 * i;
        l[0] += s->m[i] * (x[1] * v[2] - x[2] * v[1]);
        l[1] += s->m[i] * (x[2] * v[0] - x[0] * v[2]);
        l[2] += s->m[i] * (x[0] * v[1] - x[1] * v[0]);
    }
}
