#!/usr/bin/env python3
"""cg_iters_ref.py: scipy's CG iteration count on a Matrix Market file.

The reference the textbook-recurrence test holds clsolve's CG to (issue 26,
item 1): b = A*1, x0 = 0, stop at ||r|| <= tol ||b||, unpreconditioned or
Jacobi, as `clsolve solve` does without -b. Prints the iteration count.

  /usr/bin/python3 cg_iters_ref.py A.mtx [--tol 1e-8] [--jacobi]
"""
import argparse

import numpy as np
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as sla


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("matrix")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--jacobi", action="store_true")
    a = ap.parse_args()
    A = sp.csr_matrix(scipy.io.mmread(a.matrix), dtype=float)
    b = A @ np.ones(A.shape[0])
    M = sp.diags(1.0 / A.diagonal()) if a.jacobi else None
    n = [0]

    def count(_xk):
        n[0] += 1

    try:  # scipy >= 1.12 names it rtol
        sla.cg(A, b, rtol=a.tol, atol=0.0, maxiter=100000, M=M, callback=count)
    except TypeError:
        sla.cg(A, b, tol=a.tol, atol=0.0, maxiter=100000, M=M, callback=count)
    print(n[0])


if __name__ == "__main__":
    main()
