/*
 * halo.cl: packing the halo on the device. A part sends its neighbours the
 * entries of x listed in its send list (halo.h); halo_pack gathers them into
 * one contiguous buffer, which the host reads back and hands to MPI (or
 * copies to another device of the same rank). There is no unpack kernel:
 * ghosts are numbered after the local entries and sorted by owner, so the
 * received buffer is the ghost tail of x verbatim and is written there with
 * one clEnqueueWriteBuffer (as HPCG receives straight into x's tail).
 */

/* buf[k] = x[idx[k]], k < n */
__kernel void halo_pack(const int n, __global const int *restrict idx,
                        __global const real *restrict x, __global real *restrict buf)
{
    for (int k = (int)get_global_id(0); k < n; k += (int)get_global_size(0))
        buf[k] = x[idx[k]];
}
