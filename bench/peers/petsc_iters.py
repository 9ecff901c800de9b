#!/usr/bin/env python3
"""petsc_iters.py: PETSc's iteration counts for CG and its pipelined variants.

The reference for clsolve's pipelined CG (issue 11, item 4): on the same
Matrix Market file, b = A*1, x0 = 0, the unpreconditioned residual norm and
the same relative tolerance, how many iterations do PETSc's KSPCG,
KSPPIPECG (Ghysels-Vanroose), KSPPIPECGRR (with residual replacement, Cools
et al. 2018) and KSPGROPPCG take?  Prints one JSON line per matrix and
method.

  /usr/bin/python3 bench/peers/petsc_iters.py --tol 1e-10 A.mtx [B.mtx ...]

Needs python3-petsc4py-real and python3-scipy (deploy/install-deps.sh --bench).
"""
import argparse
import glob
import json
import os
import sys

for p in glob.glob("/usr/lib/petscdir/petsc*/x86_64-linux-gnu-real/lib/python3/dist-packages"):
    sys.path.insert(0, p)
import petsc4py  # noqa: E402

petsc4py.init(sys.argv[:1])
from petsc4py import PETSc  # noqa: E402
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tol", type=float, default=1e-10)
    ap.add_argument("--pc", default="none", help="none or jacobi")
    ap.add_argument("--methods", default="cg,pipecg,pipecgrr,groppcg")
    ap.add_argument("--maxit", type=int, default=100000)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    for f in a.files:
        A = sp.csr_matrix(scipy.io.mmread(f), dtype=np.float64)
        n = A.shape[0]
        M = PETSc.Mat().createAIJ(size=A.shape, csr=(A.indptr, A.indices, A.data))
        M.assemble()
        ones = M.createVecRight()
        ones.set(1.0)
        b = M.createVecLeft()
        M.mult(ones, b)
        for meth in a.methods.split(","):
            ksp = PETSc.KSP().create()
            ksp.setOperators(M)
            ksp.setType(meth)
            ksp.getPC().setType(a.pc)
            ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
            ksp.setTolerances(rtol=a.tol, atol=0.0, max_it=a.maxit)
            x = M.createVecRight()
            x.set(0.0)
            ksp.solve(b, x)
            r = b.duplicate()
            M.mult(x, r)
            r.aypx(-1.0, b)
            print(json.dumps({"peer": "petsc", "matrix": os.path.basename(f), "rows": n,
                              "method": meth, "pc": a.pc, "tol": a.tol,
                              "iterations": ksp.getIterationNumber(),
                              "reason": int(ksp.getConvergedReason()),
                              "true_relative_residual": r.norm() / b.norm()}), flush=True)


if __name__ == "__main__":
    main()
