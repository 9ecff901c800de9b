/*
 * cpu_vec.c: the vector passes of the native CPU CG (cpu_ops.h), the twins
 * of cgc_update, cgc_direction and cgf_update (cg_classic.cl,
 * cg_fused.cl) and of pcgf_update and pcgf_dots (pcg_fused.cl), with the
 * same operations in the same order per entry.
 *
 * The dot products run four independent accumulators over entries i mod 4
 * (added (0+1)+(2+3) at the end): one accumulator would chain every add on
 * the last and bound a memory-speed loop by the add's latency. The order is
 * fixed by the range, so a thread count gives the same bits every run.
 */
#include "cpu_ops.h"

#define SUM4(a) (((a)[0] + (a)[1]) + ((a)[2] + (a)[3]))

void cpu_cgc_update(double alpha, const double *restrict q, double *restrict r,
                    const double *restrict d, int64_t lo, int64_t hi, double out[2])
{
    double rz[4] = {0, 0, 0, 0}, rr[4] = {0, 0, 0, 0};
    int64_t i = lo;
    if (d) {
        for (; i + 4 <= hi; i += 4)
            for (int l = 0; l < 4; l++) {
                const double ri = r[i + l] - alpha * q[i + l];
                r[i + l] = ri;
                rz[l] += ri * (d[i + l] * ri);
                rr[l] += ri * ri;
            }
        for (; i < hi; i++) {
            const double ri = r[i] - alpha * q[i];
            r[i] = ri;
            rz[0] += ri * (d[i] * ri);
            rr[0] += ri * ri;
        }
        out[0] = SUM4(rz);
    } else {
        for (; i + 4 <= hi; i += 4)
            for (int l = 0; l < 4; l++) {
                const double ri = r[i + l] - alpha * q[i + l];
                r[i + l] = ri;
                rr[l] += ri * ri;
            }
        for (; i < hi; i++) {
            const double ri = r[i] - alpha * q[i];
            r[i] = ri;
            rr[0] += ri * ri;
        }
        out[0] = SUM4(rr);
    }
    out[1] = SUM4(rr);
}

void cpu_cgc_direction(double alpha, double beta, double *restrict p, const double *restrict r,
                       const double *restrict d, double *restrict x, int64_t lo, int64_t hi)
{
    if (d)
        for (int64_t i = lo; i < hi; i++) {
            const double pi = p[i];
            x[i] += alpha * pi;
            p[i] = d[i] * r[i] + beta * pi;
        }
    else
        for (int64_t i = lo; i < hi; i++) {
            const double pi = p[i];
            x[i] += alpha * pi;
            p[i] = r[i] + beta * pi;
        }
}

void cpu_cgf_update(double alpha, double beta, double *restrict p, const double *restrict q,
                    double *restrict x, double *restrict r, const double *restrict d, int64_t lo,
                    int64_t hi, double out[2])
{
    double rz[4] = {0, 0, 0, 0}, rr[4] = {0, 0, 0, 0};
    int64_t i = lo;
    for (; i + 4 <= hi; i += 4)
        for (int l = 0; l < 4; l++) {
            const double pi = p[i + l];
            x[i + l] += alpha * pi;
            const double ri = r[i + l] - alpha * q[i + l];
            r[i + l] = ri;
            const double zi = d ? d[i + l] * ri : ri;
            p[i + l] = zi + beta * pi;
            rz[l] += ri * zi;
            rr[l] += ri * ri;
        }
    for (; i < hi; i++) {
        const double pi = p[i];
        x[i] += alpha * pi;
        const double ri = r[i] - alpha * q[i];
        r[i] = ri;
        const double zi = d ? d[i] * ri : ri;
        p[i] = zi + beta * pi;
        rz[0] += ri * zi;
        rr[0] += ri * ri;
    }
    out[0] = SUM4(rz);
    out[1] = SUM4(rr);
}

void cpu_pcg_update(double alpha, double beta, const double *restrict u, const double *restrict w,
                    double *restrict p, double *restrict s, double *restrict x, double *restrict r,
                    int64_t lo, int64_t hi)
{
    for (int64_t i = lo; i < hi; i++) {
        const double pi = u[i] + beta * p[i];
        const double si = w[i] + beta * s[i];
        p[i] = pi;
        s[i] = si;
        x[i] += alpha * pi;
        r[i] -= alpha * si;
    }
}

void cpu_pcg_dots(const double *restrict r, const double *restrict u, int64_t lo, int64_t hi,
                  double out[2])
{
    double ru[4] = {0, 0, 0, 0}, rr[4] = {0, 0, 0, 0};
    int64_t i = lo;
    for (; i + 4 <= hi; i += 4)
        for (int l = 0; l < 4; l++) {
            ru[l] += r[i + l] * u[i + l];
            rr[l] += r[i + l] * r[i + l];
        }
    for (; i < hi; i++) {
        ru[0] += r[i] * u[i];
        rr[0] += r[i] * r[i];
    }
    out[0] = SUM4(ru);
    out[1] = SUM4(rr);
}
