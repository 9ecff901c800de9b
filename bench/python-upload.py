#!/usr/bin/env python3
"""bench/python-upload.py: a scipy matrix from Python to x through a running
clsolved (issue 23, item 4): the client's binary CSR form (what
`clsolve.solve` sends for a scipy matrix) against Matrix Market text (what
it sent before), in turn, REPS times each, one command:

  PYTHONPATH=python /usr/bin/python3 bench/python-upload.py URL [--n 64] [--reps 3]

For poisson3d N (scipy, 7-point): the seconds to encode the matrix (csr_binary
against matrix_market, into memory), its bytes, and end to end (encode,
upload, solve with Jacobi at tol 1e-8, x back as float64), the job's own
receive and parse times; every x checked against b = A x's true residual.
Prints min and median per way.
"""
import argparse
import io
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

import clsolve


def poisson3d(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    I = sp.eye(n)
    return (sp.kron(sp.kron(T, I), I) + sp.kron(sp.kron(I, T), I) + sp.kron(sp.kron(I, I), T)).tocsr()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    A = poisson3d(a.n)
    b = np.ones(A.shape[0])
    c = clsolve.Client(a.url)
    res = {"binary": [], "text": []}
    for rep in range(a.reps):
        for way in ("binary", "text"):
            t0 = time.time()
            body = clsolve.csr_binary(A) if way == "binary" else clsolve.matrix_market(A)
            data = body.getvalue()
            t1 = time.time()
            job = c.submit(data, b, tol=1e-8, precond="jacobi")
            job.wait(timeout=600)
            x = job.solution()
            t2 = time.time()
            r = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
            if job.status != "succeeded" or not r <= 1e-7:
                raise SystemExit("%s: %s, true residual %g" % (way, job.status, r))
            tm = job.info.get("timings") or {}
            res[way].append(t2 - t0)
            print("run %d, %s: encode %.3f s (%.1f MB), end to end %.3f s (receive %.3f, parse %.3f, "
                  "solve %.3f), true residual %.1e" % (rep + 1, way, t1 - t0, len(data) / 1e6, t2 - t0,
                                                       tm.get("receive_s", 0), tm.get("parse_s", 0),
                                                       tm.get("solve_s", 0), r), flush=True)
    for way, v in res.items():
        print("%s: end to end min %.3f s, median %.3f s" % (way, min(v), statistics.median(v)))


if __name__ == "__main__":
    sys.exit(main())
