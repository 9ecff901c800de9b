/*
 * names.h: the names of the solver's choices, parsed in one place. The
 * command line (clsolve solve, clsolve submit) and the daemon's job
 * parameters (net/job_params.c) all take a preconditioner, a method and a
 * precision (and a CPU device's backend) through these functions, so a name the solver learns (a
 * new preconditioner) is accepted everywhere at once, with the same message.
 */
#ifndef CLS_SOLVER_NAMES_H
#define CLS_SOLVER_NAMES_H

#include "krylov/krylov.h"
#include "pc/pc_options.h"

/* 0 and *p set, or -1 for a name that is not one of the choices. The
 * preconditioner's name is pc_parse_name's (pc_options.h, the one table of
 * the names and PETSc's aliases); its parameters (precond_degree, ...) are
 * pc_options_set's. */
int solver_precond_parse(const char *name, solver_precond *p);
int solver_method_parse(const char *name, solver_method *m);
int solver_precision_parse(const char *name, la_precision *p);
int solver_backend_parse(const char *name, la_backend *b); /* auto | opencl | native */
const char *solver_backend_name(la_backend b);

/* The choices for messages: pc_names_help()'s list, "cg or pipecg",
 * "double, float or mixed". */
const char *solver_precond_choices(void);
const char *solver_method_choices(void);
const char *solver_precision_choices(void);
const char *solver_backend_choices(void);

#endif
