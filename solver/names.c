/*
 * names.c: the solver's choices by name (see names.h). One table per
 * choice: a new precision is one row here; a new method is one row of
 * krylov/methods.def, whose names this table is made from; every entry
 * point accepts it. The preconditioners' names
 * (PETSc's aliases included) have one table of their own, pc_options.c's,
 * which these functions ask: a preconditioner added there is accepted here.
 */
#include "names.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    solver_method value;
} methods[] = {
    {"auto", SOLVER_AUTO},
#define KSP_METHOD(name, id, solve, solve_block, summary) {name, id},
#include "krylov/methods.def"
#undef KSP_METHOD
};

static const struct {
    const char *name;
    la_precision value;
} precisions[] = {
    {"double", LA_DOUBLE},
    {"float", LA_FLOAT},
    {"mixed", LA_MIXED},
};

static const struct {
    const char *name;
    la_backend value;
} backends[] = {
    {"auto", LA_BACKEND_AUTO},
    {"opencl", LA_BACKEND_OPENCL},
    {"native", LA_BACKEND_NATIVE},
};

#define NAMES_FIND(table, name, out)                                                               \
    do {                                                                                           \
        for (size_t i_ = 0; name && i_ < sizeof table / sizeof table[0]; i_++)                     \
            if (!strcmp(name, table[i_].name)) {                                                   \
                *(out) = table[i_].value;                                                          \
                return 0;                                                                          \
            }                                                                                      \
        return -1;                                                                                 \
    } while (0)

int solver_precond_parse(const char *name, solver_precond *p)
{
    return pc_parse_name(name, p);
}
int solver_method_parse(const char *name, solver_method *m)
{
    NAMES_FIND(methods, name, m);
}
int solver_precision_parse(const char *name, la_precision *p)
{
    NAMES_FIND(precisions, name, p);
}

int solver_backend_parse(const char *name, la_backend *b)
{
    NAMES_FIND(backends, name, b);
}
const char *solver_backend_name(la_backend b)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (backends[i].value == b)
            return backends[i].name;
    return "?";
}

const char *solver_precond_choices(void)
{
    return pc_names_help();
}
const char *solver_method_choices(void)
{
    static char text[256];
    if (!text[0]) { /* "cg or pipecg": the rows' names */
        const char *w[sizeof methods / sizeof methods[0]];
        for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
            w[i] = methods[i].name;
        cls_list_words(text, sizeof text, w, sizeof methods / sizeof methods[0]);
    }
    return text;
}
const char *solver_precision_choices(void)
{
    return "double, float or mixed";
}
const char *solver_backend_choices(void)
{
    return "auto, opencl or native";
}
