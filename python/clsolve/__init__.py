"""clsolve: the Python client of the clsolve sparse-solver service.

    import clsolve
    x, info = clsolve.solve(A, b, rtol=1e-10)            # scipy.sparse.linalg.cg's shape
    results = clsolve.solve_many([A1, (A2, b2)])           # [(x, info) or (None, JobFailed)]

    c = clsolve.Client("http://127.0.0.1:8080", token=None)
    job = c.submit("A.mtx", precond="jacobi", tol=1e-10)  # a path, scipy sparse (sent as
                                                           # binary CSR), numpy, bytes
    job.wait(progress=lambda j: print(j.phase, j.iteration, j.residual))
    x = job.solution()                                     # numpy array (a list without numpy)

Standard library only; numpy and scipy are used when they are installed.
Errors are exceptions that carry what the daemon said: ApiError (and its
subclasses per status) holds the RFC 9457 problem document, JobFailed the
job and its error object; they sit in Python's hierarchy too (a
TransportError is a ConnectionError, a BadRequest a ValueError: errors.py).
Arguments are checked before anything is sent, as scipy checks them: a
complex dtype is a TypeError, a non-square matrix or a right-hand side of
the wrong length a ValueError; b may be n x k (x is then n x k). See
docs/api.md for the HTTP API underneath.
"""

__version__ = "0.1.0"

from .errors import (ApiError, BadRequest, Conflict, Error, JobCancelled, JobFailed, NotFound,
                     PayloadTooLarge, RequestTimeout, ServiceUnavailable, TransportError,
                     Unauthorized, WaitTimeout)
from .client import Client, Job, solve, solve_many
from .mm import csr_binary, matrix_market, vector_market

__all__ = ["Client", "Job", "solve", "solve_many", "csr_binary", "matrix_market", "vector_market",
           "Error", "ApiError",
           "BadRequest", "Unauthorized", "NotFound", "Conflict", "PayloadTooLarge",
           "ServiceUnavailable", "TransportError", "RequestTimeout", "JobFailed", "JobCancelled",
           "WaitTimeout", "__version__"]
