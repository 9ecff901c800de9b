"""mm.py: Matrix Market text from what a Python user holds: scipy sparse
matrices, numpy arrays, lists of lists (matrices) and sequences (vectors).
Values are written as Python's repr of a float, the shortest text that
reads back as the same double, so every value goes over exactly. A matrix
that equals its transpose goes in symmetric storage (half the bytes; the
daemon expands it). A right-hand side may be n x k (k systems of one
matrix): it goes as an n x k array, column after column as the format
lays arrays out, which is how the daemon reads several right-hand sides.

The service solves real systems only, so a complex (or non-numeric) array
is refused here with a TypeError rather than cast: numpy's cast to float64
drops the imaginary part with no more than a ComplexWarning, and the
solve would then answer a different system with info 0.
"""
import io
import struct

try:
    import numpy as _np
except ImportError:  # numpy is optional
    _np = None


def _is_scipy_sparse(A):
    return hasattr(A, "tocoo") and hasattr(A, "nnz") and hasattr(A, "shape")


def check_real_dtype(dtype, what):
    """Raises TypeError unless dtype (a numpy dtype) converts to float64
    without loss of meaning: bool, integers and reals pass; complex,
    objects, strings, dates do not. TypeError, not ValueError, because that
    is what numpy and scipy raise for a dtype an operation does not support
    (numpy's refused casts, scipy.sparse's "no supported conversion for
    types"): the fault is the argument's type, not a value in it."""
    kind = getattr(dtype, "kind", None)
    if kind is None or kind in "biuf":
        return
    if kind == "c":
        raise TypeError("%s has complex dtype %s: clsolve solves real systems only (pass the "
                        "real part explicitly if that is what is meant)" % (what, dtype))
    raise TypeError("%s has dtype %s: clsolve needs real numbers (bool, int or float)"
                    % (what, dtype))


def check_real_values(values, what):
    """The same for the numbers of a list (no numpy): a complex number is
    refused rather than failing later with Python's less helpful message."""
    for v in values:
        if isinstance(v, complex):
            raise TypeError("%s holds a complex number (%r): clsolve solves real systems only"
                            % (what, v))


def csr_binary(A, out=None):
    """Writes the scipy sparse matrix A in clsolve's binary CSR form
    (docs/api.md, "Binary matrices": the magic CLSCSR01, int64 rows, columns
    and entries, int64 row pointers, int32 columns, float64 values, all
    little-endian; every entry stored, columns sorted and unique within a
    row) to the binary file object out (a new BytesIO when None) and
    returns out. A is not modified."""
    out = out if out is not None else io.BytesIO()
    check_real_dtype(getattr(A, "dtype", None), "the matrix")
    C = A.tocsr(copy=True)
    C.sum_duplicates()  # canonical: sorted columns, no duplicates
    C.sort_indices()
    m, n = C.shape
    out.write(b"CLSCSR01" + struct.pack("<qqq", m, n, C.nnz))
    out.write(_np.ascontiguousarray(C.indptr, dtype="<i8").tobytes())
    out.write(_np.ascontiguousarray(C.indices, dtype="<i4").tobytes())
    out.write(_np.ascontiguousarray(C.data, dtype="<f8").tobytes())
    return out


def matrix_market(A, out=None):
    """Writes A (scipy sparse, a 2-D numpy array or a list of lists) as a
    Matrix Market coordinate file to the binary file object out (a new
    BytesIO when None) and returns out."""
    out = out if out is not None else io.BytesIO()
    if _is_scipy_sparse(A):
        check_real_dtype(getattr(A, "dtype", None), "the matrix")
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
        check_real_dtype(A.dtype, "the matrix")
        r, c = _np.nonzero(A)
        _write_coo(out, A.shape[0], A.shape[1], r, c, A[r, c], "general")
        return out
    rows = [list(row) for row in A]
    n = len(rows[0]) if rows else 0
    if any(len(row) != n for row in rows):
        raise ValueError("the rows of the matrix differ in length")
    for row in rows:
        check_real_values(row, "the matrix")
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
    """Writes b as a Matrix Market array file: a 1-D numpy array or a
    sequence of numbers as n x 1; a 2-D numpy array or a list of n rows of
    k numbers as n x k (k right-hand sides; an n x 1 array is a vector)."""
    out = out if out is not None else io.BytesIO()
    if _np is not None and isinstance(b, _np.ndarray):
        if b.ndim not in (1, 2):
            raise ValueError("a right-hand side must have 1 or 2 dimensions, this array has %d"
                             % b.ndim)
        check_real_dtype(b.dtype, "the vector")
        n, k = (b.shape[0], 1) if b.ndim == 1 else b.shape
        # the format lists an array column after column: Fortran order
        vals = b.astype(_np.float64).ravel(order="F").tolist()
    else:
        items = list(b)
        if items and all(isinstance(r, (list, tuple)) or
                         (_np is not None and isinstance(r, _np.ndarray)) for r in items):
            rows = [list(r) for r in items]
            n, k = len(rows), len(rows[0])
            if any(len(r) != k for r in rows):
                raise ValueError("the rows of the right-hand side differ in length")
            for r in rows:
                check_real_values(r, "the vector")
            vals = [float(r[j]) for j in range(k) for r in rows]
        else:
            check_real_values(items, "the vector")
            vals = [float(x) for x in items]
            n, k = len(vals), 1
    out.write(("%%%%MatrixMarket matrix array real general\n%d %d\n" % (n, k)).encode())
    out.write("".join("%r\n" % x for x in vals).encode())
    return out
