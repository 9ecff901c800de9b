#!/usr/bin/env python3
"""amg_petsc.py: PETSc's AMG preconditioners as peers of clsolve's AMG.

KSPCG with PCGAMG (PETSc's defaults) or hypre's BoomerAMG, double, on the
same systems bench_amg solves: the 7-point poisson3d N (natural ordering,
Dirichlet boundary, as clsolve's generator) or a Matrix Market file,
b = A 1, x0 = 0, relative tolerance 1e-8 on the unpreconditioned residual
norm. Set-up (PCSetUp) and solve are timed apart; REPEAT runs, min and
median. Under mpirun for several ranks:

  mpirun -np 2 /usr/bin/python3 bench/amg_petsc.py --n 64 --pc gamg

Prints one JSON line: peer, pc, ranks, rows, nnz, iterations, setup_s,
solve_s, time_to_solution_s (min over repeats), their medians, levels.
"""
import argparse
import glob
import json
import os
import statistics
import sys
import time

for p in glob.glob("/usr/lib/petscdir/petsc*/x86_64-linux-gnu-real/lib/python3/dist-packages"):
    sys.path.insert(0, p)
import petsc4py  # noqa: E402

petsc4py.init(sys.argv[:1])
from petsc4py import PETSc  # noqa: E402


def poisson3d(n):
    N = n * n * n
    A = PETSc.Mat().createAIJ([N, N], nnz=7, comm=PETSc.COMM_WORLD)
    A.setUp()
    r0, r1 = A.getOwnershipRange()
    for row in range(r0, r1):
        z, rem = divmod(row, n * n)
        y, x = divmod(rem, n)
        cols, vals = [], []
        for dz, dy, dx in ((-1, 0, 0), (0, -1, 0), (0, 0, -1), (0, 0, 0), (0, 0, 1), (0, 1, 0), (1, 0, 0)):
            xx, yy, zz = x + dx, y + dy, z + dz
            if 0 <= xx < n and 0 <= yy < n and 0 <= zz < n:
                cols.append((zz * n + yy) * n + xx)
                vals.append(6.0 if (dx, dy, dz) == (0, 0, 0) else -1.0)
        A.setValues([row], cols, vals)
    A.assemblyBegin()
    A.assemblyEnd()
    return A


def from_file(path):
    import scipy.io
    import scipy.sparse
    M = scipy.sparse.csr_matrix(scipy.io.mmread(path))
    A = PETSc.Mat().createAIJ(M.shape, comm=PETSc.COMM_WORLD)
    A.setUp()
    r0, r1 = A.getOwnershipRange()
    for i in range(r0, r1):
        s, e = M.indptr[i], M.indptr[i + 1]
        A.setValues([i], M.indices[s:e].tolist(), M.data[s:e].tolist())
    A.assemblyBegin()
    A.assemblyEnd()
    return A


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--matrix", default=None, help="a .mtx file instead of poisson3d N")
    ap.add_argument("--pc", default="gamg", choices=["gamg", "hypre", "jacobi"])
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    A = from_file(a.matrix) if a.matrix else poisson3d(a.n)
    xs, b = A.createVecs()
    ones = b.duplicate()
    ones.set(1.0)
    A.mult(ones, b)
    setups, solves, its, levels = [], [], 0, 0
    for _ in range(a.repeat):
        ksp = PETSc.KSP().create(PETSc.COMM_WORLD)
        ksp.setOperators(A)
        ksp.setType("cg")
        pc = ksp.getPC()
        if a.pc == "hypre":
            pc.setType("hypre")
            pc.setHYPREType("boomeramg")
        else:
            pc.setType(a.pc)
        ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
        ksp.setTolerances(rtol=a.tol, atol=0.0, max_it=100000)
        ksp.setFromOptions()
        xs.set(0.0)
        PETSc.COMM_WORLD.barrier()
        t = time.perf_counter()
        ksp.setUp()
        pc.setUp()
        PETSc.COMM_WORLD.barrier()
        setups.append(time.perf_counter() - t)
        t = time.perf_counter()
        ksp.solve(b, xs)
        PETSc.COMM_WORLD.barrier()
        solves.append(time.perf_counter() - t)
        its = ksp.getIterationNumber()
        if a.pc == "gamg":
            try:
                levels = pc.getMGLevels()
            except Exception:
                levels = 0
        ksp.destroy()
    tts = [s + v for s, v in zip(setups, solves)]
    if PETSc.COMM_WORLD.getRank() == 0:
        print(json.dumps({"peer": "petsc", "pc": a.pc, "petsc": ".".join(map(str, PETSc.Sys.getVersion())),
                          "ranks": PETSc.COMM_WORLD.getSize(), "rows": A.getSize()[0],
                          "nnz": int(A.getInfo(PETSc.Mat.InfoType.GLOBAL_SUM)["nz_used"]),
                          "iterations": its, "levels": levels,
                          "setup_s": min(setups), "solve_s": min(solves), "time_to_solution_s": min(tts),
                          "setup_median_s": statistics.median(setups), "solve_median_s": statistics.median(solves),
                          "time_to_solution_median_s": statistics.median(tts)}), flush=True)
    # petsc4py 3.18 under Open MPI can spin in MPI_Finalize after the work is
    # done (minutes of a core): every rank leaves here instead
    PETSc.COMM_WORLD.barrier()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
