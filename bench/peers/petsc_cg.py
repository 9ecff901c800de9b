#!/usr/bin/env python3
"""petsc_cg.py: PETSc's KSPCG as a peer for clsolve's CG timings.

Runs a fixed number of CG iterations (no preconditioner, or Jacobi with
--pc jacobi; double, the
unpreconditioned residual norm as clsolve uses) on the same generated
stencil matrix clsolve builds (7-point poisson3d by default, natural
ordering, Dirichlet boundary), so the two report milliseconds per iteration
on identical work. Run under mpirun for several ranks:

  mpirun -np 2 /usr/bin/python3 bench/peers/petsc_cg.py --n 64 --iters 200

Prints one JSON line: peer, ranks, rows, nnz, iterations, ms_per_iteration.
Debian's petsc4py lives under /usr/lib/petscdir; the path is added here.
"""
import argparse
import glob
import json
import os
import sys
import time

for p in glob.glob("/usr/lib/petscdir/petsc*/x86_64-linux-gnu-real/lib/python3/dist-packages"):
    sys.path.insert(0, p)
import petsc4py  # noqa: E402

petsc4py.init(sys.argv[:1])
from petsc4py import PETSc  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from petsc_pc import poisson  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pc", choices=("none", "jacobi"), default="none")
    a = ap.parse_args()
    n = a.n
    N = n * n * n
    A = poisson(n)  # petsc_pc.py's: each rank its rows, vectorized (a Python loop took minutes)
    xs, b = A.createVecs()
    ones = b.duplicate()
    ones.set(1.0)
    A.mult(ones, b)  # b = A*1, as clsolve does
    ksp = PETSc.KSP().create(PETSc.COMM_WORLD)
    ksp.setOperators(A)
    ksp.setType("cg")
    ksp.getPC().setType(a.pc)
    ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
    ksp.setTolerances(rtol=1e-30, atol=0.0, max_it=a.iters)
    ksp.setConvergenceTest(lambda *args: 0)  # run exactly max_it iterations
    best = None
    times = []
    for _ in range(a.repeat):
        xs.set(0.0)
        PETSc.COMM_WORLD.barrier()
        t = time.perf_counter()
        ksp.solve(b, xs)
        PETSc.COMM_WORLD.barrier()
        dt = time.perf_counter() - t
        its = ksp.getIterationNumber()
        ms = 1e3 * dt / max(its, 1)
        times.append(ms)
        best = ms if best is None else min(best, ms)
    # the global nonzero count is a reduction: every rank asks (asked on rank 0
    # alone it waited for the others, which sat in MPI_Finalize: the "hang")
    nnz = int(A.getInfo(PETSc.Mat.InfoType.GLOBAL_SUM)["nz_used"])
    if PETSc.COMM_WORLD.getRank() == 0:
        print(json.dumps({"peer": "petsc-kspcg", "petsc": ".".join(map(str, PETSc.Sys.getVersion())),
                          "ranks": PETSc.COMM_WORLD.getSize(), "pc": a.pc, "rows": N, "nnz": nnz,
                          "iterations": its, "ms_per_iteration": best,
                          "ms_per_iteration_median": sorted(times)[len(times) // 2]}))


if __name__ == "__main__":
    main()
    sys.stdout.flush()
