#!/usr/bin/env python3
"""bench/batch-upload.py: many small systems through a running clsolved,
end to end from the Python client (issue 24): `clsolve.solve_many` (one
POST /v1/batches per 1,024 systems: queued together, solved in launches of
--batch-max) against the same systems sent one job each by `workers`
threads calling `clsolve.solve` (the best path before batch uploads), in
turn, REPS times each. Every answer is checked: b = A*1, so x must be 1 to
within what the tolerance allows (||x - 1|| <= cond(A) tol ||1||: max
|x_i - 1| <= 1e-2 for the power networks' condition numbers of about 1e6 at
tol 1e-8; the largest seen is printed).

  PYTHONPATH=python python3 bench/batch-upload.py URL MATRIX [--count 1000]
      [--reps 3] [--workers 40] [--tol 1e-8] [--precond jacobi]

Prints, per way and run: seconds for all, systems per second, and the
largest |x_i - 1|; then min and median of the rates.
"""
import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import clsolve


def check(results):
    worst = 0.0
    for x, info in results:
        if x is None or info != 0:
            raise SystemExit("a system failed: %r" % (info,))
        worst = max(worst, max(abs(v - 1.0) for v in x))
    if worst > 1e-2:
        raise SystemExit("an answer is off: max |x_i - 1| = %.3g" % worst)
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("matrix")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=40)
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--precond", default="jacobi")
    a = ap.parse_args()
    c = clsolve.Client(a.url)
    systems = [a.matrix] * a.count
    rates = {"batch upload (solve_many)": [], "one job each (%d threads)" % a.workers: []}
    for rep in range(a.reps):
        t0 = time.time()
        out = clsolve.solve_many(systems, tol=a.tol, precond=a.precond, client=c, workers=a.workers)
        dt = time.time() - t0
        w = check(out)
        rates["batch upload (solve_many)"].append(a.count / dt)
        print("run %d, batch upload: %d systems in %.3f s, %.1f/s, max |x-1| %.2e" %
              (rep + 1, a.count, dt, a.count / dt, w), flush=True)
        t0 = time.time()
        with ThreadPoolExecutor(max_workers=a.workers) as ex:
            out = list(ex.map(lambda m: clsolve.solve(m, tol=a.tol, precond=a.precond, client=c),
                              systems))
        dt = time.time() - t0
        w = check(out)
        rates["one job each (%d threads)" % a.workers].append(a.count / dt)
        print("run %d, one job each: %d systems in %.3f s, %.1f/s, max |x-1| %.2e" %
              (rep + 1, a.count, dt, a.count / dt, w), flush=True)
    for k, v in rates.items():
        print("%s: systems/s min %.1f, median %.1f, max %.1f" % (k, min(v), statistics.median(v), max(v)))


if __name__ == "__main__":
    sys.exit(main())
