#!/usr/bin/env python3
"""petsc_pc.py: PETSc's preconditioned CG as the peer of clsolve's
preconditioners (bench/precond.sh, bench/precond-pocl.sh).

Solves A x = b with b = A*1 (as clsolve does without -b), KSPCG, the
UNPRECONDITIONED residual norm and rtol as clsolve's --tol, for each
preconditioner asked for:

  none, jacobi   PCNONE, PCJACOBI
  icc            PCICC on one rank; PCBJACOBI with ICC(0) per block on
                 several (PETSc's usual parallel ICC, as clsolve's ic0)
  gamg           PCGAMG (smoothed aggregation, PETSc's defaults)
  hypre          PCHYPRE BoomerAMG (when PETSc was built with hypre)

The matrix is a Matrix Market file (--mtx) or the 7-point poisson3d N^3
stencil clsolve's `gen:poisson3d:N` builds (--poisson N), natural ordering,
each rank assembling its own rows. Times: set-up (PCSetUp, i.e. KSPSetUp)
and solve (KSPSolve), wall clock with barriers, the best of --repeat runs
for the solve; the set-up is paid once, in the first run, as a user would.
Under mpirun:

  mpirun -np 2 /usr/bin/python3 bench/peers/petsc_pc.py --poisson 64 --pc gamg,hypre

Prints one JSON line per preconditioner: peer, pc, ranks, rows, nnz,
iterations, converged, setup_s, solve_s, total_s (set-up + solve).
Debian's petsc4py lives under /usr/lib/petscdir; the path is added here.
"""
import argparse
import glob
import json
import sys
import time

for p in glob.glob("/usr/lib/petscdir/petsc*/x86_64-linux-gnu-real/lib/python3/dist-packages"):
    sys.path.insert(0, p)
import petsc4py  # noqa: E402

petsc4py.init(sys.argv[:1])
from petsc4py import PETSc  # noqa: E402


def poisson(n):
    N = n * n * n
    A = PETSc.Mat().createAIJ([N, N], nnz=(7, 6), comm=PETSc.COMM_WORLD)
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
    comm = PETSc.COMM_WORLD
    x, b = A.createVecs()
    ones = b.duplicate()
    ones.set(1.0)
    A.mult(ones, b)
    ksp = PETSc.KSP().create(comm)
    ksp.setOperators(A)
    ksp.setType("cg")
    ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
    ksp.setTolerances(rtol=tol, atol=0.0, max_it=100000)
    pc = ksp.getPC()
    if pcname == "icc":
        if comm.getSize() == 1:
            pc.setType("icc")
        else:
            pc.setType("bjacobi")
            opts = PETSc.Options()
            opts["sub_pc_type"] = "icc"
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
    setup = time.perf_counter() - t0
    best = None
    for _ in range(repeat):
        x.set(0.0)
        comm.barrier()
        t = time.perf_counter()
        ksp.solve(b, x)
        comm.barrier()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    its = ksp.getIterationNumber()
    conv = ksp.getConvergedReason() > 0
    return its, conv, setup, best


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
            its, conv, setup, sol = solve(A, pcname, a.tol, a.repeat)
            out = {"peer": "petsc", "pc": pcname, "matrix": name, "ranks": PETSc.COMM_WORLD.getSize(),
                   "rows": A.getSize()[0], "nnz": int(A.getInfo()["nz_used"]), "iterations": its,
                   "converged": conv, "setup_s": setup, "solve_s": sol, "total_s": setup + sol,
                   "petsc": ".".join(map(str, PETSc.Sys.getVersion()))}
        except PETSc.Error as e:
            out = {"peer": "petsc", "pc": pcname, "matrix": name, "error": str(e)}
        if PETSc.COMM_WORLD.getRank() == 0:
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
