/*
 * pc_jacobi.c: Jacobi, M = D: z = D^-1 r, the diagonal the common layer
 * builds (needs_diag). CG keeps a fused path for it (the identity
 * r'D^-1 r of cg.c and dcg.c), so this apply serves pipelined CG, the
 * reference loops and the one-part callers.
 */
#include "pc_kind.h"

static int pc_jacobi_apply_part(pc *pc, int k, const la_vec *r, la_vec *z, cls_error *err)
{
    la_vec d = pc_loc(pc->s, &pc->dinv, k);
    return la_pointwise(&pc->s->parts[k].la, &d, r, z, err);
}

const pc_kind pc_jacobi_kind = {.needs_diag = 1, .apply_part = pc_jacobi_apply_part};
