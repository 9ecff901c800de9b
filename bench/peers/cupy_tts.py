#!/usr/bin/env python3
"""cupy_tts.py: the time to solution a Python user gets with the usual
tools, as the peer of `clsolve solve A.mtx` (issue 13): scipy.io.mmread
(scipy's multithreaded reader), conversion to CSR, upload to the GPU with
CuPy, cupyx.scipy.sparse.linalg.cg with a Jacobi preconditioner to the
same relative tolerance (b = A*1, as clsolve's default), x back to the
host. Each phase timed with the device synchronised; one JSON line.

  python3 bench/peers/cupy_tts.py A.mtx [--tol 1e-8] [--maxiter N]
"""
import argparse
import inspect
import json
import time

import cupy as cp
import cupyx.scipy.sparse as csp
import cupyx.scipy.sparse.linalg as cla
import numpy as np
import scipy
import scipy.io
import scipy.sparse as sp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("matrix")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--maxiter", type=int, default=100000)
    a = ap.parse_args()
    sync = cp.cuda.Device().synchronize
    cp.zeros(1)  # CUDA context and CuPy's start-up, outside the phases
    sync()
    t = {}
    t0 = time.perf_counter()
    A = scipy.io.mmread(a.matrix)
    t["parse_s"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    A = sp.csr_matrix(A)
    A.sort_indices()
    t["csr_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    Ad = csp.csr_matrix(A)
    d = Ad.diagonal()
    sync()
    t["upload_s"] = time.perf_counter() - t2
    b = Ad @ cp.ones(A.shape[0])
    dinv = 1.0 / d
    M = cla.LinearOperator(A.shape, matvec=lambda r: dinv * r, dtype=cp.float64)
    iters = [0]

    def count(_xk):
        iters[0] += 1

    kw = {}
    params = inspect.signature(cla.cg).parameters
    kw["rtol" if "rtol" in params else "tol"] = a.tol
    if "atol" in params:
        kw["atol"] = 0.0
    sync()
    t3 = time.perf_counter()
    x, info = cla.cg(Ad, b, M=M, maxiter=a.maxiter, callback=count, **kw)
    sync()
    t["solve_s"] = time.perf_counter() - t3
    t4 = time.perf_counter()
    xh = cp.asnumpy(x)
    t["download_s"] = time.perf_counter() - t4
    t["total_s"] = time.perf_counter() - t0
    bh = cp.asnumpy(b)
    rel = float(np.linalg.norm(bh - A @ xh) / np.linalg.norm(bh))
    print(json.dumps({"peer": "scipy-%s mmread + cupy-%s cg (jacobi)" % (scipy.__version__,
                                                                      cp.__version__),
                      "rows": int(A.shape[0]), "nnz": int(A.nnz), "iterations": iters[0],
                      "info": int(info), "true_relative_residual": rel,
                      "times": {k: round(v, 4) for k, v in t.items()}}))


if __name__ == "__main__":
    main()
