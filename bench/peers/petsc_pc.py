#!/usr/bin/env python3
"""petsc_pc.py: PETSc's preconditioned CG as the peer of clsolve's
preconditioners (bench/precond.sh, bench/precond-pocl.sh).

Solves A x = b with b = A*1 (as clsolve does without -b), KSPCG, the
UNPRECONDITIONED residual norm and rtol as clsolve's --tol, for each
preconditioner asked for, --repeat times from scratch (medians):

  none, jacobi   PCNONE, PCJACOBI
  icc            PCICC on one rank; PCBJACOBI with ICC(0) per block on
                 several (PETSc's usual parallel ICC, as clsolve's ic0)
  gamg           PCGAMG (smoothed aggregation, PETSc's defaults)
  hypre          PCHYPRE BoomerAMG (when PETSc was built with hypre)

The matrix is a Matrix Market file (--mtx) or the 7-point poisson3d N^3
stencil clsolve's `gen:poisson3d:N` builds (--poisson N), natural ordering,
each rank assembling its own rows. Times: set-up (PCSetUp, i.e. KSPSetUp)
and solve (KSPSolve), wall clock with barriers.
Under mpirun:

  mpirun -np 2 /usr/bin/python3 bench/peers/petsc_pc.py --poisson 64 --pc gamg,hypre

Prints one JSON line per preconditioner: peer, pc, ranks, rows, nnz,
iterations, converged, setup_s, solve_s, total_s (set-up + solve; medians)
and total_min_s.
Debian's petsc4py lives under /usr/lib/petscdir; the path is added here.
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


def poisson(n):
    """The 7-point stencil on n^3, natural ordering, Dirichlet boundary (as
    clsolve's gen:poisson3d:N); each rank assembles its own rows, vectorized
    (numpy), so 320^3 takes seconds rather than the hours of a Python loop."""
    import numpy as np
    N = n * n * n
    comm = PETSc.COMM_WORLD
    size, rank = comm.getSize(), comm.getRank()
    r0 = (N // size) * rank + min(rank, N % size)
    r1 = r0 + N // size + (1 if rank < N % size else 0)
    rows = np.arange(r0, r1, dtype=np.int64)
    z, rem = np.divmod(rows, n * n)
    y, x = np.divmod(rem, n)
    cols, vals = [], []
    for dz, dy, dx in ((-1, 0, 0), (0, -1, 0), (0, 0, -1), (0, 0, 0), (0, 0, 1), (0, 1, 0), (1, 0, 0)):
        ok = (x + dx >= 0) & (x + dx < n) & (y + dy >= 0) & (y + dy < n) & (z + dz >= 0) & (z + dz < n)
        c = np.where(ok, rows + dz * n * n + dy * n + dx, -1)
        cols.append(c)
        vals.append(np.where(ok, 6.0 if (dx, dy, dz) == (0, 0, 0) else -1.0, 0.0))
    C = np.stack(cols, axis=1)  # columns ascending per row: the offsets are in that order
    V = np.stack(vals, axis=1)
    keep = C >= 0
    indptr = np.concatenate(([0], np.cumsum(keep.sum(axis=1)))).astype(PETSc.IntType)
    indices = C[keep].astype(PETSc.IntType)
    data = V[keep].astype(PETSc.ScalarType)
    A = PETSc.Mat().createAIJ([(r1 - r0, N), (r1 - r0, N)], csr=(indptr, indices, data), comm=comm)
    A.assemblyBegin()
    A.assemblyEnd()
    return A


def mtx(path):
    """Matrix Market coordinate (symmetric or general) read on every rank,
    each keeping its own rows."""
    rows, cols, vals = [], [], []
    sym = False
    with open(path) as f:
        head = f.readline().lower()
        sym = "symmetric" in head
        pattern = "pattern" in head
        line = f.readline()
        while line.startswith("%"):
            line = f.readline()
        m, n, _ = (int(t) for t in line.split())
        for line in f:
            t = line.split()
            if not t:
                continue
            i, j = int(t[0]) - 1, int(t[1]) - 1
            v = 1.0 if pattern else float(t[2])
            rows.append(i), cols.append(j), vals.append(v)
            if sym and i != j:
                rows.append(j), cols.append(i), vals.append(v)
    A = PETSc.Mat().createAIJ([m, n], comm=PETSc.COMM_WORLD)
    A.setPreallocationNNZ(64)
    A.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, False)
    A.setUp()
    r0, r1 = A.getOwnershipRange()
    for i, j, v in zip(rows, cols, vals):
        if r0 <= i < r1:
            A.setValue(i, j, v, addv=PETSc.InsertMode.ADD_VALUES)
    A.assemblyBegin()
    A.assemblyEnd()
    return A


def solve(A, pcname, tol, repeat):
    """repeat set-ups and solves, each from scratch (a new KSP): lists of
    set-up and solve seconds, the iterations, converged"""
    comm = PETSc.COMM_WORLD
    x, b = A.createVecs()
    ones = b.duplicate()
    ones.set(1.0)
    A.mult(ones, b)
    setups, solves, its, conv = [], [], 0, False
    for _ in range(repeat):
        ksp = PETSc.KSP().create(comm)
        ksp.setOperators(A)
        ksp.setType("cg")
        ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
        ksp.setTolerances(rtol=tol, atol=0.0, max_it=100000)
        pc = ksp.getPC()
        if pcname == "icc":
            if comm.getSize() == 1:
                pc.setType("icc")
            else:  # PETSc's parallel ICC: block Jacobi, ICC(0) per block
                pc.setType("bjacobi")
                PETSc.Options()["sub_pc_type"] = "icc"
                ksp.setFromOptions()
        elif pcname == "hypre":
            pc.setType("hypre")
            pc.setHYPREType("boomeramg")
        else:
            pc.setType(pcname)
        x.set(0.0)
        comm.barrier()
        t0 = time.perf_counter()
        ksp.setUp()
        comm.barrier()
        t1 = time.perf_counter()
        ksp.solve(b, x)
        comm.barrier()
        t2 = time.perf_counter()
        setups.append(t1 - t0)
        solves.append(t2 - t1)
        its = ksp.getIterationNumber()
        conv = ksp.getConvergedReason() > 0
        ksp.destroy()
    return its, conv, setups, solves


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--poisson", type=int)
    g.add_argument("--mtx")
    ap.add_argument("--pc", default="icc,gamg,hypre")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    A = poisson(a.poisson) if a.poisson else mtx(a.mtx)
    name = "poisson3d-%d" % a.poisson if a.poisson else a.mtx.split("/")[-1]
    for pcname in a.pc.split(","):
        try:
            its, conv, setups, solves = solve(A, pcname, a.tol, a.repeat)
            tts = [u + v for u, v in zip(setups, solves)]
            out = {"peer": "petsc", "pc": pcname, "matrix": name, "ranks": PETSc.COMM_WORLD.getSize(),
                   "rows": A.getSize()[0], "nnz": int(A.getInfo(PETSc.Mat.InfoType.GLOBAL_SUM)["nz_used"]),
                   "iterations": its, "converged": conv,
                   "setup_s": statistics.median(setups), "solve_s": statistics.median(solves),
                   "total_s": statistics.median(tts), "total_min_s": min(tts),
                   "petsc": ".".join(map(str, PETSc.Sys.getVersion()))}
        except PETSc.Error as e:
            out = {"peer": "petsc", "pc": pcname, "matrix": name, "error": str(e)}
        if PETSc.COMM_WORLD.getRank() == 0:
            print(json.dumps(out), flush=True)
    # petsc4py 3.18 under Open MPI can spin in MPI_Finalize after the work is
    # done: every rank leaves here instead (as bench/amg_petsc.py)
    PETSc.COMM_WORLD.barrier()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
