"""mm.py: Matrix Market text from what a Python user holds: scipy sparse
matrices, numpy arrays, lists of lists (matrices) and sequences (vectors).
Values are written as Python's repr of a float, the shortest text that
reads back as the same double, so every value goes over exactly. A matrix
that equals its transpose goes in symmetric storage (half the bytes; the
daemon expands it).
"""
import io

try:
    import numpy as _np
except ImportError:  # numpy is optional
    _np = None


def _is_scipy_sparse(A):
    return hasattr(A, "tocoo") and hasattr(A, "nnz") and hasattr(A, "shape")


def matrix_market(A, out=None):
    """Writes A (scipy sparse, a 2-D numpy array or a list of lists) as a
    Matrix Market coordinate file to the binary file object out (a new
    BytesIO when None) and returns out."""
    out = out if out is not None else io.BytesIO()
    if _is_scipy_sparse(A):
        m, n = A.shape
        sym = False
        if m == n:
            try:
                sym = (A != A.T).nnz == 0
            except Exception:  # a format that cannot compare: general
                sym = False
        C = A.tocoo()
        r, c, v = C.row, C.col, C.data
        if sym:
            keep = r >= c
            r, c, v = r[keep], c[keep], v[keep]
        _write_coo(out, m, n, r, c, v, "symmetric" if sym else "general")
        return out
    if _np is not None and isinstance(A, _np.ndarray):
        if A.ndim != 2:
            raise ValueError("a matrix must have 2 dimensions, this array has %d" % A.ndim)
        r, c = _np.nonzero(A)
        _write_coo(out, A.shape[0], A.shape[1], r, c, A[r, c], "general")
        return out
    rows = [list(row) for row in A]
    n = len(rows[0]) if rows else 0
    if any(len(row) != n for row in rows):
        raise ValueError("the rows of the matrix differ in length")
    ent = [(i, j, float(v)) for i, row in enumerate(rows) for j, v in enumerate(row) if v != 0]
    out.write(b"%%MatrixMarket matrix coordinate real general\n")
    out.write(("%d %d %d\n" % (len(rows), n, len(ent))).encode())
    out.write("".join("%d %d %r\n" % (i + 1, j + 1, v) for i, j, v in ent).encode())
    return out


def _write_coo(out, m, n, r, c, v, symmetry):
    out.write(("%%%%MatrixMarket matrix coordinate real %s\n%d %d %d\n"
               % (symmetry, m, n, len(v))).encode())
    if _np is not None:
        block = 1 << 16
        for k in range(0, len(v), block):
            a = _np.column_stack((_np.asarray(r[k:k + block], dtype=_np.int64) + 1,
                                  _np.asarray(c[k:k + block], dtype=_np.int64) + 1))
            vals = _np.asarray(v[k:k + block], dtype=_np.float64)
            out.write("".join("%d %d %r\n" % (i, j, float(x))
                              for (i, j), x in zip(a.tolist(), vals.tolist())).encode())
    else:
        out.write("".join("%d %d %r\n" % (i + 1, j + 1, float(x))
                          for i, j, x in zip(r, c, v)).encode())


def vector_market(b, out=None):
    """Writes b (a 1-D numpy array, or any sequence of numbers) as a
    Matrix Market array file (n x 1)."""
    out = out if out is not None else io.BytesIO()
    if _np is not None and isinstance(b, _np.ndarray):
        if b.ndim == 2 and 1 in b.shape:
            b = b.reshape(-1)
        if b.ndim != 1:
            raise ValueError("a vector must have 1 dimension, this array has %d" % b.ndim)
        vals = b.astype(_np.float64).tolist()
    else:
        vals = [float(x) for x in b]
    out.write(("%%%%MatrixMarket matrix array real general\n%d 1\n" % len(vals)).encode())
    out.write("".join("%r\n" % x for x in vals).encode())
    return out
