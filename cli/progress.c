/*
 * progress.c: the progress line (see progress.h).
 */
#include "progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/timer.h"

void cli_progress_init(cli_progress *p, int tty)
{
    memset(p, 0, sizeof *p);
    p->tty = tty;
    p->start = p->phase_start = cls_now();
    p->last_draw = -1;
    p->l0 = NAN;
}

void cli_progress_phase(cli_progress *p, const char *phase)
{
    if (strcmp(p->phase, phase) != 0) {
        snprintf(p->phase, sizeof p->phase, "%s", phase);
        p->phase_start = cls_now();
    }
}

/* "0:05", "12:03", "1:02:03" */
static void fmt_time(double s, char *out, size_t cap)
{
    if (!(s >= 0) || !isfinite(s) || s > 360000) {
        snprintf(out, cap, "?");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(out, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(out, cap, "%ld:%02ld", t / 60, t % 60);
}

static int due(cli_progress *p, int force)
{
    double now = cls_now();
    if (!p->tty || (!force && p->last_draw >= 0 && now - p->last_draw < 0.25))
        return 0;
    p->last_draw = now;
    p->shown = 1;
    return 1;
}

void cli_progress_draw(cli_progress *p, int64_t it, double res, double tol, double eta, int force)
{
    int solving = !strcmp(p->phase, "solving");
    if (solving && res > 0 && isfinite(res) && tol > 0) {
        double l = log10(res), lt = log10(tol);
        if (isnan(p->l0))
            p->l0 = l > 0 ? l : 0; /* the bar starts at the first residual (or 1) */
        double f = p->l0 > lt ? (p->l0 - l) / (p->l0 - lt) : 1;
        if (f > p->frac)
            p->frac = f > 1 ? 1 : f; /* never back */
    }
    if (!due(p, force))
        return;
    char el[24], name[24];
    fmt_time(cls_now() - p->phase_start, el, sizeof el);
    snprintf(name, sizeof name, "%s", p->phase[0] ? p->phase : "starting");
    for (char *c = name; *c; c++)
        if (*c == '_')
            *c = ' ';
    fprintf(stderr, "\r  %-12s %7s", name, el);
    /* iteration, bar and ETA only once a residual is known: a daemon's first
       solving report can come before the first residual (iteration 0, null) */
    if (solving && it >= 0 && isfinite(res)) {
        char bar[21], et[24];
        int n = (int)(p->frac * 20 + 1e-9);
        for (int i = 0; i < 20; i++)
            bar[i] = i < n ? '#' : '.';
        bar[20] = '\0';
        fprintf(stderr, "  iteration %-8lld  residual %.2e", (long long)it, res);
        fprintf(stderr, "  [%s]", bar);
        if (eta >= 0) {
            fmt_time(eta, et, sizeof et);
            fprintf(stderr, "  ETA %s", et);
        }
    }
    fputs("\033[K", stderr); /* the rest of an older, longer line */
    fflush(stderr);
}

void cli_progress_upload(cli_progress *p, const char *name, double sent, double total)
{
    /* the last 100% is drawn once, however long the answer takes */
    int complete = total > 0 && sent >= total;
    if ((complete && p->frac >= 1) || !due(p, complete))
        return;
    p->frac = complete ? 1 : 0;
    char el[24];
    fmt_time(cls_now() - p->start, el, sizeof el);
    fprintf(stderr, "\r  uploading %s  %3.0f%%  %.1f of %.1f MB  %s\033[K", name,
            total > 0 ? 100.0 * sent / total : 0.0, sent / 1e6, total / 1e6, el);
    fflush(stderr);
}

void cli_progress_end(cli_progress *p)
{
    /* erased, not ended with a newline: a last "done 0:00" or "gathering
       0:00" left above the summary reads as if something still ran */
    if (p->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    p->shown = 0;
}
