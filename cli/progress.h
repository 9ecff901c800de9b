/*
 * progress.h: the progress line of `clsolve solve` and of the client
 * commands that wait for a job, on a terminal (stderr):
 *
 *   uploading A.mtx   45%  12.3 of 27.0 MB   0:03
 *   parsing           0:02
 *   setting up        0:01
 *   solving           0:12  iteration 4120  residual 3.21e-07  [########........]  ETA 0:05
 *
 * The phase and how long it has run; while solving, the iteration, the
 * residual, a bar of the way from the initial residual down to tol on a
 * log scale that never goes back (CG's residual is not monotone), and the
 * time left at the residual's rate, never past the iteration cap
 * (common/eta.h). Redrawn at most four times a second, in place, and erased
 * when the command prints its result; nothing at all when stderr is not a
 * terminal.
 */
#ifndef CLS_CLI_PROGRESS_H
#define CLS_CLI_PROGRESS_H

#include <stdint.h>

typedef struct cli_progress {
    int tty, shown;
    double start, phase_start, last_draw;
    char phase[24];
    double l0;   /* log10 of the first residual seen while solving */
    double frac; /* the bar: the most of the way seen so far */
} cli_progress;

/* tty: draw at all (isatty(2) of the caller's process). */
void cli_progress_init(cli_progress *p, int tty);
/* The phase now ("parsing", "setting_up", ...): its clock restarts. */
void cli_progress_phase(cli_progress *p, const char *phase);
/* Draws the line (at most four times a second unless force). it < 0: no
 * iteration yet; eta < 0: unknown. */
void cli_progress_draw(cli_progress *p, int64_t it, double res, double tol, double eta, int force);
/* An upload: name, bytes sent of total. */
void cli_progress_upload(cli_progress *p, const char *name, double sent, double total);
/* Erases the line, when one was drawn (\r and erase-line), so that what
 * is printed next starts on a clean line. */
void cli_progress_end(cli_progress *p);

#endif
