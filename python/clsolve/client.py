"""client.py: Client, Job and solve() over the daemon's HTTP API.

One request at a time on urllib (so https, $https_proxy and friends, and
a custom CA file all work as they do for any urllib program). POSTs are
streamed from files or memory with a known Content-Length. A 503 (queue
full, draining) is retried after its Retry-After, `retries` times; a
refused connection for a GET as well. Job.wait polls with a backoff from
0.1 s to 1 s.

Arguments are checked here, before a byte is sent, in the way scipy checks
them (scipy.sparse.linalg.spsolve and cg): an upload can be large and a
job is queued behind others, so a mistake the client can see on its own
should cost neither. What the client holds in memory (a scipy sparse
matrix, a numpy array, lists) is checked for a real dtype (TypeError), a
square matrix, a right-hand side with n rows and an n-vector x0
(ValueError, with scipy's wording). Paths, bytes and files are the
daemon's to read: it checks their headers as they arrive. The URL is
checked when the Client is made, where the mistake was made.

A right-hand side may be n x k: the daemon solves the k systems together
and stores x as n x k, column after column; Job.solution() gives it back
n x k (numpy) or as n rows of k numbers (lists), and solve() returns x in
b's shape as spsolve does (n x 1 gives a 1-D x, as spsolve's does).
"""
import array
import json
import os
import socket
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

from . import errors
from .mm import (_is_scipy_sparse, _np, check_real_dtype, check_real_values, csr_binary,
                 matrix_market, vector_market)

FINISHED = ("succeeded", "failed", "cancelled")
_SOLVE_KEYS = ("tol", "atol", "maxiter", "precond", "method", "precision", "backend")


class _Body:
    """A request body from parts (bytes or open binary files), streamed with
    a known length."""

    def __init__(self, parts):
        self.parts = parts
        self.length = 0
        for p in parts:
            if isinstance(p, (bytes, bytearray)):
                self.length += len(p)
            else:
                p.seek(0, os.SEEK_END)
                self.length += p.tell()
                p.seek(0)

    def __iter__(self):
        for p in self.parts:
            if isinstance(p, (bytes, bytearray)):
                yield bytes(p)
            else:
                p.seek(0)
                while True:
                    chunk = p.read(1 << 20)
                    if not chunk:
                        break
                    yield chunk

    def close(self):
        for p in self.parts:
            if hasattr(p, "close"):
                p.close()


def _upload(obj, vector=False):
    """(file object, display name) for a matrix or vector argument: a path
    is opened (sent as it is, gzip too), bytes are sent as given, anything
    else is written as Matrix Market into a spooled temporary file."""
    if isinstance(obj, (str, os.PathLike)):
        path = os.fspath(obj)
        return open(path, "rb"), os.path.basename(path)
    if isinstance(obj, (bytes, bytearray)):
        return _bytes_file(obj), None
    if hasattr(obj, "read") and not _is_scipy_sparse(obj):
        data = obj.read()
        return _bytes_file(data if isinstance(data, bytes) else data.encode()), \
            os.path.basename(getattr(obj, "name", "")) or None
    f = tempfile.SpooledTemporaryFile(max_size=64 << 20)
    if not vector and _is_scipy_sparse(obj):
        csr_binary(obj, f)  # no text to write or parse: the arrays as they are
    else:
        (vector_market if vector else matrix_market)(obj, f)
    f.seek(0)
    return f, None


def _is_file_argument(obj):
    """A path, bytes or a file object: sent as it is, read by the daemon."""
    return isinstance(obj, (str, os.PathLike, bytes, bytearray)) or \
        (hasattr(obj, "read") and not _is_scipy_sparse(obj))


def _matrix_shape(A):
    """The shape of an in-memory matrix after its dtype was checked, or
    None for a file argument."""
    if _is_file_argument(A):
        return None
    if _is_scipy_sparse(A):
        check_real_dtype(getattr(A, "dtype", None), "A")
        return tuple(A.shape)
    if _np is not None and isinstance(A, _np.ndarray):
        check_real_dtype(A.dtype, "A")
        if A.ndim != 2:
            raise ValueError("a matrix must have 2 dimensions, this array has %d" % A.ndim)
        return A.shape
    rows = [r if hasattr(r, "__len__") else None for r in A]
    if any(r is None for r in rows):
        raise ValueError("a matrix must be 2-D: a list of rows, not of numbers")
    for r in rows:
        check_real_values(r, "A")
    return (len(rows), len(rows[0]) if rows else 0)


def _vector_shape(v, what):
    """(n,) or (n, k) of an in-memory right-hand side or initial guess after
    its dtype was checked, or None for a file argument."""
    if _is_file_argument(v):
        return None
    if _np is not None and isinstance(v, _np.ndarray):
        check_real_dtype(v.dtype, what)
        if v.ndim not in (1, 2):
            raise ValueError("%s must have 1 or 2 dimensions, this array has %d" % (what, v.ndim))
        return v.shape
    items = list(v)
    if items and all(hasattr(r, "__len__") for r in items):
        for r in items:
            check_real_values(r, what)
        k = len(items[0])
        if any(len(r) != k for r in items):
            raise ValueError("the rows of %s differ in length" % what)
        return (len(items), k)
    check_real_values(items, what)
    return (len(items),)


def _check_system(A, b, x0):
    """Refuses, before anything is uploaded, what scipy would refuse: a
    complex or non-numeric dtype (TypeError), a matrix that is not square,
    a b without n rows, an x0 that is not an n-vector (ValueError). Returns
    b's shape, or None when b is absent or a file."""
    shape = _matrix_shape(A)
    bs = _vector_shape(b, "b") if b is not None else None
    xs = _vector_shape(x0, "x0") if x0 is not None else None
    if shape is not None and shape[0] != shape[1]:
        # spsolve's words
        raise ValueError("matrix must be square (has shape %s)" % (shape,))
    if bs is not None:
        if len(bs) == 2 and bs[1] == 0:
            raise ValueError("b has no columns (shape %s)" % (bs,))
        if shape is not None and bs[0] != shape[0]:
            raise ValueError("shapes of A %s and b %s are incompatible" % (shape, bs))
    if xs is not None:
        # the daemon takes one x0 for every right-hand side: an n-vector
        if len(xs) == 2 and xs[1] != 1 or shape is not None and xs[0] != shape[0]:
            raise ValueError("shapes of A %s and x0 %s are incompatible (x0 is one n-vector, "
                             "the start of every right-hand side)" % (shape or "(n, n)", xs))
    return bs


def _check_url(url, source):
    """The daemon's base URL, or a ValueError that names it: urllib would
    otherwise fail on the first request, deep inside, with "unknown url
    type" or a bad port."""
    expected = "expected http://HOST[:PORT] or https://HOST[:PORT], e.g. http://127.0.0.1:8080"
    if not isinstance(url, str):
        raise TypeError("clsolve.Client: the URL must be a str, not %s" % type(url).__name__)
    try:
        u = urllib.parse.urlsplit(url)
        u.port  # a port that is not a number in range raises here
    except ValueError as e:
        raise ValueError("clsolve.Client: %s %r is not a daemon URL (%s); %s"
                         % (source, url, e, expected)) from None
    why = None
    if u.scheme not in ("http", "https"):
        why = "the scheme must be http or https" if u.scheme else "no scheme"
    elif not u.hostname:
        why = "no host"
    elif u.query or u.fragment:
        why = "a query or fragment has no place in the base URL"
    elif any(c.isspace() for c in url):
        why = "it holds white space"
    if why:
        raise ValueError("clsolve.Client: %s %r is not a daemon URL (%s); %s"
                         % (source, url, why, expected))
    return url.rstrip("/")


def _bytes_file(data):
    f = tempfile.SpooledTemporaryFile(max_size=64 << 20)
    f.write(bytes(data))
    f.seek(0)
    return f


class Client:
    """A clsolved daemon.

    url: "http://HOST:PORT" or "https://..." (default $CLSOLVE_SERVER, else
    http://127.0.0.1:8080); token: the bearer token (default
    $CLSOLVE_TOKEN), or token_file; cafile: a CA bundle for https (default:
    the system's); timeout: seconds per request; retries: how many times a
    503 (or a refused connection of a GET) is retried, after the daemon's
    Retry-After (at most max_retry_wait seconds each)."""

    def __init__(self, url=None, token=None, token_file=None, cafile=None, timeout=60.0,
                 retries=3, max_retry_wait=30.0):
        if url is not None:
            self.url = _check_url(url, "url")
        elif os.environ.get("CLSOLVE_SERVER"):
            self.url = _check_url(os.environ["CLSOLVE_SERVER"], "$CLSOLVE_SERVER")
        else:
            self.url = "http://127.0.0.1:8080"
        if token is None and token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.readline().strip()
        if token is None:
            token = os.environ.get("CLSOLVE_TOKEN") or None
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.max_retry_wait = max_retry_wait
        handlers = []
        if cafile is not None:
            handlers.append(urllib.request.HTTPSHandler(
                context=ssl.create_default_context(cafile=cafile)))
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self):
        return "clsolve.Client(%r)" % self.url

    # ---- HTTP
    def request(self, method, path, body=None, headers=None, ok=(200,), raw=False):
        """One API call: the parsed JSON (raw=True: the bytes) of an answer
        whose status is in ok; raises ApiError (with the problem document),
        or TransportError when the daemon cannot be reached."""
        attempt = 0
        while True:
            req = urllib.request.Request(self.url + path, method=method)
            for k, v in (headers or {}).items():
                req.add_header(k, v)
            if self.token:
                req.add_header("Authorization", "Bearer " + self.token)
            if body is not None:
                req.data = body if isinstance(body, (bytes, bytearray)) else iter(body)
                req.add_header("Content-Length", str(len(body) if isinstance(body, (bytes, bytearray))
                                                     else body.length))
            try:
                with self._opener.open(req, timeout=self.timeout) as r:
                    status, data, hdrs = r.status, r.read(), r.headers
            except urllib.error.HTTPError as e:
                status, data, hdrs = e.code, e.read(), e.headers
            except (urllib.error.URLError, socket.timeout, ConnectionError, ssl.SSLError) as e:
                reason = getattr(e, "reason", e)
                if method == "GET" and attempt < self.retries and \
                        isinstance(reason, ConnectionRefusedError):
                    attempt += 1
                    time.sleep(min(2.0 ** attempt * 0.1, self.max_retry_wait))
                    continue
                cls = errors.RequestTimeout if isinstance(reason, (socket.timeout, TimeoutError)) \
                    else errors.TransportError
                raise cls("%s %s: %s" % (method, self.url + path, reason)) from e
            if status in ok:
                if raw:
                    return data, hdrs
                return json.loads(data) if data else None
            try:
                problem = json.loads(data)
            except ValueError:
                problem = {"status": status, "detail": data.decode("utf-8", "replace")[:500]}
            retry_after = None
            try:
                retry_after = float(hdrs.get("Retry-After")) if hdrs.get("Retry-After") else None
            except ValueError:
                pass
            if status == 503 and attempt < self.retries:
                attempt += 1
                time.sleep(min(retry_after if retry_after is not None else 1.0,
                               self.max_retry_wait))
                continue
            raise errors.api_error(status, problem, retry_after)

    # ---- jobs
    def submit(self, A, b=None, x0=None, kind="cg", **params):
        """Submits a job and returns its Job (queued).

        A: a path to a Matrix Market file (plain or gzip), its bytes, a scipy
        sparse matrix, a 2-D numpy array or a list of lists; b: the same
        for vectors (a path, a numpy array of shape (n,) or (n, k), a
        sequence, a list of n rows of k numbers: k right-hand sides); x0:
        one n-vector. In-memory arguments are checked before the upload
        (a complex dtype: TypeError; a non-square A, a b without n rows, an
        x0 that is not an n-vector: ValueError). params:
        tol (or rtol), atol, maxiter, precond, method, precision, backend
        (auto, opencl, native: on a CPU device) for cg;
        a physics kind's options otherwise (A is then its input file);
        keep="until-fetched" for any kind: the daemon's retention keeps the
        finished job until its result was downloaded once (docs/api.md)."""
        if "rtol" in params:
            if "tol" in params:
                raise TypeError("give tol or rtol, not both")
            params["tol"] = params.pop("rtol")
        if kind == "cg":  # a physics kind's input is a mesh, not a matrix
            _check_system(A, b, x0)
        params = {k: v for k, v in params.items() if v is not None}
        query = dict(params)
        if kind != "cg":
            query["kind"] = kind
        q = "?" + urllib.parse.urlencode(
            {k: ("true" if v is True else "false" if v is False else v) for k, v in query.items()}
        ) if query else ""
        files = []
        try:
            fa, name_a = _upload(A)
            files.append(fa)
            if b is None and x0 is None:
                body = _Body([fa])
                headers = {"Content-Type": "application/octet-stream"}
                if name_a:  # the name the daemon's messages use for it
                    headers["Content-Disposition"] = 'attachment; filename="%s"' % \
                        name_a.replace('"', "_").replace("\\", "_")
            else:
                boundary = "clsolve-" + uuid.uuid4().hex
                parts = []
                for field, obj, vec in (("matrix" if kind == "cg" else "input", A, False),
                                        ("rhs", b, True), ("x0", x0, True)):
                    if obj is None:
                        continue
                    if obj is A:
                        f, name = fa, name_a
                    else:
                        f, name = _upload(obj, vector=vec)
                        files.append(f)
                    parts.append(_part_header(boundary, field, name or field + ".mtx", not parts))
                    parts.append(f)
                parts.append(("\r\n--%s--\r\n" % boundary).encode())
                body = _Body(parts)
                headers = {"Content-Type": "multipart/form-data; boundary=" + boundary}
            info = self.request("POST", "/v1/jobs" + q, body, headers, ok=(202,))
        finally:
            for f in files:
                f.close()
        return Job(self, info["id"], info)

    def submit_many(self, systems, **params):
        """Submits several cg systems in one request (POST /v1/batches) and
        returns their Jobs (queued), in order. systems: a list of A or
        (A, b) or (A, b, x0), each as submit() takes them, checked before
        anything is sent; params as submit()'s, for every system. The
        daemon queues all of them or none (a bad file refuses the request:
        ApiError 400 naming it) and solves those that can share a launch in
        one. At most 1,024 systems per request."""
        if "rtol" in params:
            if "tol" in params:
                raise TypeError("give tol or rtol, not both")
            params["tol"] = params.pop("rtol")
        items = []
        for s in systems:
            t = tuple(s) if isinstance(s, tuple) else (s,)
            A, b, x0 = (t + (None, None))[:3]
            _check_system(A, b, x0)
            items.append((A, b, x0))
        if not items:
            return []
        if len(items) > 1024:
            raise ValueError("at most 1024 systems per request (%d given)" % len(items))
        params = {k: v for k, v in params.items() if v is not None}
        q = "?" + urllib.parse.urlencode(
            {k: ("true" if v is True else "false" if v is False else v) for k, v in params.items()}
        ) if params else ""
        boundary = "clsolve-" + uuid.uuid4().hex
        files, parts = [], []
        try:
            for i, (A, b, x0) in enumerate(items):
                for field, obj, vec in (("matrix", A, False), ("rhs", b, True), ("x0", x0, True)):
                    if obj is None:
                        continue
                    f, name = _upload(obj, vector=vec)
                    files.append(f)
                    parts.append(_part_header(boundary, field, name or "%s%d.mtx" % (field, i + 1),
                                              not parts))
                    parts.append(f)
            parts.append(("\r\n--%s--\r\n" % boundary).encode())
            info = self.request("POST", "/v1/batches" + q, _Body(parts),
                                {"Content-Type": "multipart/form-data; boundary=" + boundary},
                                ok=(202,))
        finally:
            for f in files:
                f.close()
        return [Job(self, j["id"], j) for j in info["jobs"]]

    def job(self, job_id):
        """The Job with this id (fetched now)."""
        j = Job(self, job_id)
        j.refresh()
        return j

    def jobs(self, status=None, limit=None):
        """Jobs, newest first (all of them, or the first `limit`), as Jobs."""
        out, path = [], "/v1/jobs?limit=%d" % min(limit or 1000, 1000)
        if status:
            path += "&status=" + urllib.parse.quote(status)
        while path:
            page = self.request("GET", path)
            out += [Job(self, j["id"], j) for j in page["jobs"]]
            if limit and len(out) >= limit:
                return out[:limit]
            path = page.get("next")
        return out

    def devices(self):
        """GET /v1/devices: ranks, hosts, devices and their work-group sizes."""
        return self.request("GET", "/v1/devices")

    def health(self):
        """GET /healthz."""
        return self.request("GET", "/healthz")


class Job:
    """One job of a daemon. .id; .info is the job document as last fetched
    (refresh() fetches it again); .status, .phase (queued, parsing,
    setting_up, solving, ...), .iteration, .residual, .eta_s (seconds left
    while solving, or None), .result, .error read it."""

    def __init__(self, client, job_id, info=None):
        self.client = client
        self.id = job_id
        self.info = info or {"id": job_id}

    def __repr__(self):
        return "<clsolve.Job %s %s>" % (self.id, self.status)

    status = property(lambda self: self.info.get("status"))
    result = property(lambda self: self.info.get("result"))
    error = property(lambda self: self.info.get("error"))
    phase = property(lambda self: (self.info.get("progress") or {}).get("phase"))
    iteration = property(lambda self: (self.info.get("progress") or {}).get("iteration"))
    residual = property(lambda self: (self.info.get("progress") or {}).get("residual"))
    eta_s = property(lambda self: (self.info.get("progress") or {}).get("eta_s"))
    finished = property(lambda self: self.status in FINISHED)

    def refresh(self, wait=None):
        """Fetches the job's state. wait: seconds the server may hold the
        request until the job ends (a long poll: answered at once when it
        has ended or when it does)."""
        path = "/v1/jobs/" + self.id
        if wait is not None and wait > 0:
            path += "?wait=%.3g" % wait
        self.info = self.client.request("GET", path)
        return self.info

    def wait(self, progress=None, timeout=None, check=True):
        """Waits until the job ends and returns it. Each request is a long
        poll (GET /v1/jobs/ID?wait=S): the server answers as soon as the
        job ends, so nothing polls meanwhile. progress(job) is called after
        every answer while it runs (job.phase, .iteration, .residual): the
        waits then grow from 0.1 s to a second, so short phases are seen.
        check: raise JobFailed (JobCancelled) unless it succeeded; a job
        stopped at maxiter is a JobFailed with code "not_converged" that
        still has its solution. timeout: seconds, then WaitTimeout."""
        t0, step = time.monotonic(), 0.1
        while True:
            s = step if progress is not None else 20.0
            step = min(step * 1.5, 1.0)
            if self.client.timeout:
                s = min(s, self.client.timeout / 2)  # the request's own limit
            if timeout is not None:
                s = min(s, timeout - (time.monotonic() - t0))
            self.refresh(wait=max(s, 0.05))
            if self.finished:
                break
            if progress is not None:
                progress(self)
            if timeout is not None and time.monotonic() - t0 > timeout:
                raise errors.WaitTimeout(self, timeout)
        if progress is not None:
            progress(self)
        if check and self.status == "cancelled":
            raise errors.JobCancelled(self)
        if check and self.status == "failed":
            raise errors.JobFailed(self)
        return self

    def solution(self):
        """x: a numpy float64 array when numpy is installed, else a list of
        floats (downloaded as little-endian float64: exact). A job of k > 1
        right-hand sides gives an n x k array (a list of n rows of k
        floats without numpy)."""
        data, _ = self.client.request("GET", "/v1/jobs/%s/solution?format=binary" % self.id,
                                      raw=True)
        k = int((self.result or {}).get("rhs_columns") or 1)
        count = len(data) // 8
        if k > 1 and count % k:  # not an n x k array: give what came
            k = 1
        if _np is not None:
            x = _np.frombuffer(data, dtype="<f8").astype(_np.float64)
            # the daemon stores the columns one after the other
            return x if k == 1 else _np.ascontiguousarray(x.reshape(k, count // k).T)
        a = array.array("d")
        a.frombytes(data)
        if sys.byteorder == "big":
            a.byteswap()
        if k == 1:
            return a.tolist()
        n = count // k
        return [[a[c * n + i] for c in range(k)] for i in range(n)]

    def save_solution(self, path, format="mtx"):
        """Writes x to path as Matrix Market (format "mtx"), "json", "binary"
        (little-endian float64) or "npy" (numpy.load reads it: shape (n,),
        or (n, k) for k right-hand sides)."""
        data, _ = self.client.request("GET", "/v1/jobs/%s/solution?format=%s" % (self.id, format),
                                      raw=True)
        tmp = path + ".part"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)

    def residuals(self):
        """The relative residual per iteration from iteration 0 (a numpy
        array with numpy, else a list; None for a non-finite value)."""
        r = self.client.request("GET", "/v1/jobs/%s/residuals" % self.id)
        vals = r["residuals"]
        if _np is not None:
            return _np.array([float("nan") if v is None else v for v in vals], dtype=_np.float64)
        return vals

    def cancel(self):
        """Cancels a queued or running job (Conflict if it already ended)."""
        self.info = self.client.request("POST", "/v1/jobs/%s/cancel" % self.id, ok=(202,))
        return self

    def delete(self):
        """Removes a finished job and its files (Conflict while it runs)."""
        self.client.request("DELETE", "/v1/jobs/" + self.id, ok=(204,))

    def files(self):
        """A physics job's output files: [{name, bytes, href}]."""
        return self.client.request("GET", "/v1/jobs/%s/files" % self.id)["files"]


def solve(A, b=None, x0=None, *, tol=None, rtol=None, atol=None, maxiter=None, precond=None,
          method=None, precision=None, backend=None, url=None, token=None, client=None,
          progress=None, timeout=None):
    """Solves A x = b on a clsolved daemon, in the shape of
    scipy.sparse.linalg.cg: returns (x, info), info 0 when converged and the
    iterations run when maxiter stopped it (x is the last iterate then).
    b None: b = A*1. b of shape (n, k): k systems solved together, x of
    shape (n, k), info 0 when all converged (as spsolve, an (n, 1) b gives
    a 1-D x). A complex dtype is a TypeError, a non-square A or a b, x0 of
    the wrong length a ValueError, raised before anything is sent. A bad input, a matrix that is not symmetric positive
    definite (breakdown) or a cancelled job raise JobFailed; HTTP errors
    ApiError. The job stays in the daemon's store (client.job(id))."""
    if tol is not None and rtol is not None:
        raise TypeError("give tol or rtol, not both")
    c = client or Client(url, token=token)
    job = c.submit(A, b, x0, tol=tol if tol is not None else rtol, atol=atol, maxiter=maxiter,
                   precond=precond, method=method, precision=precision, backend=backend)
    job.wait(progress=progress, timeout=timeout, check=False)
    return _outcome(job)


def _part_header(boundary, field, fname, first):
    """The header of one multipart/form-data part (a file), with the CRLF
    that ends the part before it unless it is the first."""
    return ("%s--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n" %
            ("" if first else "\r\n", boundary, field, fname.replace('"', "_"))).encode()


def _outcome(job):
    """A finished job as solve() returns it: (x, 0) when it converged, (x,
    iterations) when maxiter stopped it with an iterate; JobCancelled or
    JobFailed raised otherwise."""
    err = job.error or {}
    if job.status == "succeeded":
        return job.solution(), 0
    if job.status == "failed" and err.get("code") == "not_converged" and \
            (job.result or {}).get("solution_available"):
        return job.solution(), int(job.result.get("iterations") or 1)
    if job.status == "cancelled":
        raise errors.JobCancelled(job)
    raise errors.JobFailed(job)


def solve_many(systems, *, tol=None, rtol=None, atol=None, maxiter=None, precond=None, method=None,
               precision=None, backend=None, url=None, token=None, client=None, timeout=None,
               workers=8):
    """Solves many independent systems on a clsolved daemon: systems is a
    list of A or (A, b) (b None: b = A*1). Every system is checked first, as
    solve() checks one, so a bad shape or dtype raises before anything is
    sent. Then they are sent in one request (Client.submit_many: POST
    /v1/batches, 1,024 systems a request), so the daemon queues them
    together and solves those that fit in one launch on a GPU, and waited
    for by `workers` threads. Returns a list in the order
    given, one (x, info) per system as solve() returns it, or (None, exc)
    for a system whose job failed (exc: the JobFailed or JobCancelled with
    the job and what the daemon said), so one bad system fails alone. HTTP
    errors (ApiError: a file the daemon refuses at upload refuses the whole
    request, and nothing is queued) and transport errors still raise."""
    from concurrent.futures import ThreadPoolExecutor
    if tol is not None and rtol is not None:
        raise TypeError("give tol or rtol, not both")
    items = []
    for s in systems:
        A, b = (s[0], s[1]) if isinstance(s, tuple) else (s, None)
        _check_system(A, b, None)
        items.append((A, b))
    c = client or Client(url, token=token)
    opts = dict(tol=tol if tol is not None else rtol, atol=atol, maxiter=maxiter, precond=precond,
                method=method, precision=precision, backend=backend, client=c, timeout=timeout)

    params = {k: v for k, v in opts.items() if k not in ("client", "timeout")}
    jobs = []
    for i in range(0, len(items), 1024):  # one request per 1,024 systems
        jobs += c.submit_many(items[i:i + 1024], **params)

    def one(job):
        job.wait(timeout=timeout, check=False)
        try:
            return _outcome(job)
        except (errors.JobFailed, errors.JobCancelled) as e:
            return None, e

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs) or 1))) as ex:
        return list(ex.map(one, jobs))
