"""The clsolve Python package (python/) against a real clsolved started
here (an MPI singleton on 127.0.0.1, port 0, a bearer token). Run by
tests/cli/test_python.sh in two virtual environments into which `pip
install --no-index ./python` put the package: one that sees Debian's numpy
and scipy, one with the standard library only; the numpy and scipy cases
skip in the second, and the plain-list cases run in both.

Environment: CLSOLVED, CLSOLVE (binaries), CLSOLVE_DATA (shared data),
TEST_TMP, CLSOLVE_SRC (the source tree, for the version check).
"""
import http.server
import math
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time
import unittest
import warnings

import clsolve

try:
    import numpy as np
except ImportError:
    np = None
try:
    import scipy.sparse as sp
    import scipy.io
except ImportError:
    sp = None

TMP = os.environ["TEST_TMP"]
DATA = os.environ.get("CLSOLVE_DATA", "")
TOKEN = "python-client-token-%d" % os.getpid()
D = {}


def setUpModule():
    data = os.path.join(TMP, "pydata-%d" % os.getpid())
    port = data + ".port"
    tok = os.path.join(TMP, "token")
    with open(tok, "w") as f:
        f.write(TOKEN + "\n")
    log = open(data + ".log", "wb")
    D["p"] = subprocess.Popen([os.environ["CLSOLVED"], "--listen", "127.0.0.1:0", "--data-dir",
                               data, "--port-file", port, "--token-file", tok,
                               "--batch", "on"],  # solve_many's batches on PoCL too
                              stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    for _ in range(600):
        if os.path.exists(port) and open(port).read().strip():
            break
        if D["p"].poll() is not None:
            raise RuntimeError("clsolved exited %s" % D["p"].returncode)
        time.sleep(0.05)
    D["url"] = "http://127.0.0.1:%d" % int(open(port).read())
    D["data"] = data


def tearDownModule():
    p = D.get("p")
    if p and p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def client(**kw):
    return clsolve.Client(D["url"], token=TOKEN, **kw)


def nowhere():
    """A client of a port nothing listens on: any request it makes is a
    TransportError, so a ValueError or TypeError from it proves the
    argument was refused before anything was sent."""
    return clsolve.Client("http://127.0.0.1:1", retries=0)


def shared(rel):
    path = os.path.join(DATA, rel)
    if not os.path.exists(path):
        raise unittest.SkipTest("%s not found" % path)
    return path


def laplacian_lists(n):
    """The 1-D Laplacian (2, -1) as a list of lists."""
    return [[2.0 if i == j else -1.0 if abs(i - j) == 1 else 0.0 for j in range(n)] for i in range(n)]


def rel_residual_lists(A, x, b):
    r = [bi - sum(a * xj for a, xj in zip(row, x)) for row, bi in zip(A, b)]
    return math.sqrt(math.fsum(v * v for v in r)) / math.sqrt(math.fsum(v * v for v in b))


class Basics(unittest.TestCase):
    def test_version_is_cmake_project_version(self):
        text = open(os.path.join(os.environ["CLSOLVE_SRC"], "CMakeLists.txt")).read()
        want = re.search(r"project\(clsolve VERSION ([0-9.]+)", text).group(1)
        self.assertEqual(clsolve.__version__, want)

    def test_health_and_devices(self):
        c = client()
        self.assertEqual(c.health()["status"], "ok")
        self.assertGreaterEqual(len(c.devices()["per_rank"][0]["devices"]), 1)

    def test_matrix_market_text(self):
        f = clsolve.matrix_market([[4, 1], [1, 3]])
        self.assertEqual(f.getvalue().decode(), "%%MatrixMarket matrix coordinate real general\n"
                         "2 2 4\n1 1 4.0\n1 2 1.0\n2 1 1.0\n2 2 3.0\n")
        v = clsolve.vector_market([0.1, 1e-300])
        self.assertEqual([float(l) for l in v.getvalue().decode().splitlines()[2:]], [0.1, 1e-300])


class Lists(unittest.TestCase):
    """No numpy needed: a list of lists in, a list (or array) out."""

    def test_solve_lists(self):
        A = laplacian_lists(30)
        b = [math.sin(i + 1.0) for i in range(30)]
        x, info = clsolve.solve(A, b, rtol=1e-12, client=client())
        self.assertEqual(info, 0)
        self.assertEqual(len(x), 30)
        if np is None:
            self.assertIsInstance(x, list)
        self.assertLess(rel_residual_lists(A, list(x), b), 1e-11)

    def test_solve_many(self):
        """Several systems, one call: each its own (x, info) in the order
        given; a system whose job fails is (None, JobFailed) and the others
        are still solved; a bad shape raises before anything is sent."""
        sizes = [5, 30, 12, 50]
        systems = []
        for n in sizes:
            A = laplacian_lists(n)
            systems.append((A, [math.cos(i + 0.5 * n) for i in range(n)]))
        systems.insert(2, shared("matrices/west0067.mtx"))  # not SPD: fails alone
        systems.append(laplacian_lists(8))                   # b = A*1
        out = clsolve.solve_many(systems, rtol=1e-12, client=client(), workers=3)
        self.assertEqual(len(out), len(systems))
        x, e = out[2]
        self.assertIsNone(x)
        self.assertIsInstance(e, clsolve.JobFailed)
        self.assertEqual(e.code, "breakdown")
        for k, (s, (x, info)) in enumerate(zip(systems, out)):
            if k == 2:
                continue
            A, b = s if isinstance(s, tuple) else (s, [sum(row) for row in s])
            self.assertEqual(info, 0, "system %d" % k)
            self.assertEqual(len(x), len(A))
            self.assertLess(rel_residual_lists(A, list(x), b), 1e-11, "system %d" % k)
        with self.assertRaises(ValueError):  # checked before the upload
            clsolve.solve_many([laplacian_lists(4), (laplacian_lists(4), [1.0] * 5)], client=nowhere())
        # one request (POST /v1/batches): the daemon met the jobs together
        # and solved them in one launch (its --batch on)
        recent = client().jobs(limit=len(systems))
        modes = sorted(((j.info.get("placement") or {}).get("mode"),
                        (j.info.get("placement") or {}).get("batch")) for j in recent)
        self.assertEqual(modes, [("batch", len(systems))] * len(systems), modes)

    def test_submit_many(self):
        """POST /v1/batches through the client: the jobs in order, each an
        ordinary job; a file the daemon refuses at upload refuses the whole
        request (ApiError 400 naming it) and queues nothing."""
        c = client()
        jobs = c.submit_many([laplacian_lists(6), (laplacian_lists(9), [1.0] * 9)], tol=1e-12)
        self.assertEqual(len(jobs), 2)
        for j, n in zip(jobs, (6, 9)):
            j.wait(timeout=120)
            self.assertEqual(j.status, "succeeded")
            self.assertEqual(j.result["rows"], n)
        before = len(c.jobs())
        bad = os.path.join(TMP, "bad-batch.mtx")
        with open(bad, "w") as f:
            f.write("%%MatrixMarket matrix coordinate real nonsense\n2 2 1\n1 1 1\n")
        with self.assertRaises(clsolve.ApiError) as cm:
            c.submit_many([laplacian_lists(4), bad])
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("bad-batch.mtx", str(cm.exception))
        self.assertEqual(len(c.jobs()), before)

    def test_not_converged_is_info_iterations(self):
        x, info = clsolve.solve(laplacian_lists(50), rtol=1e-14, maxiter=3, client=client())
        self.assertEqual(info, 3)
        self.assertEqual(len(x), 50)

    def test_atol_stops_by_scipys_rule(self):
        # shifted (2.05, -1): CG's residual falls steadily, so atol stops it
        # well before rtol would (on the plain Laplacian with b = 1 it falls
        # to 0 in one step at the end, and x = i(n+1-i)/2 can come out exact)
        A = [[v + (0.05 if i == j else 0.0) for j, v in enumerate(row)]
             for i, row in enumerate(laplacian_lists(200))]
        b = [1.0] * 200
        bn = math.sqrt(200.0)
        x, info = clsolve.solve(A, b, rtol=1e-15, atol=1e-3, client=client())
        self.assertEqual(info, 0)
        rel = rel_residual_lists(A, list(x), b)
        self.assertLessEqual(rel * bn, 1e-3 * 1.5)
        self.assertGreater(rel, 1e-15)  # it stopped on atol, not on rtol

    def test_submit_path_wait_progress_residuals(self):
        path = shared("matrices/1138_bus.mtx")
        c = client()
        seen = []
        job = c.submit(path, precond="jacobi", tol=1e-10, method="pipecg")
        self.assertEqual(job.info["inputs"]["matrix"], "1138_bus.mtx")
        job.wait(progress=lambda j: seen.append((j.status, j.phase, j.iteration)))
        self.assertEqual(job.status, "succeeded")
        self.assertTrue(seen and seen[-1][0] == "succeeded", seen)
        self.assertEqual(job.result["method"], "pipecg")
        res = list(job.residuals())
        self.assertEqual(len(res), job.result["iterations"] + 1)
        self.assertEqual(res[0], 1.0)
        self.assertLess(res[-1], 1e-10)
        x = job.solution()
        self.assertEqual(len(x), 1138)
        self.assertLess(max(abs(v - 1.0) for v in x), 1e-5)  # b = A*1
        out = os.path.join(TMP, "x-1138.mtx")
        job.save_solution(out)
        self.assertTrue(open(out).readline().startswith("%%MatrixMarket matrix array real"))

    def test_listing_and_lookup(self):
        c = client()
        job = c.submit(laplacian_lists(5))
        self.assertIn(job.id, [j.id for j in c.jobs(limit=1000)])
        self.assertEqual(c.job(job.id).id, job.id)
        job.wait()


class Errors(unittest.TestCase):
    def test_bad_header_carries_the_problem(self):
        with self.assertRaises(clsolve.BadRequest) as cm:
            client().submit(b"%%MatrixMarket matrix coordinate quaternion general\n1 1 1\n1 1 1\n")
        e = cm.exception
        self.assertEqual(e.status, 400)
        self.assertEqual(e.slug, "bad-matrix-header")
        self.assertEqual(e.problem["type"], "urn:clsolve:problem:bad-matrix-header")
        self.assertEqual(e.line, 1)
        self.assertTrue(e.detail.startswith("matrix.mtx:1:"), e.detail)

    def test_bad_parameter(self):
        with self.assertRaises(clsolve.BadRequest) as cm:
            client().submit(laplacian_lists(3), precond="ilu")
        self.assertEqual(cm.exception.slug, "bad-parameter")
        self.assertIn("precond", cm.exception.detail)

    def test_breakdown_is_job_failed(self):
        with self.assertRaises(clsolve.JobFailed) as cm:
            clsolve.solve(shared("matrices/west0067.mtx"), client=client())
        e = cm.exception
        self.assertEqual((e.code, e.exit_code), ("breakdown", 5))
        self.assertIn("symmetric positive-definite", e.error["message"])
        self.assertEqual(e.job.status, "failed")

    def test_parse_error_deep_in_the_file(self):
        bad = b"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 x 1\n"
        job = client().submit(bad)
        with self.assertRaises(clsolve.JobFailed) as cm:
            job.wait()
        self.assertEqual((cm.exception.code, cm.exception.line), ("bad_input", 4))

    def test_unknown_job(self):
        with self.assertRaises(clsolve.NotFound) as cm:
            client().job("0123456789abcdef0123456789abcdef")
        self.assertEqual(cm.exception.slug, "unknown-job")

    def test_unauthorized(self):
        with self.assertRaises(clsolve.Unauthorized) as cm:
            clsolve.Client(D["url"], token="wrong-token-123").jobs()
        self.assertEqual(cm.exception.problem["status"], 401)

    def test_unreachable(self):
        with self.assertRaises(clsolve.TransportError):
            clsolve.Client("http://127.0.0.1:1", retries=0).health()

    def test_cancel_and_delete(self):
        path = os.path.join(TMP, "p2d-600.mtx")
        if not os.path.exists(path):
            subprocess.run([os.environ["CLSOLVE"], "gen", "poisson2d", "600", "-o", path],
                           check=True, stdout=subprocess.DEVNULL)
        c = client()
        job = c.submit(path, tol=1e-14)
        t0 = time.time()
        while job.refresh()["status"] != "running" or not job.iteration:
            self.assertLess(time.time() - t0, 120, "never ran")
            self.assertIn(job.status, ("queued", "running"))
            time.sleep(0.05)
        with self.assertRaises(clsolve.Conflict) as cm:
            job.delete()
        self.assertEqual(cm.exception.problem["job_status"], "running")
        job.cancel()
        with self.assertRaises(clsolve.JobCancelled):
            job.wait(timeout=120)
        with self.assertRaises(clsolve.Conflict) as cm:
            job.cancel()
        self.assertEqual((cm.exception.slug, cm.exception.problem["job_status"]),
                         ("job-finished", "cancelled"))
        job.delete()
        with self.assertRaises(clsolve.NotFound):
            job.refresh()

    def test_wait_timeout(self):
        job = client().submit(laplacian_lists(4))
        try:
            job.wait(timeout=0)
        except clsolve.WaitTimeout as e:
            self.assertIs(e.job, job)
        job.wait()


class Strict(unittest.TestCase):
    """Issue 30 item 4, without numpy: the URL checked when the Client is
    made, the exceptions in Python's hierarchy, list arguments checked
    before the upload, several right-hand sides as lists."""

    def test_garbage_url_is_refused_at_construction(self):
        for url in ("not a url", "http//x", "ftp://127.0.0.1:8080", "http://", "http://h:x",
                    "http://h:99999", "http://h:80/?q=1"):
            with self.assertRaises(ValueError, msg=url) as cm:
                clsolve.Client(url)
            self.assertIn(repr(url), str(cm.exception))
            self.assertIn("http://HOST[:PORT]", str(cm.exception))
        self.assertEqual(clsolve.Client("https://h.example:8443/").url, "https://h.example:8443")

    def test_garbage_server_variable_is_named(self):
        old = os.environ.get("CLSOLVE_SERVER")
        os.environ["CLSOLVE_SERVER"] = "localhost:8080"  # no scheme
        try:
            with self.assertRaises(ValueError) as cm:
                clsolve.Client()
            self.assertIn("$CLSOLVE_SERVER", str(cm.exception))
        finally:
            if old is None:
                del os.environ["CLSOLVE_SERVER"]
            else:
                os.environ["CLSOLVE_SERVER"] = old

    def test_exceptions_in_the_standard_hierarchy(self):
        self.assertTrue(issubclass(clsolve.TransportError, ConnectionError))
        self.assertTrue(issubclass(clsolve.BadRequest, ValueError))
        self.assertTrue(issubclass(clsolve.PayloadTooLarge, ValueError))
        self.assertTrue(issubclass(clsolve.NotFound, LookupError))
        self.assertTrue(issubclass(clsolve.Unauthorized, PermissionError))
        self.assertTrue(issubclass(clsolve.WaitTimeout, TimeoutError))
        with self.assertRaises(ConnectionError) as cm:
            clsolve.Client("http://127.0.0.1:1", retries=0).health()
        self.assertIsInstance(cm.exception, clsolve.TransportError)
        with self.assertRaises(ValueError) as cm:
            client().submit(laplacian_lists(3), precond="ilu")
        self.assertIsInstance(cm.exception, clsolve.BadRequest)
        with self.assertRaises(LookupError):
            client().job("0123456789abcdef0123456789abcdef")
        with self.assertRaises(PermissionError) as cm:
            clsolve.Client(D["url"], token="wrong-token-123").jobs()
        self.assertEqual(cm.exception.status, 401)
        self.assertIsInstance(cm.exception, clsolve.Error)

    def test_request_timeout_is_a_timeout_error(self):
        # a listening socket that never accepts: the connection is made (the
        # kernel's backlog), the answer never comes
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        try:
            c = clsolve.Client("http://127.0.0.1:%d" % s.getsockname()[1], timeout=0.3, retries=0)
            with self.assertRaises(TimeoutError) as cm:
                c.health()
            self.assertIsInstance(cm.exception, clsolve.RequestTimeout)
            self.assertIsInstance(cm.exception, ConnectionError)
        finally:
            s.close()

    def test_lists_are_checked_before_the_upload(self):
        with self.assertRaises(ValueError) as cm:
            nowhere().submit([[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0]])
        self.assertIn("square", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            nowhere().submit(laplacian_lists(3), [1.0, 2.0])
        self.assertIn("incompatible", str(cm.exception))
        with self.assertRaises(ValueError):
            nowhere().submit(laplacian_lists(3), [1.0, 2.0, 3.0], x0=[0.0] * 4)
        with self.assertRaises(TypeError) as cm:
            clsolve.solve([[2.0, 1j], [1j, 2.0]], client=nowhere())
        self.assertIn("real systems", str(cm.exception))
        with self.assertRaises(TypeError):
            nowhere().submit(laplacian_lists(2), [1.0, 1j])

    def test_several_right_hand_sides_as_lists(self):
        n, k = 25, 3
        A = laplacian_lists(n)
        B = [[math.sin(i + 1.0), 1.0, float(i)] for i in range(n)]
        x, info = clsolve.solve(A, B, rtol=1e-12, client=client())
        self.assertEqual(info, 0)
        X = x.tolist() if np is not None else x
        self.assertEqual((len(X), len(X[0])), (n, k))
        for c in range(k):
            self.assertLess(rel_residual_lists(A, [row[c] for row in X], [row[c] for row in B]),
                            1e-11)


class _Busy(http.server.BaseHTTPRequestHandler):
    """503 with Retry-After: 0 for the first `busy` POSTs, then 202."""
    busy = 2
    posts = 0

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        self.rfile.read(n)
        cls = type(self)
        cls.posts += 1
        if cls.posts <= cls.busy:
            body = b'{"type":"urn:clsolve:problem:queue-full","title":"Service Unavailable",' \
                   b'"status":503,"detail":"the job queue is full; retry later"}'
            self.send_response(503)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Type", "application/problem+json")
        else:
            body = b'{"id":"0123456789abcdef0123456789abcdef","status":"queued"}'
            self.send_response(202)
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class Retry(unittest.TestCase):
    def test_503_is_retried_after_retry_after(self):
        srv = http.server.HTTPServer(("127.0.0.1", 0), _Busy)
        th = threading.Thread(target=srv.serve_forever, daemon=True)
        th.start()
        try:
            url = "http://127.0.0.1:%d" % srv.server_address[1]
            _Busy.posts, _Busy.busy = 0, 2
            job = clsolve.Client(url, retries=3).submit(laplacian_lists(2))
            self.assertEqual((job.id, _Busy.posts), ("0123456789abcdef0123456789abcdef", 3))
            _Busy.posts, _Busy.busy = 0, 5
            with self.assertRaises(clsolve.ServiceUnavailable) as cm:
                clsolve.Client(url, retries=1).submit(laplacian_lists(2))
            self.assertEqual((cm.exception.retry_after, _Busy.posts), (0.0, 2))
            self.assertEqual(cm.exception.slug, "queue-full")
        finally:
            srv.shutdown()
            srv.server_close()


@unittest.skipIf(np is None, "numpy is not installed here")
class Numpy(unittest.TestCase):
    def test_dense_numpy(self):
        rng = np.random.default_rng(7)
        B = rng.standard_normal((40, 40))
        A = B @ B.T + 40 * np.eye(40)
        b = rng.standard_normal(40)
        x, info = clsolve.solve(A, b, rtol=1e-12, client=client())
        self.assertEqual(info, 0)
        self.assertIsInstance(x, np.ndarray)
        self.assertEqual(x.dtype, np.float64)
        np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-9, atol=1e-12)

    def test_x0_is_used(self):
        A = np.array(laplacian_lists(20))
        b = A @ np.ones(20)
        job = client().submit(A, b, x0=np.ones(20), tol=1e-10)
        job.wait()
        self.assertEqual(job.result["iterations"], 0)

    def test_complex_is_refused_before_the_upload(self):
        A = np.array(laplacian_lists(4)) * (1 + 0j)
        b = np.ones(4)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a ComplexWarning would mean a cast was tried
            with self.assertRaises(TypeError) as cm:
                clsolve.solve(A, b, client=nowhere())
            self.assertIn("complex", str(cm.exception))
            with self.assertRaises(TypeError):
                nowhere().submit(A.real, b + 1j)
            with self.assertRaises(TypeError):
                nowhere().submit(A.real, b, x0=np.zeros(4, dtype=np.complex64))
            with self.assertRaises(TypeError):
                clsolve.vector_market(b * 1j)

    def test_shapes_are_checked_before_the_upload(self):
        A = np.array(laplacian_lists(5))
        cases = [((np.ones((5, 4)), None, None), "matrix must be square (has shape (5, 4))"),
                 ((A, np.ones(4), None), "shapes of A (5, 5) and b (4,) are incompatible"),
                 ((A, np.ones((6, 2)), None), "shapes of A (5, 5) and b (6, 2) are incompatible"),
                 ((A, np.ones(5), np.ones(6)), "shapes of A (5, 5) and x0 (6,) are incompatible"),
                 ((A, np.ones((5, 2)), np.ones((5, 2))), "x0 (5, 2)"),
                 ((A, np.ones((5, 2, 1)), None), "1 or 2 dimensions")]
        for (M, b, x0), want in cases:
            with self.assertRaises(ValueError, msg=want) as cm:
                nowhere().submit(M, b, x0=x0)
            self.assertIn(want, str(cm.exception))

    def test_several_right_hand_sides(self):
        rng = np.random.default_rng(11)
        Q = rng.standard_normal((30, 30))
        A = Q @ Q.T + 30 * np.eye(30)
        B = rng.standard_normal((30, 4))
        x, info = clsolve.solve(A, B, rtol=1e-12, client=client())
        self.assertEqual(info, 0)
        self.assertEqual(x.shape, (30, 4))
        np.testing.assert_allclose(x, np.linalg.solve(A, B), rtol=1e-9, atol=1e-12)
        job = client().submit(A, B, x0=np.zeros(30), tol=1e-12)
        job.wait()
        self.assertEqual(job.result["rhs_columns"], 4)
        np.testing.assert_allclose(job.solution(), x, rtol=1e-9, atol=1e-12)
        # the same x as .npy: an n x k array numpy reads as it is
        path = os.path.join(TMP, "x4.npy")
        job.save_solution(path, format="npy")
        xn = np.load(path)
        self.assertEqual(xn.shape, (30, 4))
        self.assertTrue(np.array_equal(xn, job.solution()))
        # an n x 1 b is one right-hand side: x is 1-D, as spsolve gives it
        x1, info = clsolve.solve(A, B[:, :1], rtol=1e-12, client=client())
        self.assertEqual((x1.shape, info), ((30,), 0))
        np.testing.assert_allclose(x1, x[:, 0], rtol=1e-9, atol=1e-12)


@unittest.skipIf(sp is None, "scipy is not installed here")
class Scipy(unittest.TestCase):
    def poisson2d(self, n):
        T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
        return (sp.kron(sp.eye(n), T) + sp.kron(T, sp.eye(n))).tocsr()

    def test_solve_scipy_sparse(self):
        A = self.poisson2d(30)
        rng = np.random.default_rng(3)
        b = rng.standard_normal(A.shape[0])
        phases = []
        x, info = clsolve.solve(A, b, rtol=1e-10, precond="jacobi", client=client(),
                                progress=lambda j: phases.append(j.phase))
        self.assertEqual(info, 0)
        self.assertLess(np.linalg.norm(b - A @ x) / np.linalg.norm(b), 1e-10)
        import scipy.sparse.linalg as sla
        np.testing.assert_allclose(x, sla.spsolve(A.tocsc(), b), rtol=1e-7, atol=1e-9)
        self.assertIn("done", phases)

    def test_symmetric_storage_on_the_wire(self):
        A = self.poisson2d(4)
        text = clsolve.matrix_market(A).getvalue().decode().splitlines()
        self.assertEqual(text[0], "%%MatrixMarket matrix coordinate real symmetric")
        self.assertEqual(int(text[1].split()[2]), (A.nnz + A.shape[0]) // 2)
        N = A.tolil()
        N[0, 1] = 5.0
        self.assertIn("general", clsolve.matrix_market(N.tocsr()).getvalue().decode().splitlines()[0])

    def test_binary_csr_on_the_wire(self):
        """A scipy matrix goes up in the binary CSR form (no text): its bytes
        are the documented layout, duplicates summed and columns sorted in a
        copy (the caller's matrix untouched), and the daemon solves it."""
        import struct
        C = sp.coo_matrix(([1.0, 2.0, 4.0, 3.0, 5.0], ([1, 0, 1, 1, 0], [1, 0, 0, 1, 1])),
                          shape=(2, 2))  # (1,1) twice: 1 + 3; unsorted
        before = (C.row.copy(), C.col.copy(), C.data.copy())
        raw = clsolve.csr_binary(C).getvalue()
        self.assertEqual(raw[:8], b"CLSCSR01")
        self.assertEqual(struct.unpack("<qqq", raw[8:32]), (2, 2, 4))
        self.assertEqual(len(raw), 32 + 8 * 3 + 12 * 4)
        self.assertEqual(struct.unpack("<3q", raw[32:56]), (0, 2, 4))
        self.assertEqual(struct.unpack("<4i", raw[56:72]), (0, 1, 0, 1))
        self.assertEqual(struct.unpack("<4d", raw[72:104]), (2.0, 5.0, 4.0, 4.0))
        for a, b in zip(before, (C.row, C.col, C.data)):
            np.testing.assert_array_equal(a, b)
        A = self.poisson2d(20)
        b = np.random.default_rng(8).standard_normal(A.shape[0])
        job = client().submit(A, b, tol=1e-10)
        job.wait(timeout=120)
        self.assertEqual(job.status, "succeeded")
        self.assertEqual(job.result["nnz"], A.nnz)
        x = job.solution()
        self.assertLess(np.linalg.norm(b - A @ x) / np.linalg.norm(b), 1e-10)

    def test_complex_sparse_is_refused_before_the_upload(self):
        A = self.poisson2d(4).astype(np.complex128)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with self.assertRaises(TypeError) as cm:
                clsolve.solve(A, np.ones(16), client=nowhere())
            self.assertIn("complex128", str(cm.exception))
            with self.assertRaises(TypeError):
                clsolve.matrix_market(A)

    def test_non_square_sparse_is_refused_before_the_upload(self):
        with self.assertRaises(ValueError) as cm:
            clsolve.solve(sp.random(6, 5, density=0.5, format="csr", random_state=1),
                          client=nowhere())
        self.assertEqual(str(cm.exception), "matrix must be square (has shape (6, 5))")

    def test_several_right_hand_sides_against_spsolve(self):
        import scipy.sparse.linalg as sla
        A = self.poisson2d(12)
        B = np.random.default_rng(5).standard_normal((A.shape[0], 3))
        x, info = clsolve.solve(A, B, rtol=1e-11, precond="jacobi", client=client())
        self.assertEqual((info, x.shape), (0, B.shape))
        np.testing.assert_allclose(x, sla.spsolve(A.tocsc(), B), rtol=1e-8, atol=1e-10)

    def test_real_matrix_against_scipy(self):
        A = scipy.io.mmread(shared("matrices/494_bus.mtx")).tocsr()
        b = A @ np.linspace(-1, 1, A.shape[0])
        x, info = clsolve.solve(A, b, rtol=1e-11, client=client())
        self.assertEqual(info, 0)
        self.assertLess(np.linalg.norm(b - A @ x) / np.linalg.norm(b), 1e-10)


if __name__ == "__main__":
    unittest.main()
