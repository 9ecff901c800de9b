/*
 * pc_none.c: no preconditioner, M = I: z = r. The Krylov methods take
 * their unpreconditioned paths and never call it; pipelined CG and the
 * reference loops may.
 */
#include "pc_kind.h"

static int pc_none_apply_part(pc *pc, int k, const la_vec *r, la_vec *z, cls_error *err)
{
    return la_copy(&pc->s->parts[k].la, r, z, err);
}

const pc_kind pc_none_kind = {.apply_part = pc_none_apply_part};
