/*
 * methods.c: the table of Krylov methods, made from methods.def's rows:
 * what dsolve runs for --method NAME. It sits above every method file and
 * below the engine, so a method never calls the table back.
 */
#include <stddef.h>

#include "dcg.h"

static const ksp_method ksp_methods[] = {
#define KSP_METHOD(name, id, solve, solve_block, summary) {name, id, solve, solve_block, summary},
#include "methods.def"
#undef KSP_METHOD
};

const ksp_method *ksp_method_get(solver_method id)
{
    for (size_t i = 0; i < sizeof ksp_methods / sizeof ksp_methods[0]; i++)
        if (ksp_methods[i].id == id)
            return &ksp_methods[i];
    return NULL;
}
