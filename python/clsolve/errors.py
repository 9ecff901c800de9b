"""errors.py: the exceptions of the clsolve client.

Every error the daemon answers is an RFC 9457 problem document
({"type", "title", "status", "detail", "line"?, ...}); ApiError keeps it
whole in .problem, and its subclass says the status at a glance. A job that
ends badly is a JobFailed holding the job and its error object ({"code",
"exit_code", "message", "line"?}).

Each class also sits in Python's own hierarchy, so code that knows nothing
of clsolve catches what it expects: a daemon that cannot be reached is a
ConnectionError (an OSError, as urllib's and socket's failures are), a
request that ran out of time a TimeoutError as well; a refused input
(400, 413) is a ValueError, an unknown job (404) a LookupError, a refused
token (401) a PermissionError, and Job.wait running out a TimeoutError.
Every one is still a clsolve.Error, and ApiError keeps every status. A
409 (the job is in the wrong state), a 503 (busy, retried first) and a
failed job stay plain clsolve errors: no built-in class says the same.
Arguments the client refuses before sending anything (a complex dtype, a
non-square matrix, a malformed URL) are the built-in TypeError and
ValueError themselves, as scipy raises them.
"""


class Error(Exception):
    """Any failure of the clsolve client."""


class TransportError(Error, ConnectionError):
    """The daemon could not be reached (refused, unresolvable, TLS, timeout):
    a ConnectionError (so an OSError)."""


class RequestTimeout(TransportError, TimeoutError):
    """A request got no answer within the client's timeout: a
    TransportError that is also a TimeoutError."""


class ApiError(Error):
    """An HTTP error answer. .status, .problem (the problem document, a
    dict), .type ("urn:clsolve:problem:SLUG"), .slug, .detail, .line (of a
    parse error, or None), .retry_after (seconds, or None)."""

    def __init__(self, status, problem, retry_after=None):
        self.status = status
        self.problem = problem if isinstance(problem, dict) else {"detail": str(problem)}
        self.type = self.problem.get("type", "")
        self.slug = self.type.rsplit(":", 1)[-1] if self.type else ""
        self.detail = self.problem.get("detail", "")
        self.line = self.problem.get("line")
        self.retry_after = retry_after
        super().__init__("%s (HTTP %d)" % (self.detail or self.problem.get("title", ""), status))


class BadRequest(ApiError, ValueError):
    """400: a bad parameter, a bad multipart body, a bad Matrix Market header
    (.line says where). A ValueError."""


class Unauthorized(ApiError, PermissionError):
    """401: the daemon wants a bearer token (token= or $CLSOLVE_TOKEN). A
    PermissionError."""


class NotFound(ApiError, LookupError):
    """404: no such job or route. A LookupError."""


class Conflict(ApiError):
    """409: no solution yet, cancel of a finished job, delete of an active
    one (.problem["job_status"] names the job's state)."""


class PayloadTooLarge(ApiError, ValueError):
    """413: the upload is larger than the daemon's --max-upload (or the
    matrix than its --max-nnz). A ValueError."""


class ServiceUnavailable(ApiError):
    """503: the queue is full or the daemon is draining; retried by the
    client (retries=) after Retry-After before it is raised."""


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 404: NotFound, 409: Conflict,
              413: PayloadTooLarge, 503: ServiceUnavailable}


def api_error(status, problem, retry_after=None):
    return _BY_STATUS.get(status, ApiError)(status, problem, retry_after)


class JobFailed(Error):
    """A job that ended failed. .job (the Job), .error (its error object),
    .code ("bad_input", "not_converged", "breakdown", ...), .exit_code (that
    of `clsolve solve`), .line (of a parse error, or None)."""

    def __init__(self, job):
        self.job = job
        self.error = dict(job.info.get("error") or {})
        self.code = self.error.get("code")
        self.exit_code = self.error.get("exit_code")
        self.line = self.error.get("line")
        super().__init__("job %s %s: %s" % (job.id, job.info.get("status"),
                                             self.error.get("message", "")))


class JobCancelled(JobFailed):
    """A job that was cancelled."""


class WaitTimeout(Error, TimeoutError):
    """Job.wait(timeout=...) ran out; .job is still queued or running."""

    def __init__(self, job, timeout):
        self.job = job
        super().__init__("job %s still %s after %g s" % (job.id, job.status, timeout))
