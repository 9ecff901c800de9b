#!/usr/bin/env python3
"""mmref.py: an independent, deliberately plain Matrix Market reader and
residual check for the CLI tests (pure Python, no numpy), so a test's
verdict never rests on clsolve's own reader or arithmetic.

  mmref.py residual A.mtx x.mtx [b.mtx]   -> prints ||b - A x|| / ||b||
                                             (b = A*1 when not given)
  mmref.py maxdiff x.mtx y.mtx             -> prints max |x_i - y_i| / max |y_i|
  mmref.py bnorm A.mtx [b.mtx]             -> prints ||b|| (b = A*1 when not given)
"""
import math
import sys


def read_matrix(path):
    with open(path) as f:
        lines = f.read().splitlines()
    banner = lines[0].lower().split()
    layout, field, sym = banner[2], banner[3], banner[4]
    body = [l for l in lines[1:] if l.strip() and not l.lstrip().startswith("%")]
    size = body[0].split()
    if layout == "array":
        m, n = int(size[0]), int(size[1])
        vals = [float(l.split()[0]) for l in body[1:]]
        assert len(vals) == m * n, "array length"
        return ("array", m, n, vals)
    m, n = int(size[0]), int(size[1])
    entries = {}
    for l in body[1:]:
        p = l.split()
        i, j = int(p[0]) - 1, int(p[1]) - 1
        v = 1.0 if field == "pattern" else float(p[2])
        entries[(i, j)] = entries.get((i, j), 0.0) + v
        if sym in ("symmetric", "skew-symmetric") and i != j:
            entries[(j, i)] = entries.get((j, i), 0.0) + (v if sym == "symmetric" else -v)
    return ("coo", m, n, entries)


def read_vector(path):
    kind, m, n, vals = read_matrix(path)
    if kind == "array":
        return vals
    v = [0.0] * (m * n)
    for (i, j), a in vals.items():
        v[i + j * m] = a
    return v


def matvec(A, x):
    _, m, _, entries = A
    y = [0.0] * m
    for (i, j), a in entries.items():
        y[i] += a * x[j]
    return y


def main():
    cmd = sys.argv[1]
    if cmd == "residual":
        A = read_matrix(sys.argv[2])
        x = read_vector(sys.argv[3])
        b = read_vector(sys.argv[4]) if len(sys.argv) > 4 else matvec(A, [1.0] * A[2])
        Ax = matvec(A, x)
        rr = math.fsum((bi - ai) ** 2 for bi, ai in zip(b, Ax))
        bb = math.fsum(bi * bi for bi in b)
        print("%.6e" % math.sqrt(rr / bb))
    elif cmd == "bnorm":
        A = read_matrix(sys.argv[2])
        b = read_vector(sys.argv[3]) if len(sys.argv) > 3 else matvec(A, [1.0] * A[2])
        print("%.17g" % math.sqrt(math.fsum(bi * bi for bi in b)))
    elif cmd == "maxdiff":
        x, y = read_vector(sys.argv[2]), read_vector(sys.argv[3])
        assert len(x) == len(y), "lengths differ"
        print("%.6e" % (max(abs(a - b) for a, b in zip(x, y)) / max(abs(b) for b in y)))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
