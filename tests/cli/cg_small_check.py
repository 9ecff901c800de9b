#!/usr/bin/env python3
"""cg_small_check.py: the solution check of test_cg_small.sh (numpy, scipy).

  cg_small_check.py xdiff A.mtx x.mtx xref.mtx
      prints "DIFF BOUND" and exits 0 when DIFF <= BOUND, where
      DIFF  = ||x - xref|| / ||xref||
      BOUND = 1.01 (||b - A x|| + ||b - A xref||) / (lambda_min(A) ||xref||)
              + 1e-13
      with b = A*1 (clsolve's default right-hand side). For SPD A,
      x - xref = A^-1 ((b - A xref) - (b - A x)), so DIFF <= BOUND holds
      for any two approximate solutions: a tolerance derived from both
      residuals and the condition (||A^-1|| = 1 / lambda_min), never a
      guess. Each residual is <= tol ||b||, so BOUND <= 2 tol cond(A)
      ||b|| / (||A|| ||xref||) <= 2 tol cond(A).
"""
import sys

import numpy as np
import scipy.io
import scipy.linalg


def vec(path):
    return np.asarray(scipy.io.mmread(path)).reshape(-1)


def main():
    if len(sys.argv) != 5 or sys.argv[1] != "xdiff":
        print(__doc__, file=sys.stderr)
        return 2
    A = scipy.io.mmread(sys.argv[2]).tocsr().astype(float)
    x, xr = vec(sys.argv[3]), vec(sys.argv[4])
    b = A @ np.ones(A.shape[0])
    lmin = scipy.linalg.eigvalsh(A.toarray(), subset_by_index=[0, 0])[0]
    if lmin <= 0:
        print(f"A is not positive definite (lambda_min {lmin:.3e})", file=sys.stderr)
        return 1
    nr = np.linalg.norm(xr)
    diff = np.linalg.norm(x - xr) / nr
    bound = 1.01 * (np.linalg.norm(b - A @ x) + np.linalg.norm(b - A @ xr)) / (lmin * nr) + 1e-13
    print(f"{diff:.3e} {bound:.3e}")
    return 0 if diff <= bound else 1


if __name__ == "__main__":
    sys.exit(main())
