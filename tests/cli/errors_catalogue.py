#!/usr/bin/env python3
"""errors_catalogue.py: makes every row of docs/errors.md a test.

The catalogue is the source of truth. This script parses its tables (ID,
input, message, exit, HTTP, tested by) and runs, for every ID, the case of
the same name below: the case builds the input the row describes and feeds
it to the real `clsolve` and/or the real daemon; the checker then compares
what came back with the row itself:

  * exit     the CLI exit code (a number; "N (OTHER-ID)" takes the messages
             of OTHER-ID; "—" when the row has no command-line channel);
  * HTTP     the HTTP status and the problem's type slug ("413
             upload-too-large"; the answer must be application/problem+json
             unless the row is marked ⚠), or "job: CODE" for an error found after
             the upload was accepted (the job ends failed, or cancelled, with
             error.code CODE and error.exit_code the code's exit code), again
             with an optional "(OTHER-ID)";
  * message  every `code span` must appear in the message (stderr and stdout
             of the command, the problem's `detail`, the job's
             error.message); the span `NAME:LINE:` stands for "a file name,
             a colon, the line number, a colon": the message must have one,
             and the HTTP answer or job error a `line` field equal to it.

A row whose "tested by" cell names another test file is only checked for
that file existing and mentioning the ID (a `# errors.md: ID` marker); a
row marked "not tested: REASON" must have no case. The script fails when an
ID has no case, a case has no row, or any check fails.

Standard library only. Run by tests/cli/test_errors.sh (which starts the
daemon); see that script for the arguments.
"""
import argparse
import concurrent.futures
import gzip
import http.client
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid

DASH = ("—", "-", "–", "")
JOB_EXIT = {"bad_input": 3, "not_converged": 4, "breakdown": 5, "bad_request": 2,
            "internal": 1, "cancelled": 1, "resources": 1}
ID_RE = re.compile(r"^([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+)")


# --------------------------------------------------------------- the document

def split_row(line):
    """Cells of a markdown table row; '\\|' is a literal bar."""
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    cells, cur, i = [], [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] == "|":
            cur.append("|")
            i += 2
            continue
        if s[i] == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(s[i])
        i += 1
    cells.append("".join(cur).strip())
    return cells


def parse_doc(path):
    rows, errors = {}, []
    header = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.lstrip().startswith("|"):
                header = None
                continue
            cells = split_row(line)
            low = [c.lower() for c in cells]
            if low and low[0] == "id":
                header = {}
                for k, c in enumerate(low):
                    for key in ("input", "message", "exit", "http", "tested by"):
                        if c.startswith(key):
                            header[key] = k
                continue
            if header is None or set(cells[0]) <= set("-: "):
                continue
            m = ID_RE.match(cells[0])
            if not m:
                continue
            rid = m.group(1)
            if rid in rows:
                errors.append("%s: ID listed twice (line %d)" % (rid, n))
            get = lambda k: cells[header[k]] if k in header and header[k] < len(cells) else ""
            rows[rid] = {"id": rid, "line": n, "warn": "⚠" in cells[0], "input": get("input"),
                         "message": get("message"), "exit": get("exit"),
                         "http": get("http"), "tested_by": get("tested by")}
    return rows, errors


def frags(cell):
    return re.findall(r"`([^`]+)`", cell)


def parse_expect(cell):
    """'—' -> None; '3' -> (3, None); '3 (ID)' -> (3, 'ID'); 'job: code (ID)' ->
    ('job', 'code', 'ID')."""
    c = cell.strip().strip("*").strip()
    if c in DASH:
        return None
    ref = None
    m = re.search(r"\(([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+)\)", c)
    if m:
        ref = m.group(1)
        c = (c[:m.start()] + c[m.end():]).strip()
    m = re.match(r"^job:\s*([a-z_]+)$", c)
    if m:
        return ("job", m.group(1), ref, None)
    m = re.match(r"^(\d+)(?:\s+`?([a-z][a-z-]*)`?)?$", c)
    if m:
        return ("code", int(m.group(1)), ref, m.group(2))
    return ("bad", c, ref, None)


# ---------------------------------------------------------------- observations

class Obs:
    """What one channel answered: kind 'cli' (code = exit status), 'http'
    (code = HTTP status), 'job' (code = error.code, status = job status)."""

    def __init__(self, kind, code, text, line=None, want_line=None, what="", extra=None):
        self.kind, self.code, self.text, self.line = kind, code, text, line
        self.want_line, self.what, self.extra = want_line, what, extra or {}

    def __repr__(self):
        return "<%s %s %r>" % (self.kind, self.code, self.text[:200])


class Pending:
    """A job submitted and accepted; resolved to an Obs('job') later."""

    def __init__(self, job_id, want_line=None, what="", keep=False):
        self.id, self.want_line, self.what, self.keep = job_id, want_line, what, keep


class CaseError(Exception):
    pass


# --------------------------------------------------------------- the harness

class T:
    def __init__(self, a):
        self.a = a
        self.clsolve = a.clsolve
        self.clsolved = os.path.join(os.path.dirname(a.clsolve), "clsolved")
        self.tmp = a.tmp
        self.data = a.data
        self.url = a.url
        hp = a.url.split("//", 1)[1]
        self.host, self.port = hp.rsplit(":", 1)[0], int(hp.rsplit(":", 1)[1])
        self.token = open(a.token_file).read().strip()
        self.lock = threading.Lock()
        self.n = 0
        self.env = dict(os.environ)
        self.env["CLSOLVE_TOKEN"] = self.token
        self.env["CLSOLVE_SERVER"] = self.url
        self.cur = threading.local()

    # ---- files
    def file(self, name, content):
        """Writes content (str or bytes) to a fresh file named name."""
        with self.lock:
            self.n += 1
            d = os.path.join(self.tmp, "c%04d" % self.n)
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(content.encode("latin-1") if isinstance(content, str) else content)
        return p

    def dir(self):
        with self.lock:
            self.n += 1
            d = os.path.join(self.tmp, "c%04d" % self.n)
        os.makedirs(d, exist_ok=True)
        return d

    def shared(self, rel):
        p = os.path.join(self.data, rel)
        if not os.path.exists(p):
            raise CaseError("SKIP: %s not found" % p)
        return p

    # ---- command line
    def run(self, argv, env=None, timeout=120, line=None, what=""):
        e = dict(self.env)
        e.update(env or {})
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=e, timeout=timeout, cwd=self.tmp)
        except subprocess.TimeoutExpired:
            raise CaseError("'%s' ran past %d s" % (" ".join(argv), timeout))
        text = p.stderr.decode("utf-8", "replace") + p.stdout.decode("utf-8", "replace")
        return Obs("cli", p.returncode, text, want_line=line,
                   what=what or " ".join(os.path.basename(x) if x.startswith("/") else x
                                         for x in argv[:6]))

    def cli(self, *args, **kw):
        return self.run([self.clsolve] + list(args), **kw)

    def daemon(self, *args, **kw):
        """clsolved as an MPI singleton (no mpirun): startup errors only."""
        kw.setdefault("timeout", 60)
        return self.run([self.clsolved] + list(args), **kw)

    # ---- HTTP
    def request(self, method, path, body=None, headers=None, token=True, timeout=60):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        h = dict(headers or {})
        if token is True:
            h["Authorization"] = "Bearer " + self.token
        elif token:
            h["Authorization"] = token
        try:
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            conn.close()

    def http(self, method, path, body=None, headers=None, token=True, line=None, what=""):
        st, hd, data = self.request(method, path, body, headers, token)
        return self.answer(st, hd, data, line, what or "%s %s" % (method, path[:60]))

    def answer(self, st, hd, data, line=None, what=""):
        text = data.decode("utf-8", "replace")
        pline, problem = None, None
        if "json" in hd.get("content-type", ""):
            try:
                j = json.loads(text)
                if isinstance(j, dict) and "detail" in j:
                    problem = j
                    text = j["detail"]
                    pline = j.get("line")
            except ValueError:
                pass
        return Obs("http", st, text, line=pline, want_line=line, what=what,
                   extra={"headers": hd, "body": data, "problem": problem})

    def post(self, body=b"", query="", headers=None, line=None, what="", keep=False,
             retry_full=True):
        """POST /v1/jobs: an Obs for an answer other than 202, else a Pending."""
        for _ in range(600):
            st, hd, data = self.request("POST", "/v1/jobs" + query, body, headers)
            if st == 503 and retry_full and b"queue-full" in data:
                time.sleep(0.05)
                continue
            break
        if st == 202:
            return Pending(json.loads(data)["id"], want_line=line, what=what or "POST " + query,
                           keep=keep)
        return self.answer(st, hd, data, line, what or "POST /v1/jobs" + query)

    def multipart(self, parts, boundary=None):
        """parts: (name, filename or None, bytes); returns (body, headers)."""
        b = boundary or "----clsolve" + uuid.uuid4().hex
        out = []
        for name, filename, data in parts:
            if isinstance(data, str):
                data = data.encode("latin-1")
            disp = 'form-data; name="%s"' % name
            if filename is not None:
                disp += '; filename="%s"' % filename
            out.append(("--%s\r\nContent-Disposition: %s\r\n"
                        "Content-Type: application/octet-stream\r\n\r\n" % (b, disp)).encode()
                       + data + b"\r\n")
        body = b"".join(out) + ("--%s--\r\n" % b).encode()
        return body, {"Content-Type": "multipart/form-data; boundary=" + b}

    def post_mp(self, parts, query="", line=None, what="", keep=False):
        body, h = self.multipart(parts)
        return self.post(body, query, h, line=line, what=what or "POST multipart " + query,
                         keep=keep)

    def job(self, job_id):
        st, _, data = self.request("GET", "/v1/jobs/" + job_id)
        if st != 200:
            raise CaseError("GET job %s: HTTP %d" % (job_id, st))
        return json.loads(data)

    def wait(self, job_id, timeout=300, until=("succeeded", "failed", "cancelled")):
        t0 = time.time()
        while True:
            j = self.job(job_id)
            if j["status"] in until:
                return j
            if time.time() - t0 > timeout:
                raise CaseError("job %s still %s after %d s" % (job_id, j["status"], timeout))
            time.sleep(0.02)

    def wait_running(self, job_id, iteration=1, timeout=120):
        t0 = time.time()
        while time.time() - t0 < timeout:
            j = self.job(job_id)
            if j["status"] == "running" and (j["progress"] or {}).get("iteration", 0) >= iteration:
                return j
            if j["status"] not in ("queued", "running"):
                raise CaseError("job %s ended %s before it ran: %s" % (job_id, j["status"],
                                                                       j.get("error")))
            time.sleep(0.02)
        raise CaseError("job %s did not start running in %d s" % (job_id, timeout))

    def resolve(self, p):
        j = self.wait(p.id)
        e = j.get("error") or {}
        if j["status"] == "succeeded":
            return Obs("job", "succeeded", json.dumps(j.get("result"))[:300], what=p.what,
                       extra={"job": j})
        return Obs("job", e.get("code"), e.get("message", ""), line=e.get("line"),
                   want_line=p.want_line, what=p.what,
                   extra={"job": j, "status": j["status"], "exit_code": e.get("exit_code")})

    # ---- small builders
    @staticmethod
    def mm(banner, size, *entries):
        return "%%%%MatrixMarket matrix %s\n%s\n%s" % (banner, size, "".join(e + "\n" for e in entries))


# ----------------------------------------------------------------- the cases

CASES = {}


def case(*ids):
    def reg(fn):
        for i in ids:
            if i in CASES:
                raise SystemExit("case %s defined twice" % i)
            CASES[i] = fn
        return fn
    return reg



# ---- Matrix Market files

GEN = "coordinate real general"
SYM = "coordinate real symmetric"


def mm_case(t, content, line, http=True, name="a.mtx", cmd="check"):
    """The file through `clsolve CMD` and, as a raw body, through the daemon."""
    p = t.file(name, content)
    out = {"cli": t.cli(cmd, p, line=line)}
    if http:
        body = content.encode("latin-1") if isinstance(content, str) else content
        out["http"] = t.post(body, line=line, what="raw body")
    return out


def mm_row(ident, content, line, **kw):
    CASES[ident] = lambda t: mm_case(t, content, line, **kw)


mm_row("MM-EMPTY", "", 1)
mm_row("MM-BOM-CUT", b"\xef\xbb", 1)
mm_row("MM-NO-BANNER", "hello world\n1 1 1\n", 1)
mm_row("MM-BANNER-WORD", "%%MatrixMarketmatrix coordinate real general\n1 1 1\n1 1 1\n", 1)
mm_row("MM-BANNER-SHORT", "%%MatrixMarket matrix coordinate real\n1 1 1\n1 1 1\n", 1)
mm_row("MM-OBJECT", "%%MatrixMarket vector coordinate real general\n1 1 1\n1 1 1\n", 1)
mm_row("MM-FORMAT", T.mm("junk real general", "1 1 1", "1 1 1"), 1)
mm_row("MM-FIELD", T.mm("coordinate quaternion general", "1 1 1", "1 1 1"), 1)
mm_row("MM-SYMMETRY", T.mm("coordinate real upper", "1 1 1", "1 1 1"), 1)
mm_row("MM-BANNER-EXTRA", T.mm("coordinate real general extra", "1 1 1", "1 1 1"), 1)
mm_row("MM-ARRAY-PATTERN", T.mm("array pattern general", "1 1", "1"), 1)
mm_row("MM-HERMITIAN", T.mm("coordinate real hermitian", "1 1 1", "1 1 1"), 1)
mm_row("MM-SKEW-PATTERN", T.mm("coordinate pattern skew-symmetric", "2 2 1", "2 1"), 1)
@case("MM-NO-SIZE")
def _(t):
    body = "%%MatrixMarket matrix coordinate real general\n% only a comment\n"
    return mm_case(t, body, 2)
mm_row("MM-SIZE-FIELDS", T.mm(GEN, "3 3", "1 1 1"), 2)
mm_row("MM-SIZE-NAN", T.mm(GEN, "x 3 3", "1 1 1"), 2)
mm_row("MM-SIZE-NEGATIVE", T.mm(GEN, "-3 3 3", "1 1 1"), 2)
mm_row("MM-SIZE-BIG", T.mm(GEN, "3 3 99999999999999999999", "1 1 1"), 2)
mm_row("MM-COLS-LIMIT", T.mm(GEN, "3 3000000000 1", "1 1 1"), 2)
mm_row("MM-ROWS-LIMIT", T.mm(GEN, "3000000000 3 1", "1 1 1"), 2)
mm_row("MM-SYMMETRIC-SHAPE", T.mm(SYM, "2 3 1", "1 1 1"), 2)
mm_row("MM-COMPLEX", T.mm("coordinate complex general", "1 1 1", "1 1 1 0"), 1)
mm_row("MM-ROWS-UNBACKED", T.mm(GEN, "2000000000 2000000000 1", "1 1 1"), 2)
mm_row("MM-ROW-NAN", T.mm(GEN, "3 3 2", "1 1 1", "x 1 1"), 4)
mm_row("MM-COLUMN-NAN", T.mm(GEN, "3 3 2", "1 1 1", "1 y 1"), 4)
mm_row("MM-INDEX-RANGE", "%%MatrixMarket matrix coordinate real general\n% c\n3 3 2\n1 1 1\n4 1 1\n", 5)
mm_row("MM-INDEX-ZERO", T.mm(GEN, "3 3 1", "0 1 1"), 3)
mm_row("MM-INDEX-NO-ROWS", T.mm(GEN, "0 3 1", "1 1 1"), 3)
mm_row("MM-MISSING-COLUMN", T.mm(GEN, "3 3 1", "1"), 3)
mm_row("MM-MISSING-VALUE", T.mm(GEN, "3 3 1", "1 1"), 3)
mm_row("MM-VALUE-NAN", T.mm(GEN, "3 3 3", "1 1 1", "2 2 x", "3 3 1"), 4)
mm_row("MM-VALUE-NONFINITE", T.mm(GEN, "3 3 2", "1 1 1", "2 2 1e999"), 4)
mm_row("MM-NOT-INTEGER", T.mm("coordinate integer general", "3 3 1", "1 1 1.5"), 3)
mm_row("MM-INTEGER-BIG", T.mm("coordinate integer general", "3 3 1", "1 1 99999999999999999999"), 3)
mm_row("MM-EXTRA-FIELD", T.mm(GEN, "3 3 1", "1 1 1 7"), 3)
mm_row("MM-SKEW-DIAGONAL", T.mm("coordinate real skew-symmetric", "3 3 1", "2 2 1"), 3)
mm_row("MM-TOO-MANY", T.mm(GEN, "3 3 1", "1 1 1", "2 2 1"), 4)
mm_row("MM-TOO-FEW", T.mm(GEN, "3 3 3", "1 1 1"), 3)
mm_row("MM-GZIP-CORRUPT", b"\x1f\x8b\x08\x00garbagegarbagegarbage", 1, name="a.mtx.gz")


def big_mm(n=3000):
    """A tridiagonal SPD matrix in symmetric storage, n rows."""
    lines = ["%%MatrixMarket matrix coordinate real symmetric", "%d %d %d" % (n, n, 2 * n - 1)]
    for i in range(1, n + 1):
        lines.append("%d %d 4" % (i, i))
        if i < n:
            lines.append("%d %d -1" % (i + 1, i))
    return ("\n".join(lines) + "\n").encode()


@case("MM-GZIP-TRUNCATED")
def _(t):
    z = gzip.compress(big_mm(), 9)
    z = z[:len(z) * 2 // 3]
    return mm_case(t, z, None, name="a.mtx.gz")


@case("MM-GZIP-TRUNCATED-HEADER")
def _(t):
    z = gzip.compress(T.mm(GEN, "3 3 3", "1 1 1", "2 2 1", "3 3 1").encode(), 9)
    return mm_case(t, z[:30], 1, name="a.mtx.gz")


@case("MM-LONG-LINE")
def _(t):
    # the last line, without '\n', longer than 16 MiB (the same line with a
    # '\n', or in the middle of the file, is read: problems found)
    body = T.mm(GEN, "3 3 2", "1 1 1") + "%" + "c" * ((16 << 20) + 16)
    return mm_case(t, body, 4)


@case("MM-HEADER-LONG")
def _(t):
    # a banner, then one comment line of 17 MiB: refused where the 16 MiB
    # limit falls (line 2), by the reader and while the upload streams
    body = T.mm(GEN, "3 3 1", "1 1 1").split("\n", 1)
    z = gzip.compress((body[0] + "\n%" + "%" * (17 << 20) + "\n" + body[1]).encode(), 9)
    return mm_case(t, z, 2, name="a.mtx.gz")


@case("MM-SUM-NONFINITE")
def _(t):
    body = T.mm(GEN, "2 2 3", "1 1 1e308", "1 1 1e308", "2 2 1")
    return mm_case(t, body, None, cmd="solve")


# ---- the binary CSR form (matrices/csr_bin.h)

def csr_bin(rows, cols, rowptr, col, val):
    return (b"CLSCSR01" + struct.pack("<qqq", rows, cols, len(col)) +
            struct.pack("<%dq" % len(rowptr), *rowptr) + struct.pack("<%di" % len(col), *col) +
            struct.pack("<%dd" % len(val), *val))


# 2 x 2 diagonal 4, 5 (SPD)
BIN_OK = csr_bin(2, 2, [0, 1, 2], [0, 1], [4.0, 5.0])
CASES["MM-BINARY-SIZE"] = lambda t: mm_case(t, BIN_OK[:-8], None, name="a.bin", cmd="solve")
CASES["MM-BINARY-ROWPTR"] = lambda t: mm_case(t, csr_bin(2, 2, [0, 2, 1], [0, 1], [4.0, 5.0]),
                                              None, name="a.bin", cmd="solve")
CASES["MM-BINARY-ORDER"] = lambda t: mm_case(
    t, csr_bin(2, 2, [0, 2, 3], [1, 0, 1], [1.0, 4.0, 5.0]), None, name="a.bin", cmd="solve")
CASES["MM-BINARY-COLUMN"] = lambda t: mm_case(t, csr_bin(2, 2, [0, 1, 2], [0, 2], [4.0, 5.0]),
                                              None, name="a.bin", cmd="solve")


# ---- right-hand sides and initial guesses (Matrix Market vectors)

I2 = T.mm(GEN, "2 2 2", "1 1 1", "2 2 1")


def vec_case(t, part, vec, line=None, matrix=I2, vname="v.mtx"):
    """`clsolve solve A.mtx -b|--x0 V` and a multipart job with A and V."""
    a = t.file("A.mtx", matrix)
    v = t.file(vname, vec)
    flag = "-b" if part == "rhs" else "--x0"
    return {"cli": t.cli("solve", a, flag, v, line=line),
            "http": t.post_mp([("matrix", "A.mtx", matrix), (part, vname, vec)], line=line)}


CASES["VEC-PATTERN"] = lambda t: vec_case(t, "rhs", T.mm("coordinate pattern general", "2 1 1", "1 1"), 1)
CASES["VEC-SHAPE"] = lambda t: vec_case(t, "x0", T.mm("array real general", "2 2", "1", "2", "3", "4"), 2)
CASES["VEC-RHS-COLUMNS"] = lambda t: vec_case(t, "rhs", T.mm("array real general", "2 65", *(["1"] * 130)), 2)
CASES["VEC-RHS-GEN"] = lambda t: {"cli": [t.cli("solve", t.file("A.mtx", I2), "-b", "gen:random:0"),
                                          t.cli("solve", t.file("A.mtx", I2), "-b", "gen:ones:2")]}
CASES["VEC-RHS-BLOCK-LENGTH"] = lambda t: vec_case(t, "rhs", T.mm("array real general", "3 2", *(["1"] * 6)))
CASES["VEC-RHS-SYMMETRIC"] = lambda t: vec_case(t, "rhs", T.mm("array real symmetric", "2 2", "1", "2", "3"), 1)
CASES["VEC-RHS-LENGTH"] = lambda t: vec_case(t, "rhs", T.mm("array real general", "3 1", "1", "2", "3"))
CASES["VEC-X0-LENGTH"] = lambda t: vec_case(t, "x0", T.mm("array real general", "3 1", "1", "2", "3"))
CASES["VEC-RHS-NONFINITE"] = lambda t: vec_case(
    t, "rhs", T.mm(GEN, "2 1 3", "1 1 1e308", "1 1 1e308", "2 1 1"))
CASES["VEC-X0-NONFINITE"] = lambda t: vec_case(
    t, "x0", T.mm(GEN, "2 1 3", "1 1 1e308", "1 1 1e308", "2 1 1"))
CASES["VEC-READER"] = lambda t: vec_case(t, "rhs", T.mm(GEN, "2 1 2", "1 1 1", "3 1 1"), 4)


# ---- files and the file system

@case("FILE-OPEN")
def _(t):
    d = t.dir()
    miss = os.path.join(d, "missing.mtx")
    return {"cli": [t.cli("check", miss), t.cli("solve", miss),
                    t.cli("curvature", os.path.join(d, "missing.obj"), "-o", os.path.join(d, "k.csv")),
                    t.cli("nbody", "--bodies", os.path.join(d, "missing.csv"), "--steps", "0"),
                    t.cli("deform", "--basis", miss, "--q", miss, "-o", os.path.join(d, "u.mtx")),
                    t.cli("deform", "--basis", t.file("U.mtx", T.mm("array real general", "6 1", *"123456")),
                          "--domains", os.path.join(d, "missing.txt"), "-o", os.path.join(d, "u.mtx")),
                    t.cli("deform", "--basis", os.path.join(d, "missing.f64"), "--rank", "1",
                          "-o", os.path.join(d, "u.mtx"))]}


@case("FILE-DIRECTORY")
def _(t):
    return {"cli": [t.cli("check", t.dir()), t.cli("solve", t.dir())]}


@case("FILE-READ")
def _(t):
    d = t.dir()
    return {"cli": [t.cli("curvature", t.dir(), "-o", os.path.join(d, "k.csv")),
                    t.cli("nbody", "--bodies", t.dir(), "--steps", "0")]}


@case("FILE-OUTPUT")
def _(t):
    a = t.file("A.mtx", I2)
    bad = os.path.join(t.tmp, "no-such-dir", "x.mtx")
    return {"cli": [t.cli("solve", a, "-o", bad), t.cli("gen", "poisson2d", "3", "-o", bad)]}


# ---- solver refusals

def solve_case(t, matrix, rhs=None, args=(), query="", x0=None):
    a = t.file("A.mtx", matrix)
    argv = ["solve", a] + list(args)
    parts = [("matrix", "A.mtx", matrix)]
    if rhs is not None:
        argv += ["-b", t.file("b.mtx", rhs)]
        parts.append(("rhs", "b.mtx", rhs))
    if x0 is not None:
        argv += ["--x0", t.file("x0.mtx", x0)]
        parts.append(("x0", "x0.mtx", x0))
    return {"cli": t.cli(*argv), "http": t.post_mp(parts, query)}


CASES["SOLVE-EMPTY"] = lambda t: solve_case(t, T.mm(SYM, "0 0 0"))
CASES["SOLVE-NOT-SQUARE"] = lambda t: solve_case(t, T.mm(GEN, "2 3 2", "1 1 1", "2 2 1"))
CASES["SOLVE-DIAGONAL"] = lambda t: solve_case(t, T.mm(SYM, "2 2 2", "1 1 1", "2 1 0.5"), args=["--precond", "jacobi"])
CASES["SOLVE-NOT-SYMMETRIC"] = lambda t: solve_case(t, T.mm(GEN, "2 2 3", "1 1 2", "1 2 1", "2 2 2"))
@case("SOLVE-INDEFINITE")
def _(t):
    out = solve_case(t, T.mm(SYM, "2 2 3", "1 1 1", "2 1 2", "2 2 1"),
                     rhs=T.mm("array real general", "2 1", "1", "0"))
    dwt = t.shared("matrices/dwt_992.mtx")
    out["cli"] = [out["cli"], t.cli("solve", dwt), t.cli("solve", dwt, "--precond", "chebyshev"),
                  t.cli("solve", dwt, "--precond", "ic0")]
    return out


# a b of 1e200 (SOLVE-RHS-OVERFLOW before the system was scaled) is solved now:
# tests/unit/test_scaling.c checks it; here only the solution beyond double's range
CASES["SOLVE-SOLUTION-RANGE"] = lambda t: solve_case(
    t, T.mm(GEN, "2 2 2", "1 1 1e-300", "2 2 1e-300"), rhs=T.mm("array real general", "2 1", "1e300", "1e300"))
CASES["SOLVE-RESIDUAL-NONFINITE"] = lambda t: solve_case(t, I2, x0=T.mm("array real general", "2 1", "1e300", "1e300"))


@case("SOLVE-MAXITER")
def _(t):
    m = open(t.shared("matrices/LFAT5.mtx")).read()
    out = solve_case(t, m, args=["--maxiter", "3"], query="?maxiter=3")
    out["http"].keep = True  # the solution of a job stopped at maxiter is kept: checked below
    return out


# backend native on what it cannot run: float precision, pipelined CG (the
# device is PoCL's CPU in CI: the device is never the reason)
@case("SOLVE-BACKEND-NATIVE")
def _(t):
    m = T.mm(SYM, "2 2 3", "1 1 4", "2 1 1", "2 2 3")
    out = solve_case(t, m, args=["--backend", "native", "--precision", "float"],
                     query="?backend=native&precision=float")
    out["cli"] = [out["cli"], t.cli("solve", t.file("A2.mtx", m), "--backend", "native", "--method", "pipecg")]
    return out


CASES["SOLVE-ACCURACY"] = lambda t: solve_case(t, open(t.shared("matrices/LFAT5.mtx")).read(),
                                               args=["--tol", "1e-30"], query="?tol=1e-30")


# ---- generated systems: solve gen:KIND:N

def gen_row(ident, *specs):
    CASES[ident] = lambda t: {"cli": [t.cli("solve", s, "--maxiter", "1") for s in specs]}


gen_row("GEN-SPEC-FORM", "gen:poisson3d", "gen:")
gen_row("GEN-SPEC-KIND", "gen:cube:4")
gen_row("GEN-SPEC-SIZE", "gen:poisson3d:0", "gen:poisson3d:x")
gen_row("GEN-SPEC-SEPARATOR", "gen:poisson3d:4y4")
gen_row("GEN-SPEC-DIMENSIONS", "gen:poisson2d:4x4x4", "gen:poisson3d:4x4")
gen_row("GEN-SPEC-TOO-LARGE", "gen:poisson3d:2000", "gen:poisson2d:50000x50000")


# ---- devices

@case("DEV-BAD-SPEC")
def _(t):
    a = t.file("A.mtx", I2)
    return {"cli": [t.cli("solve", a, "--device", "foo"),
                    t.cli("solve", a, "--device", "foo", "--engine", "distributed"),
                    t.cli("curvature", "--saddle", "3", "--device", "foo", "--json")]}


@case("DEV-INDEX-RANGE")
def _(t):
    a = t.file("A.mtx", I2)
    return {"cli": [t.cli("solve", a, "--device", "99"), t.cli("solve", a, "--device", "0,99"),
                    t.cli("nbody", "--random", "4", "--device", "99")]}


@case("DEV-NO-TYPE")
def _(t):
    o = t.cli("devices", "--json")
    if "accelerator" in o.text.lower():
        raise CaseError("SKIP: this host has an OpenCL accelerator")
    a = t.file("A.mtx", I2)
    return {"cli": [t.cli("solve", a, "--device", "accelerator"),
                    t.cli("nbody", "--random", "4", "--device", "accelerator")]}


@case("DEV-NO-DEVICE")
def _(t):
    o = t.cli("devices", "--json")
    if "Portable Computing Language" not in o.text or o.text.count('"index"') != 1:
        raise CaseError("SKIP: needs PoCL as the only OpenCL platform (POCL_DEVICES hides its device)")
    env = {"POCL_DEVICES": "no-such-device-type"}
    return {"cli": [t.cli("devices", env=env), t.cli("solve", t.file("A.mtx", I2), env=env)]}


@case("DEV-NO-PLATFORM")
def _(t):
    a = t.file("A.mtx", I2)
    env = {"OCL_ICD_VENDORS": os.path.join(t.tmp, "no-icd-here"), "OPENCL_VENDOR_PATH": "/nonexistent"}
    return {"cli": [t.cli("solve", a, env=env), t.cli("devices", env=env)]}


# ---- meshes: OBJ, OFF, ASCII PLY

def mesh_case(t, name, content, line, http=True):
    """`clsolve curvature MESH -o k.csv` and a curvature job with the mesh
    as the multipart part 'input' (its filename picks the reader as the
    extension does on the command line)."""
    p = t.file(name, content)
    out = {"cli": t.cli("curvature", p, "-o", os.path.join(os.path.dirname(p), "k.csv"), line=line)}
    if http:
        out["http"] = t.post_mp([("input", name, content)], "?kind=curvature", line=line)
    return out


def mesh_row(ident, name, content, line, **kw):
    CASES[ident] = lambda t: mesh_case(t, name, content, line, **kw)


TRI = "v 0 0 0\nv 1 0 0\nv 0 1 0\n"
mesh_row("MESH-NUL", "m.obj", TRI + "f 1 2\x003\n", 4)
mesh_row("MESH-NOT-NUMBER", "m.obj", "v 0 0 0\nv 1 x 0\n", 2)
mesh_row("MESH-NOT-FINITE", "m.obj", "v 0 0 0\nv 1 inf 0\n", 2)
mesh_row("MESH-NOT-INTEGER", "m.obj", TRI + "f 1 2 x\n", 4)
mesh_row("MESH-INTEGER-RANGE", "m.obj", TRI + "f 1 2 99999999999999999999\n", 4)
mesh_row("MESH-NO-VERTICES", "m.obj", "# nothing but a comment\n\n", 2)


@case("MESH-FLOAT-RANGE")
def _(t):
    content = "v 0 0 0\nv 1e39 0 0\nv 0 1 0\nf 1 2 3\n"
    return mesh_case(t, "m.obj", content, None)


@case("MESH-FACE-SHORT")
def _(t):
    a = mesh_case(t, "m.obj", TRI + "f 1 2\n", 4)
    b = mesh_case(t, "m.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n2 0 1\n", 6)
    c = mesh_case(t, "m.ply", PLY_HEAD + PLY_V + "2 0 1\n", 13)
    return {"cli": [a["cli"], b["cli"], c["cli"]], "http": [a["http"], b["http"], c["http"]]}


mesh_row("OBJ-VERTEX-VALUES", "m.obj", "v 0 0 0\nv 1 0\n", 2)
mesh_row("OBJ-COLOUR", "m.obj", "v 0 0 0 0.5 2 0\n", 1)
mesh_row("OBJ-CORNER-EMPTY", "m.obj", TRI + "f /1 2 3\n", 4)
mesh_row("OBJ-CORNER-SLASHES", "m.obj", TRI + "f 1/1/1/1 2 3\n", 4)
mesh_row("OBJ-CORNER-LONG", "m.obj", TRI + "f 1/" + "1" * 40 + " 2 3\n", 4)
mesh_row("OBJ-CORNER-TEXTURE", "m.obj", TRI + "f 1/ 2 3\n", 4)
mesh_row("OBJ-INDEX-ZERO", "m.obj", TRI + "f 0 1 2\n", 4)
mesh_row("OBJ-INDEX-UNDEFINED", "m.obj", TRI + "f 1 2 5\n", 4)
mesh_row("OBJ-INDEX-RELATIVE", "m.obj", TRI + "f -5 1 2\n", 4)

OFFV = "0 0 0\n1 0 0\n0 1 0\n"
mesh_row("OFF-EMPTY", "m.off", "", 1)
mesh_row("OFF-HEADER", "m.off", "XOFF\n3 1 0\n" + OFFV + "3 0 1 2\n", 1)
mesh_row("OFF-NO-COUNTS", "m.off", "OFF\n# nothing else\n", 2)
mesh_row("OFF-COUNTS", "m.off", "OFF\n3\n" + OFFV, 2)
mesh_row("OFF-NEGATIVE-COUNT", "m.off", "OFF\n3 -1 0\n" + OFFV, 2)
mesh_row("OFF-TOO-MANY-VERTICES", "m.off", "OFF\n3000000000 1 0\n" + OFFV, 2)
mesh_row("OFF-SHORT-VERTICES", "m.off", "OFF\n3 1 0\n0 0 0\n", 3)
mesh_row("OFF-VERTEX-VALUES", "m.off", "OFF\n3 1 0\n0 0\n", 3)
mesh_row("OFF-COFF-COLOUR", "m.off", "COFF\n3 1 0\n0 0 0\n", 3)
mesh_row("OFF-COLOUR-RANGE", "m.off", "COFF\n3 1 0\n0 0 0 300 0 0\n", 3)
mesh_row("OFF-COLOUR-MIX", "m.off", "COFF\n3 1 0\n0 0 0 0.5 0 0\n1 0 0 255 0 0\n0 1 0 0 0 0\n3 0 1 2\n", 4)
mesh_row("OFF-SHORT-FACES", "m.off", "OFF\n3 2 0\n" + OFFV + "3 0 1 2\n", 6)
mesh_row("OFF-FACE-VALUES", "m.off", "OFF\n3 1 0\n" + OFFV + "4 0 1 2\n", 6)
mesh_row("OFF-FACE-RANGE", "m.off", "OFF\n3 1 0\n" + OFFV + "3 0 1 5\n", 6)
mesh_row("OFF-TRAILING", "m.off", "OFF\n3 1 0\n" + OFFV + "3 0 1 2\n1 2 3\n", 7)

PLY_HEAD = ("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
            "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n")
PLY_V = "0 0 0\n1 0 0\n0 1 0\n"


def ply(header_lines, body=""):
    return "ply\n" + "".join(l + "\n" for l in header_lines) + "end_header\n" + body


FMT = "format ascii 1.0"
VX = ["element vertex 3", "property float x", "property float y", "property float z"]
FC = ["element face 1", "property list uchar int vertex_indices"]
mesh_row("PLY-EMPTY", "m.ply", "", 1)
mesh_row("PLY-MAGIC", "m.ply", "plyx\n" + PLY_HEAD[4:], 1)
mesh_row("PLY-NO-END-HEADER", "m.ply", "ply\nformat ascii 1.0\nelement vertex 3\n", 3)
mesh_row("PLY-NO-FORMAT", "m.ply", ply(VX + FC, PLY_V + "3 0 1 2\n"), 8)
mesh_row("PLY-FORMAT-LINE", "m.ply", ply(["format ascii"] + VX, PLY_V), 2)
mesh_row("PLY-BINARY", "m.ply", ply(["format binary_little_endian 1.0"] + VX, PLY_V), 2)
mesh_row("PLY-VERSION", "m.ply", ply(["format ascii 2.0"] + VX, PLY_V), 2)
mesh_row("PLY-ELEMENT-LINE", "m.ply", ply([FMT, "element vertex"] + VX[1:], PLY_V), 3)
mesh_row("PLY-ELEMENT-NEGATIVE", "m.ply", ply([FMT, "element vertex -1"] + VX[1:]), 3)
mesh_row("PLY-ELEMENT-NAME", "m.ply", ply([FMT] + VX + ["element " + "e" * 70 + " 1"]), 7)
mesh_row("PLY-VERTEX-TWICE", "m.ply", ply([FMT] + VX + ["element vertex 1"], PLY_V), 7)
mesh_row("PLY-TOO-MANY-VERTICES", "m.ply", ply([FMT, "element vertex 3000000000"] + VX[1:]), 3)
mesh_row("PLY-FACE-FIRST", "m.ply", ply([FMT] + FC + VX, PLY_V), 3)
mesh_row("PLY-PROPERTY-FIRST", "m.ply", ply([FMT, "property float x"] + VX, PLY_V), 3)
mesh_row("PLY-LIST-LINE", "m.ply", ply([FMT] + VX + ["element face 1", "property list uchar vertex_indices"]), 8)
mesh_row("PLY-LIST-COUNT-TYPE", "m.ply", ply([FMT] + VX + ["element face 1", "property list float int vertex_indices"]), 8)
mesh_row("PLY-TYPE", "m.ply", ply([FMT, "element vertex 3", "property quad x"]), 4)
mesh_row("PLY-PROPERTY-LINE", "m.ply", ply([FMT, "element vertex 3", "property float"]), 4)
mesh_row("PLY-PROPERTY-NAME", "m.ply", ply([FMT, "element vertex 3", "property float " + "p" * 70]), 4)
mesh_row("PLY-TOO-MANY-PROPERTIES", "m.ply",
         ply([FMT] + VX + ["property float p%d" % i for i in range(4200)]), 4100)
mesh_row("PLY-HEADER-LINE", "m.ply", ply([FMT, "bogus line"] + VX, PLY_V), 3)
mesh_row("PLY-VERTEX-XYZ", "m.ply", ply([FMT, "element vertex 3", "property float x", "property float y"], "0 0\n1 0\n0 1\n"), 3)
mesh_row("PLY-FACE-LIST", "m.ply", ply([FMT] + VX + ["element face 1", "property int n"], PLY_V + "3\n"), 7)
mesh_row("PLY-SHORT-ELEMENTS", "m.ply", ply([FMT] + VX + FC, "0 0 0\n1 0 0\n"), 11)
mesh_row("PLY-FEW-VALUES", "m.ply", ply([FMT] + VX + FC, "0 0 0\n1 0\n"), 11)
mesh_row("PLY-FLOAT-COLOUR", "m.ply", ply([FMT] + VX + ["property float red", "property float green", "property float blue"],
                                          "0 0 0 2 0 0\n"), 11)
mesh_row("PLY-INT-COLOUR", "m.ply", ply([FMT] + VX + ["property int red", "property int green", "property int blue"],
                                        "0 0 0 300 0 0\n"), 11)
mesh_row("PLY-UCHAR-RANGE", "m.ply", ply([FMT] + VX + ["property uchar red", "property uchar green", "property uchar blue"],
                                         "0 0 0 300 0 0\n"), 11)
mesh_row("PLY-LIST-LENGTH", "m.ply", ply([FMT] + VX + FC, PLY_V + "5 0 1 2\n"), 13)
mesh_row("PLY-INDEX-NOT-INTEGER", "m.ply", ply([FMT] + VX + ["element face 1", "property list uchar float vertex_indices"],
                                               PLY_V + "3 0 1 1.5\n"), 13)
mesh_row("PLY-INDEX-RANGE", "m.ply", ply([FMT] + VX + FC, PLY_V + "3 0 1 7\n"), 13)
mesh_row("PLY-EXTRA-VALUES", "m.ply", ply([FMT] + VX + FC, "0 0 0 9\n"), 10)
mesh_row("PLY-TRAILING", "m.ply", ply([FMT] + VX + FC, PLY_V + "3 0 1 2\n1 2 3\n"), 14)


# ---- n-body bodies (CSV)

def csv_case(t, content, line, http=True):
    p = t.file("b.csv", content)
    out = {"cli": t.cli("nbody", "--bodies", p, "--steps", "0", line=line)}
    if http:
        out["http"] = t.post_mp([("input", "b.csv", content)], "?kind=nbody&steps=0", line=line)
    return out


def csv_row(ident, content, line):
    CASES[ident] = lambda t: csv_case(t, content, line)


B1 = "0,0,0,0,0,0,1\n"
csv_row("CSV-NUL", B1 + "1,0,0\x00,0,0,0,1\n", 2)
csv_row("CSV-HEADER-COLUMNS", "x,y,z\n" + B1, 1)
csv_row("CSV-HEADER-NAME", "x,q,z,vx,vy,vz,m\n" + B1, 1)
csv_row("CSV-VALUES", B1 + "1,2,3\n", 2)
csv_row("CSV-NOT-NUMBER", B1 + "1,abc,0,0,0,0,1\n", 2)
csv_row("CSV-NOT-FINITE", B1 + "1,0,0,0,0,0,inf\n", 2)
csv_row("CSV-MASS", B1 + "1,0,0,0,0,0,-1\n", 2)
csv_row("CSV-EMPTY", "# no bodies\nx,y,z,vx,vy,vz,m\n", 2)


@case("CSV-FLOAT-RANGE")
def _(t):
    return csv_case(t, B1 + "1e39,0,0,0,0,0,1\n", None)


# ---- deformer inputs: domains file, basis, q

U6 = T.mm("array real general", "6 1", *"123456")          # 2 vertices, 1 mode
Q1 = T.mm("array real general", "1 1", "0.5")


def f64(*vals):
    return struct.pack("<%dd" % len(vals), *vals)


def deform_cli(t, basis=None, q=None, domains=None, mesh=None, extra=(), line=None, names=None):
    names = names or {}
    d = t.dir()
    argv = ["deform", "-o", os.path.join(d, "u.mtx")]
    for flag, content, default in (("--basis", basis, "U.mtx"), ("--q", q, "q.mtx"),
                                   ("--domains", domains, "dom.txt"), ("--mesh", mesh, "m.obj")):
        if content is not None:
            p = os.path.join(d, names.get(flag, default))
            with open(p, "wb") as f:
                f.write(content.encode("latin-1") if isinstance(content, str) else content)
            argv += [flag, p]
    return t.cli(*(argv + list(extra)), line=line)


def dom_row(ident, text, line):
    CASES[ident] = lambda t: {"cli": deform_cli(t, basis=U6, q=Q1, domains=text, line=line)}


ROT = "1 0 0 0 1 0 0 0 1 0 0 0"
dom_row("DOM-LINE-LONG", "domains 1\n#" + "x" * 5000 + "\n", 2)
dom_row("DOM-TWICE", "domains 1\ndomains 1\n", 2)
dom_row("DOM-COUNT", "domains 0\n", 1)
dom_row("DOM-COUNT-UNBACKED", "domains 1000\n", 1)
dom_row("DOM-EARLY", "domain 0 2 1\ndomains 1\n", 1)
dom_row("DOM-DOMAIN-LINE", "domains 1\ndomain 0 2\n", 2)
dom_row("DOM-ORDER", "domains 2\ndomain 1 1 1\n", 2)
dom_row("DOM-EXTRA", "domains 1\ndomain 0 2 1\ndomain 1 1 1\n", 3)
dom_row("DOM-NVERTS", "domains 1\ndomain 0 0 1\n", 2)
dom_row("DOM-MODES", "domains 1\ndomain 0 2 70000\n", 2)
dom_row("DOM-TRANSFORM-LINE", "domains 1\ndomain 0 2 1\ntransform 0 0 1 2\n", 3)
dom_row("DOM-TRANSFORM-DOMAIN", "domains 1\ndomain 0 2 1\ntransform 0 5 " + ROT + "\n", 3)
dom_row("DOM-ROTATION", "domains 1\ndomain 0 2 1\ntransform 0 0 2 0 0 0 1 0 0 0 1 0 0 0\n", 3)
dom_row("DOM-KEYWORD", "domains 1\nbogus 1 2\n", 2)
dom_row("DOM-MISSING", "# only a comment\n", 1)
dom_row("DOM-SHORT", "domains 2\ndomain 0 1 1\n", 2)


def deform_job(t, basis, name="U.mtx", options=None, query="", line=None):
    parts = [("input", name, basis)]
    if options is not None:
        parts.append(("options", None, json.dumps(options)))
    return t.post_mp(parts, "?kind=deform" + query, line=line)


@case("DEFORM-NO-Q")
def _(t):
    return {"cli": deform_cli(t, basis=U6), "http": deform_job(t, U6)}


@case("DEFORM-RAW-RANK")
def _(t):
    return {"cli": deform_cli(t, basis=f64(*range(6)), names={"--basis": "U.f64"}),
            "http": deform_job(t, f64(*range(6)), name="U.f64", options={"q": [1]})}


@case("DEFORM-RAW-SIZE")
def _(t):
    return {"cli": deform_cli(t, basis=f64(1.0) + b"\0\0\0\0", extra=["--rank", "1"],
                              names={"--basis": "U.f64"})}


@case("DEFORM-RAW-NONFINITE")
def _(t):
    return {"cli": deform_cli(t, basis=f64(float("inf"), 1, 2, 3, 4, 5), extra=["--rank", "1"],
                              names={"--basis": "U.f64"})}


@case("DEFORM-RAW-SHAPE")
def _(t):
    return {"cli": deform_cli(t, basis=f64(1, 2, 3, 4, 5), extra=["--rank", "2"],
                              names={"--basis": "U.f64"}),
            "http": deform_job(t, f64(1, 2, 3, 4, 5), name="U.f64", options={"rank": 2, "q": [1, 1]})}


@case("DEFORM-RAW-DOMAINS")
def _(t):
    return {"cli": deform_cli(t, basis=f64(1, 2, 3, 4, 5), domains="domains 1\ndomain 0 2 1\n",
                              names={"--basis": "U.f64"})}


@case("DEFORM-BASIS-DOMAINS")
def _(t):
    return {"cli": deform_cli(t, basis=T.mm("array real general", "3 1", "1", "2", "3"), q=Q1,
                              domains="domains 1\ndomain 0 2 1\n")}


@case("DEFORM-BASIS-ROWS")
def _(t):
    u = T.mm("array real general", "4 1", "1", "2", "3", "4")
    return {"cli": deform_cli(t, basis=u, q=Q1), "http": deform_job(t, u, options={"q": [1]})}


@case("DEFORM-BASIS-BLOCK")
def _(t):
    u = T.mm(GEN, "6 2 2", "1 1 1", "1 2 1")
    return {"cli": deform_cli(t, basis=u, q=T.mm("array real general", "2 1", "1", "1"),
                              domains="domains 2\ndomain 0 1 1\ndomain 1 1 1\n")}


@case("DEFORM-Q-RAW-FRAMES")
def _(t):
    return {"cli": deform_cli(t, basis=T.mm("array real general", "6 2", *"123456123456"),
                              q=f64(1, 2, 3), names={"--q": "q.f64"})}


@case("DEFORM-Q-SHAPE")
def _(t):
    return {"cli": deform_cli(t, basis=U6, q=T.mm("array real general", "3 1", "1", "2", "3"))}


@case("DEFORM-MESH-VERTICES")
def _(t):
    return {"cli": deform_cli(t, basis=U6, q=Q1, mesh=TRI + "f 1 2 3\n")}


U6_BIG = T.mm("array real general", "6 1", "1e39", "0", "0", "0", "0", "0")
U6_EDGE = T.mm("array real general", "6 1", "1e38", "0", "0", "0", "0", "0")


@case("DEFORM-FLOAT-RANGE")
def _(t):
    return {"cli": deform_cli(t, basis=U6_BIG, q=Q1),
            "http": deform_job(t, U6_BIG, options={"q": [1]})}


@case("DEFORM-Q-FLOAT-RANGE")
def _(t):
    return {"cli": deform_cli(t, basis=U6, q=T.mm("array real general", "1 1", "1e39")),
            "http": deform_job(t, U6, options={"q": [1e39]})}


@case("DEFORM-OVERFLOW")
def _(t):
    return {"cli": deform_cli(t, basis=U6_EDGE, q=T.mm("array real general", "1 1", "10")),
            "http": deform_job(t, U6_EDGE, options={"q": [10]})}


@case("DEFORM-Q-WIDTH")
def _(t):
    return {"http": deform_job(t, U6, options={"q": [1, 2, 3]})}


@case("DEFORM-NO-BASIS")
def _(t):
    return {"http": t.post(b"", "?kind=deform")}


def deform_opt_row(ident, options):
    CASES[ident] = lambda t: {"http": deform_job(t, U6, options=options)}


deform_opt_row("DEFORM-OPT-Q", {"q": 5})
deform_opt_row("DEFORM-OPT-Q-FRAME", {"q": [[1, 2], [1]]})
deform_opt_row("DEFORM-OPT-Q-NUMBER", {"q": ["a"]})
deform_opt_row("DEFORM-OPT-RANK", {"q": [1], "rank": 0})
deform_opt_row("DEFORM-OPT-CHECK", {"q": [1], "check": 1})
deform_opt_row("DEFORM-OPT-UNKNOWN", {"q": [1], "bogus": 1})


@case("DEFORM-SERVER-PATH")
def _(t):
    # refused at submission (400), whatever the value: a path that exists, one
    # that does not, not a string at all; from the options part or the query
    out = [deform_job(t, U6, options={"q": [1], "mesh": "/etc/passwd"}),
           deform_job(t, U6, options={"q": [1], "mesh": os.path.join(t.tmp, "no-such-mesh.obj")}),
           deform_job(t, U6, options={"q": [1], "mesh": 5}),
           deform_job(t, U6, options={"q_file": os.path.join(t.tmp, "no-such-q.mtx")}),
           deform_job(t, U6, options={"q": [1], "q_file": "q.mtx"}),
           deform_job(t, U6, options={"q": [1], "domains": "/etc/hostname"}),
           deform_job(t, U6, options={"q": [1]}, query="&domains=/etc/hostname")]
    for o in out:
        if isinstance(o, Obs) and "/etc/" in o.text:
            raise CaseError("the answer quotes the path: %r" % o.text[:200])
    return {"http": out}


# ---- command line: clsolve usage

def cli_row(ident, *argvs):
    """Each argv (a list) through clsolve; all must answer as the row says."""
    def fn(t):
        a = t.file("A.mtx", I2)
        return {"cli": [t.cli(*[a if x == "A" else x for x in argv]) for argv in argvs]}
    CASES[ident] = fn


ID0 = "0123456789abcdef0123456789abcdef"
cli_row("CLI-NO-COMMAND", [])
cli_row("CLI-UNKNOWN-COMMAND", ["frobnicate"])
cli_row("CLI-UNKNOWN-OPTION", ["solve", "A", "--bogus"], ["check", "A", "--bogus"],
        ["gen", "poisson2d", "3", "--bogus"], ["curvature", "--bogus"], ["deform", "--bogus"],
        ["springs", "--bogus"], ["nbody", "--bogus"], ["submit", "A", "--bogus"],
        ["status", ID0, "--bogus"], ["wait", ID0, "--bogus"], ["fetch", ID0, "--bogus"],
        ["cancel", ID0, "--bogus"], ["devices", "--bogus"], ["bench", "--bogus"], ["tune", "--bogus"])
cli_row("CLI-UNEXPECTED-ARGUMENT", ["check", "A", "B"],
        ["gen", "poisson2d", "3", "B"], ["curvature", "A", "B"], ["deform", "B"],
        ["springs", "A", "B"], ["nbody", "B"], ["submit", "A", "B"], ["status", ID0, "B"],
        ["devices", "B"], ["bench", "B"], ["tune", "B"])
cli_row("CLI-BATCH-OPTION", ["solve", "A", "A", "-b", "A"], ["solve", "A", "A", "--x0", "A"],
        ["solve", "A", "A", "--monitor"], ["solve", "A", "A", "--method", "pipecg"],
        ["solve", "A", "A", "--backend", "native"], ["solve", "A", "A", "--precond", "ic0"])
cli_row("CLI-NEEDS-VALUE", ["solve", "A", "--tol"], ["gen", "poisson2d", "3", "-o"],
        ["nbody", "--random"])
cli_row("CLI-NOT-NUMBER", ["solve", "A", "--tol", "abc"], ["springs", "--grid", "3", "--dt", "1x"],
        ["submit", "A", "--timeout", "soon"])
cli_row("CLI-NOT-INTEGER", ["solve", "A", "--maxiter", "1.5"], ["gen", "poisson2d", "3x", "-o", "x.mtx"],
        ["check", "A", "--threads", "two"])
cli_row("CLI-BELOW-MINIMUM", ["springs", "--grid", "0"],
        ["nbody", "--random", "0"], ["curvature", "--saddle", "1", "--json"], ["tune", "--sizes", "1"],
        ["submit", "A", "--retries", "-1"])
cli_row("CLI-TOL-RANGE", ["solve", "A", "--tol", "2"], ["submit", "A", "--tol", "0"])
cli_row("CLI-MAXITER", ["solve", "A", "--maxiter", "0"], ["submit", "A", "--maxiter", "2000000000"])
cli_row("CLI-PRECOND", ["solve", "A", "--precond", "ilu"], ["submit", "A", "--precond", "ilu"],
        ["solve", "A", "--precond", "Jacobi"])
cli_row("CLI-RHS-MODE", ["solve", "A", "--rhs-mode", "both"])
cli_row("CLI-RHS-FILES", ["solve", "A"] + ["-b", "A"] * 65)
cli_row("CLI-PRECOND-OPTION", ["solve", "A", "--precond-degree", "0"],
        ["solve", "A", "--precond-sweeps=33"], ["submit", "A", "--precond-shift", "-1"],
        ["solve", "A", "--precond-reuse", "2"])
cli_row("CLI-METHOD", ["solve", "A", "--method", "gmres"], ["submit", "A", "--method", "gmres"])
cli_row("CLI-BACKEND", ["solve", "A", "--backend", "cuda"], ["submit", "A", "--backend", "cuda"])
cli_row("CLI-ATOL", ["solve", "A", "--atol", "-1"], ["submit", "A", "--atol", "inf"])
cli_row("CLI-PRECISION", ["solve", "A", "--precision", "half"], ["submit", "A", "--precision", "half"],
        ["bench", "--precision", "half"],
        ["tune", "--precision", "half"])
cli_row("CLI-FORMAT", ["solve", "A", "--format", "coo"], ["solve", "A", "--spmv", "coo"],
        ["bench", "--format", "coo"])
cli_row("CLI-ENGINE", ["solve", "A", "--engine", "gpu"])
cli_row("CLI-NO-MATRIX", ["solve"], ["check", "--json"], ["submit"])
cli_row("CLI-GEN-KIND", ["gen", "cube", "3", "-o", "x.mtx"], ["gen"])
cli_row("CLI-GEN-SIZE", ["gen", "poisson2d"])
cli_row("CLI-GEN-OUTPUT", ["gen", "poisson2d", "3"])
cli_row("CLI-GEN-TOO-LARGE", ["gen", "poisson3d", "2000", "-o", "x.mtx"], ["gen", "poisson2d", "50000", "-o", "x.mtx"])
cli_row("CLI-STENCIL", ["bench", "--stencil", "cube"], ["tune", "--stencil", "cube", "--dry-run", "--sizes", "8", "--quick"])
cli_row("CLI-CURVATURE-NO-MESH", ["curvature", "-o", "k.csv"])
cli_row("CLI-CURVATURE-BOTH", ["curvature", "A", "--saddle", "3", "-o", "k.csv"])
cli_row("CLI-CURVATURE-SADDLE", ["curvature", "--saddle", "40000", "-o", "k.csv"])
cli_row("CLI-CURVATURE-OUTPUT", ["curvature", "--saddle", "3"])
cli_row("CLI-CURVATURE-ESTIMATOR", ["curvature", "--saddle", "3", "--estimator", "edge", "--json"])
cli_row("CLI-DEFORM-BASIS", ["deform", "-o", "u.mtx"])
cli_row("CLI-DEFORM-OUTPUT", ["deform", "--basis", "A"])
cli_row("CLI-DEFORM-UNFOLDED", ["deform", "--basis", "A", "-o", "u.mtx", "--unfolded", "x.csv"])
cli_row("CLI-SPRINGS-INPUT", ["springs"])
cli_row("CLI-SPRINGS-BOTH", ["springs", "A", "--grid", "3"])
cli_row("CLI-SPRINGS-PIN", ["springs", "--grid", "3", "--pin", "1,,2"])
cli_row("CLI-SPRINGS-LAUNCH", ["springs", "--grid", "3", "--launch", "warp"])
cli_row("CLI-NBODY-BOTH", ["nbody", "--bodies", "A", "--random", "3"])
cli_row("CLI-PHYSICS-OUTPUT-EXT", ["springs", "--grid", "3", "-o", "x.stl"], ["nbody", "--random", "4", "-o", "x.xyz"],
        ["curvature", "--saddle", "3", "-o", "k.txt"], ["deform", "--basis", "A", "-o", "u.txt"])
cli_row("CLI-PHYSICS-EVERY", ["springs", "--grid", "3", "--every", "2"], ["nbody", "--random", "4", "--every", "2"])
cli_row("CLI-SPRINGS-VECTOR", ["springs", "--grid", "3", "--velocity", "1,2"], ["springs", "--grid", "3", "--rotate", "1,0,0"],
        ["springs", "--grid", "3", "--pin-box", "0,0,0,1,1,x"], ["springs", "--grid", "3", "--sphere", "0,0,0"])
cli_row("CLI-SPRINGS-MASS", ["springs", "--grid", "3", "--mass", "heavy"])
cli_row("CLI-SPRINGS-PLANE", ["springs", "--grid", "3", "--plane", "0,0,0,0,0,0"])
cli_row("CLI-NBODY-INTEGRATOR", ["nbody", "--random", "4", "--integrator", "rk4"])
cli_row("CLI-NBODY-GENERATORS", ["nbody", "--random", "4", "--plummer", "4"])
cli_row("CLI-NBODY-SOFTENING-THESIS", ["nbody", "--random", "4", "--softening-thesis", "-1"])
cli_row("CLI-CURVATURE-COLOR-BY", ["curvature", "--saddle", "3", "--json", "--color-by", "Z"])
cli_row("CLI-CURVATURE-COLOR-RANGE", ["curvature", "--saddle", "3", "--json", "--color-range", "0"])
cli_row("CLI-DEFORM-MESH-OUTPUT", ["deform", "--basis", "A", "-o", "d.obj"])
cli_row("CLI-SUBMIT-OUTPUT", ["submit", "A", "-o", "x.mtx"])
cli_row("CLI-SUBMIT-MONITOR", ["submit", "A", "--monitor"])
cli_row("CLI-JOB-ID-MISSING", ["status"], ["wait"], ["fetch", "-o", "x.mtx"], ["cancel"])
cli_row("CLI-JOB-ID", ["status", "xyz"], ["cancel", ID0.upper()], ["wait", ID0 + "0"])
cli_row("CLI-FETCH-OUTPUT", ["fetch", ID0])
cli_row("CLI-FETCH-FORMAT", ["fetch", ID0, "-o", "x", "--format", "xml"])


# ---- command line: the client commands (submit, status, wait, fetch, cancel)

def client_row(ident, *argvs, env=None):
    def fn(t):
        a = t.file("A.mtx", I2)
        return {"cli": [t.cli(*[a if x == "A" else x for x in argv], env=env) for argv in argvs]}
    CASES[ident] = fn


client_row("CLIENT-URL-SCHEME", ["status", ID0, "--server", "ftp://127.0.0.1:8080"])
client_row("CLIENT-CACERT", ["status", ID0, "--server", "https://127.0.0.1:8080", "--cacert",
                             "/no/such/ca.pem"])
client_row("CLIENT-TIMEOUT-VALUE", ["status", ID0, "--connect-timeout", "0"],
           ["wait", ID0, "--request-timeout", "0.5"])
client_row("CLIENT-URL-BRACKET", ["status", ID0, "--server", "http://[::1:8080"])
client_row("CLIENT-URL-HOST", ["status", ID0, "--server", "http://:8080"])
client_row("CLIENT-URL-PORT", ["status", ID0, "--server", "http://127.0.0.1:http"])
client_row("CLIENT-URL-MALFORMED", ["status", ID0, "--server", "http://127.0.0.1:80x"])
client_row("CLIENT-URL-PATH", ["status", ID0, "--server", "http://127.0.0.1:1/" + "p" * 600])
client_row("CLIENT-CONNECT", ["status", ID0, "--server", "http://127.0.0.1:1"],
           ["submit", "A", "--server", "http://127.0.0.1:1"])
client_row("CLIENT-RESOLVE", ["status", ID0, "--server", "http://no-such-host.invalid:8080"])


@case("CLIENT-STALLED")
def _(t):
    """A server that accepts the connection and never answers."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    try:
        port = srv.getsockname()[1]
        return {"cli": t.cli("status", ID0, "--server", "http://127.0.0.1:%d" % port,
                             "--request-timeout", "1")}
    finally:
        srv.close()


@case("CLIENT-TOKEN-FILE")
def _(t):
    return {"cli": t.cli("status", ID0, "--token-file", os.path.join(t.tmp, "no-such-token"))}


@case("CLIENT-TOKEN-FILE-SIZE")
def _(t):
    return {"cli": t.cli("status", ID0, "--token-file", t.file("tok", "t" * 5000))}


@case("CLIENT-HEADER-LONG")
def _(t):
    # a token file holds at most 4096 bytes: the environment is the way to a
    # longer token (a 3000-character one is sent: CLIENT-HTTP-401)
    env = {"CLSOLVE_TOKEN": "t" * 5000}
    return {"cli": [t.cli("status", ID0, env=env), t.cli("submit", t.file("A.mtx", I2), env=env)]}


@case("CLIENT-TOKEN-CONTROL")
def _(t):
    env = {"CLSOLVE_TOKEN": "token-123\r\nX-Injected: 1"}
    return {"cli": [t.cli("status", ID0, env=env), t.cli("submit", t.file("A.mtx", I2), env=env),
                    t.cli("status", ID0, "--token-file", t.file("tok", "token\t123456\n"))]}


@case("CLIENT-FILE-OPEN")
def _(t):
    d = t.dir()
    return {"cli": [t.cli("submit", os.path.join(d, "missing.mtx")),
                    t.cli("submit", t.file("A.mtx", I2), "-b", os.path.join(d, "missing-b.mtx"))]}


@case("CLIENT-FILE-READ")
def _(t):
    # checked before connecting: a client that connected first would wait for
    # the daemon's idle --timeout (60 s) after the half-sent request
    fifo = os.path.join(t.dir(), "fifo.mtx")
    os.mkfifo(fifo)
    out = []
    for argv in (["submit", t.dir()], ["submit", fifo], ["submit", t.file("A.mtx", I2), "-b", t.dir()]):
        t0 = time.time()
        out.append(t.cli(*argv, timeout=30))
        if time.time() - t0 > 10:
            raise CaseError("'%s' took %.0f s: it waited for the daemon" % (" ".join(argv), time.time() - t0))
    return {"cli": out}


@case("CLIENT-OUTPUT")
def _(t):
    return {"cli": t.cli("fetch", ID0, "-o", os.path.join(t.tmp, "no-such-dir", "x.mtx"))}


@case("CLIENT-HTTP-400")
def _(t):
    return {"cli": [t.cli("submit", t.file("bad.mtx", "hello\n"))]}


@case("CLIENT-HTTP-401")
def _(t):
    env = {"CLSOLVE_TOKEN": ""}
    # a token of 3000 characters overflowed the client's 2 KB request head
    # once (problems found: CLIENT-HEADER-LONG); it is sent whole now
    long_tok = t.file("tok", "t" * 3000 + "\n")
    return {"cli": [t.cli("status", ID0, env=env), t.cli("submit", t.file("A.mtx", I2), env=env),
                    t.cli("status", ID0, "--token-file", t.file("tok", "wrong-token-123\n")),
                    t.cli("status", ID0, "--token-file", long_tok),
                    t.cli("submit", t.file("A.mtx", I2), "--token-file", long_tok)]}


@case("CLIENT-HTTP-404")
def _(t):
    return {"cli": [t.cli("status", ID0), t.cli("wait", ID0), t.cli("cancel", ID0),
                    t.cli("fetch", ID0, "-o", os.path.join(t.dir(), "x.mtx"))]}


def finished_job(t, body, query="", headers=None):
    p = t.post(body, query, headers)
    if not isinstance(p, Pending):
        raise CaseError("submit %s: HTTP %s %s" % (query, p.code, p.text[:200]))
    t.wait(p.id)
    return p.id


@case("CLIENT-HTTP-409")
def _(t):
    jid = finished_job(t, b"%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n")
    return {"cli": t.cli("fetch", jid, "-o", os.path.join(t.dir(), "x.mtx"))}


def client_job_row(ident, body, query=""):
    def fn(t):
        b = body(t) if callable(body) else body
        jid = finished_job(t, b.encode() if isinstance(b, str) else b, query)
        return {"cli": [t.cli("wait", jid), t.cli("status", jid)]}
    CASES[ident] = fn


client_job_row("CLIENT-JOB-BAD-INPUT", T.mm(GEN, "2 3 2", "1 1 1", "2 2 1"))
client_job_row("CLIENT-JOB-NOT-CONVERGED", lambda t: open(t.shared("matrices/LFAT5.mtx")).read(), "?maxiter=2")
client_job_row("CLIENT-JOB-BREAKDOWN", T.mm(GEN, "2 2 3", "1 1 2", "1 2 1", "2 2 2"))
client_job_row("CLIENT-JOB-BAD-REQUEST", b"", "?kind=springs&grid=3&S=2")


@case("CLIENT-NO-SOLUTION")
def _(t):
    jid = finished_job(t, b"", "?kind=nbody&random=8&steps=1&check=false")
    return {"cli": t.cli("wait", jid, "-o", os.path.join(t.dir(), "x.mtx"))}


# ---- command line: clsolved start-up (an MPI singleton, no mpirun)

def daemon_row(ident, *argvs):
    def fn(t):
        d = t.dir()
        sub = lambda x: (os.path.join(d, "data") if x == "DATA" else
                         t.file("short-token", "short\n") if x == "SHORTTOK" else
                         t.file("a-file", "x") if x == "AFILE" else
                         os.path.join(d, "no-such-token") if x == "NOTOK" else
                         "127.0.0.1:%d" % t.port if x == "BUSY" else x)
        return {"cli": [t.daemon(*[sub(x) for x in argv]) for argv in argvs]}
    CASES[ident] = fn


daemon_row("DAEMON-UNKNOWN-ARGUMENT", ["--bogus", "x", "--data-dir", "DATA"], ["serve", "--data-dir", "DATA"])
daemon_row("DAEMON-UNKNOWN-LAST", ["--data-dir", "DATA", "--bogus"])
daemon_row("DAEMON-NEEDS-VALUE", ["--data-dir", "DATA", "--listen"])
daemon_row("DAEMON-BAD-VALUE", ["--data-dir", "DATA", "--max-upload", "12X"], ["--data-dir", "DATA", "--max-queued", "0"],
           ["--data-dir", "DATA", "--keep", "5y"], ["--data-dir", "DATA", "--max-connections", "0"],
           ["--data-dir", "DATA", "--timeout", "-1"], ["--data-dir", "DATA", "--lanes", "0"],
           ["--data-dir", "DATA", "--lanes", "33"], ["--data-dir", "DATA", "--shared-max-entries", "x"],
           ["--data-dir", "DATA", "--batch", "sometimes"], ["--data-dir", "DATA", "--batch-max", "0"])
daemon_row("DAEMON-NO-DATA-DIR", ["--listen", "127.0.0.1:0"])
daemon_row("DAEMON-TOKEN-SHORT", ["--listen", "127.0.0.1:0", "--data-dir", "DATA", "--token-file", "SHORTTOK"])
daemon_row("DAEMON-TOKEN-FILE", ["--listen", "127.0.0.1:0", "--data-dir", "DATA", "--token-file", "NOTOK"])
daemon_row("DAEMON-LISTEN-PORT", ["--listen", "127.0.0.1:99999", "--data-dir", "DATA"],
           ["--listen", "127.0.0.1:", "--data-dir", "DATA"])
daemon_row("DAEMON-LISTEN-ADDRESS", ["--listen", "localhost:0", "--data-dir", "DATA"])
daemon_row("DAEMON-LISTEN-IPV6", ["--listen", "[::1:0", "--data-dir", "DATA"])
daemon_row("DAEMON-LISTEN-LONG", ["--listen", "h" * 200 + ":0", "--data-dir", "DATA"])
daemon_row("DAEMON-LISTEN-BUSY", ["--listen", "BUSY", "--data-dir", "DATA"])
daemon_row("DAEMON-DATA-DIR", ["--listen", "127.0.0.1:0", "--data-dir", "AFILE"])
daemon_row("DAEMON-DATA-DIR-LONG", ["--listen", "127.0.0.1:0", "--data-dir", "d" * 5000])


def config_row(ident, text):
    """clsolved --config FILE with FILE holding text (DATA: a data dir)."""
    def fn(t):
        d = t.dir()
        conf = t.file("clsolved.conf", text.replace("DATA", os.path.join(d, "data")))
        return {"cli": t.daemon("--listen", "127.0.0.1:0", "--config", conf)}
    CASES[ident] = fn


config_row("DAEMON-CONFIG-KEY", "# a comment\n\ndata-dir = DATA\nlistne = 127.0.0.1:0\n")
config_row("DAEMON-CONFIG-SYNTAX", "data-dir DATA\n")
config_row("DAEMON-CONFIG-VALUE", "data-dir = DATA\nmax-queued = lots\n")


@case("DAEMON-CONFIG-FILE")
def _(t):
    return {"cli": t.daemon("--config", os.path.join(t.dir(), "no-such.conf"))}


class SideDaemon:
    """A second clsolved (an MPI singleton) with other options, for the few
    rows that need them; stopped with SIGTERM (killed after 30 s)."""

    def __init__(self, t, *opts):
        self.t = t
        d = t.dir()
        data, port = os.path.join(d, "data"), os.path.join(d, "port")
        with open(os.path.join(d, "log"), "wb") as log:
            self.p = subprocess.Popen([t.clsolved, "--listen", "127.0.0.1:0", "--data-dir", data,
                                       "--port-file", port] + list(opts),
                                      stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=t.env)
        for _ in range(1200):
            if os.path.exists(port) and open(port).read().strip():
                break
            if self.p.poll() is not None:
                raise CaseError("clsolved %s exited %s" % (" ".join(opts), self.p.returncode))
            time.sleep(0.05)
        else:
            self.stop()
            raise CaseError("clsolved %s did not start" % " ".join(opts))
        self.port = int(open(port).read())
        self.url = "http://127.0.0.1:%d" % self.port
        self.t2 = T.__new__(T)
        self.t2.__dict__.update(t.__dict__)
        self.t2.port, self.t2.url = self.port, self.url

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


@case("DAEMON-DEVICE")
def _(t):
    """A daemon started with a bad --device runs, and every cg job fails."""
    sd = SideDaemon(t, "--device", "foo")
    try:
        pend = sd.t2.post(I2.encode(), headers={}, what="job on a daemon with --device foo")
        return {"http": sd.t2.resolve(pend) if isinstance(pend, Pending) else pend}
    finally:
        sd.stop()


# ---- HTTP: routes

def raw_http(t, data, timeout=10):
    """Sends raw bytes, returns (status, body text) of the answer."""
    s = socket.create_connection((t.host, t.port), timeout=timeout)
    try:
        s.sendall(data)
        buf = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            buf += chunk
    finally:
        s.close()
    head, _, body = buf.partition(b"\r\n\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d+)", head)
    hd = {}
    for ln in head.decode("latin-1").split("\r\n")[1:]:
        k, _, v = ln.partition(":")
        hd[k.strip().lower()] = v.strip()
    return (int(m.group(1)) if m else 0), body.decode("utf-8", "replace"), hd


def hdr_check(o, name, want):
    got = o.extra["headers"].get(name.lower())
    if got != want:
        raise CaseError("%s: header %s is %r, expected %r" % (o.what, name, got, want))
    return o


def a_finished_job(t):
    with t.lock:
        if getattr(t, "_finished", None):
            return t._finished
    jid = finished_job(t, b"%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n")
    with t.lock:
        t._finished = jid
    return jid


@case("HTTP-401")
def _(t):
    return {"http": [hdr_check(t.http("GET", "/v1/jobs", token=False), "WWW-Authenticate", 'Bearer realm="clsolve"'),
                     t.http("GET", "/v1/jobs", token="Bearer wrong-token-123"),
                     t.http("POST", "/v1/jobs", I2.encode(), token=False),
                     t.http("GET", "/nope", token="Basic dXNlcjpwYXNz")]}


@case("HTTP-404-ROUTE")
def _(t):
    return {"http": [t.http("GET", "/nope"), t.http("GET", "/v1/jobs/%s/bogus" % ID0),
                     t.http("GET", "/v1/job")]}


@case("HTTP-404-JOB-ID")
def _(t):
    return {"http": [t.http("GET", "/v1/jobs/xyz"), t.http("GET", "/v1/jobs/" + ID0.upper()),
                     t.http("DELETE", "/v1/jobs/../../etc/passwd")]}


@case("HTTP-404-JOB")
def _(t):
    return {"http": [t.http("GET", "/v1/jobs/" + ID0), t.http("DELETE", "/v1/jobs/" + ID0),
                     t.http("POST", "/v1/jobs/%s/cancel" % ID0),
                     t.http("GET", "/v1/jobs/%s/solution" % ID0),
                     t.http("GET", "/v1/jobs/%s/residuals" % ID0),
                     t.http("GET", "/v1/jobs/%s/files" % ID0)]}


@case("HTTP-404-FILE")
def _(t):
    jid = a_finished_job(t)
    return {"http": t.http("GET", "/v1/jobs/%s/files/nope.csv" % jid)}


@case("HTTP-405")
def _(t):
    return {"http": [hdr_check(t.http("PUT", "/v1/jobs", b"x"), "Allow", "GET, HEAD, POST"),
                     hdr_check(t.http("POST", "/v1/jobs/" + ID0, b"x"), "Allow", "GET, HEAD, DELETE"),
                     hdr_check(t.http("DELETE", "/metrics"), "Allow", "GET, HEAD"),
                     hdr_check(t.http("GET", "/v1/jobs/%s/cancel" % ID0), "Allow", "POST"),
                     t.http("PATCH", "/v1/jobs/%s/solution" % ID0)]}


@case("HTTP-QUERY-UNKNOWN")
def _(t):
    jid = a_finished_job(t)
    return {"http": [t.http("GET", "/v1/jobs?frobnicate=1"), t.http("GET", "/v1/jobs/%s?x=1" % jid),
                     t.http("GET", "/v1/devices?x=1"), t.http("GET", "/v1/jobs/%s/residuals?x=1" % jid)]}


@case("HTTP-QUERY-INTEGER")
def _(t):
    jid = a_finished_job(t)
    return {"http": [t.http("GET", "/v1/jobs?limit=0"), t.http("GET", "/v1/jobs?limit=abc"),
                     t.http("GET", "/v1/jobs?page=0"),
                     t.http("GET", "/v1/jobs/%s/residuals?since=-1" % jid)]}


@case("HTTP-QUERY-AFTER")
def _(t):
    return {"http": t.http("GET", "/v1/jobs?after=xyz")}


@case("HTTP-QUERY-AFTER-UNKNOWN")
def _(t):
    return {"http": t.http("GET", "/v1/jobs?after=" + ID0)}


@case("HTTP-QUERY-STATUS")
def _(t):
    return {"http": t.http("GET", "/v1/jobs?status=done")}


@case("HTTP-QUERY-FORMAT")
def _(t):
    return {"http": t.http("GET", "/v1/jobs/%s/solution?format=xml" % a_finished_job(t))}


@case("HTTP-406-ACCEPT")
def _(t):
    job = a_finished_job(t)
    return {"http": [t.http("GET", "/v1/jobs/%s/solution" % job, headers={"Accept": a})
                     for a in ("image/png", "application/json;q=0")]}


@case("HTTP-409-CANCEL-FINISHED")
def _(t):
    o = t.http("POST", "/v1/jobs/%s/cancel" % a_finished_job(t))
    if isinstance(o, Obs) and (o.extra.get("problem") or {}).get("job_status") != "failed":
        raise CaseError("409 without job_status 'failed': %s" % o.extra.get("problem"))
    return {"http": o}


@case("CLIENT-CANCEL-FINISHED")
def _(t):
    return {"cli": t.cli("cancel", a_finished_job(t))}


@case("HTTP-409-NO-SOLUTION")
def _(t):
    return {"http": t.http("GET", "/v1/jobs/%s/solution" % a_finished_job(t))}


@case("HTTP-413-LENGTH")
def _(t):
    conn = http.client.HTTPConnection(t.host, t.port, timeout=30)
    try:
        conn.putrequest("POST", "/v1/jobs")
        conn.putheader("Authorization", "Bearer " + t.token)
        conn.putheader("Content-Length", str(t.a.max_upload + 1))
        conn.putheader("Expect", "100-continue")
        conn.endheaders()
        r = conn.getresponse()
        o = t.answer(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read(),
                     what="Content-Length above --max-upload")
    finally:
        conn.close()
    return {"http": o}


@case("HTTP-413-COUNTED")
def _(t):
    # entries, not a comment: a 20 MiB comment would meet the header limit
    # (MM-HEADER-LONG) before the upload limit
    head = b"%%MatrixMarket matrix coordinate real general\n3 3 100000000\n"
    chunk = b"1 1 1\n" * ((1 << 20) // 6)
    n = t.a.max_upload // len(chunk) + 2

    def body():
        yield head
        for _ in range(n):
            yield chunk
    conn = http.client.HTTPConnection(t.host, t.port, timeout=60)
    try:
        conn.request("POST", "/v1/jobs", body(), {"Authorization": "Bearer " + t.token},
                     encode_chunked=True)
        r = conn.getresponse()
        o = t.answer(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read(),
                     what="chunked upload above --max-upload")
    finally:
        conn.close()
    return {"http": o}


@case("HTTP-414-QUERY")
def _(t):
    many = "&".join("p%d=1" % i for i in range(65))
    return {"http": [t.http("GET", "/v1/jobs?" + many),
                     t.http("POST", "/v1/jobs?" + many, I2.encode()),
                     t.http("GET", "/v1/jobs?after=" + "a" * 9000)]}


@case("HTTP-501-TRANSFER-ENCODING")
def _(t):
    return {"http": t.http("POST", "/v1/jobs", b"3\r\nabc\r\n0\r\n\r\n",
                           {"Transfer-Encoding": "gzip, chunked"})}


@case("HTTP-CHUNK-EXTENSION")
def _(t):
    req = (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + t.token.encode()
           + b"\r\nTransfer-Encoding: chunked\r\n\r\n5;" + b"e" * 300000
           + b"\r\nhello\r\n0\r\n\r\n")
    st, body, hd = raw_http(t, req)
    return {"http": Obs("http", st, body, what="300 KB chunk extension", extra={"headers": hd})}


@case("HTTP-415")
def _(t):
    return {"http": [t.http("POST", "/v1/jobs", I2.encode(), {"Content-Encoding": "br"}),
                     t.http("POST", "/v1/jobs", I2.encode(), {"Content-Encoding": "deflate"})]}


@case("HTTP-BATCH-NOT-MULTIPART")
def _(t):
    return {"http": t.http("POST", "/v1/batches", I2.encode())}


@case("HTTP-BATCH-ORDER")
def _(t):
    body, h = t.multipart([("rhs", "b.mtx", "%%MatrixMarket matrix array real general\n2 1\n1\n1\n"),
                           ("matrix", "A.mtx", I2)])
    return {"http": t.http("POST", "/v1/batches", body, h)}


@case("HTTP-BATCH-TOO-LARGE")
def _(t):
    body, h = t.multipart([("matrix", "A%d.mtx" % i, I2) for i in range(1025)])
    return {"http": t.http("POST", "/v1/batches", body, h)}


@case("HTTP-414")
def _(t):
    st, body, hd = raw_http(t, ("GET /v1/jobs/%s HTTP/1.1\r\nHost: x\r\n\r\n" % ("a" * 100000)).encode())
    return {"http": t.answer(st, hd, body.encode(), what="100 KB URL")}


@case("HTTP-431")
def _(t):
    st, body, hd = raw_http(t, ("GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n" % ("a" * 70000)).encode())
    big = ("GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-A: %s\r\nX-B: %s\r\n\r\n" % ("a" * 20000, "b" * 20000)).encode()
    st2, body2, hd2 = raw_http(t, big)
    return {"http": [t.answer(st, hd, body.encode(), what="70 KB header"),
                     t.answer(st2, hd2, body2.encode(), what="two 20 KB fields")]}


@case("HTTP-400-FRAMING")
def _(t):
    out = []
    auth = b"Authorization: Bearer " + t.token.encode() + b"\r\n"
    for req in (b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n%sContent-Length: 0\r\nContent-Length: 30\r\n\r\n"
                b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n",
                b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n%sContent-Length: 5\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n%sTransfer-Encoding: chunked\r\n"
                b"Transfer-Encoding: identity\r\n\r\n0\r\n\r\n",
                b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n%sTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
                b"GET /v1/jobs HTTP/1.1\r\n%s\r\n",
                b"GET /v1/jobs HTTP/1.1\r\nHost: a\r\nHost: b\r\n%s\r\n"):
        st, body, hd = raw_http(t, req.replace(b"%s", auth))
        if hd.get("connection", "").lower() != "close":
            raise CaseError("%r: no Connection: close (%r)" % (req[:60], hd))
        if body.count('"status":') != 1:  # one answer: the hidden request never ran
            raise CaseError("%r: %d answers" % (req[:60], body.count('"status":')))
        out.append(t.answer(st, hd, body.encode(), what=req[:50].decode()))
    return {"http": out}


@case("HTTP-400-CONTROL")
def _(t):
    return {"http": [t.http("GET", "/v1/jobs/abcdef%00/solution"),
                     t.http("GET", "/v1/jobs?tol=1e-3%00junk"),
                     t.http("GET", "/v1/jobs?after=%1b%5b2J")]}


@case("HTTP-MALFORMED")
def _(t):
    out = []
    for req in (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 12x\r\n\r\n",
                b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: -5\r\n\r\n"):
        st, body, hd = raw_http(t, req.replace(b"%s", t.token.encode()))
        out.append(Obs("http", st, body, what=req[:40].decode(), extra={"headers": hd}))
    return {"http": out}


# ---- HTTP: upload bodies and multipart

def raw_mp(t, body, boundary="BND", query=""):
    return t.post(body, query, {"Content-Type": "multipart/form-data; boundary=" + boundary})


def part(name_disp, data=b"x", extra=b""):
    return b"--BND\r\n" + name_disp + b"\r\n" + extra + b"\r\n" + data + b"\r\n"


END = b"--BND--\r\n"
MATRIX_PART = part(b'Content-Disposition: form-data; name="matrix"; filename="A.mtx"', I2.encode())


@case("UP-NO-MATRIX")
def _(t):
    return {"http": [t.post_mp([("rhs", "b.mtx", T.mm("array real general", "2 1", "1", "1"))]),
                     t.post_mp([("options", None, '{"tol": 1e-6}')])]}


@case("UP-UNKNOWN-PART")
def _(t):
    return {"http": t.post_mp([("matrix", "A.mtx", I2), ("bogus", "b.mtx", I2)])}


@case("UP-DUPLICATE-PART")
def _(t):
    return {"http": [t.post_mp([("matrix", "A.mtx", I2), ("A", "B.mtx", I2)]),
                     t.post_mp([("matrix", "A.mtx", I2), ("options", None, "{}"), ("options", None, "{}")])]}


@case("UP-PHYSICS-PART")
def _(t):
    return {"http": [t.post_mp([("matrix", "A.mtx", I2)], "?kind=springs"),
                     t.post_mp([("input", "m.obj", TRI), ("rhs", "b.mtx", I2)], "?kind=curvature")]}


@case("UP-OPTIONS-SIZE")
def _(t):
    return {"http": t.post_mp([("matrix", "A.mtx", I2),
                               ("options", None, '{"tol": 1e-6, "pad": "%s"}' % ("x" * 70000))])}


@case("MP-NO-BOUNDARY")
def _(t):
    return {"http": [t.post(MATRIX_PART + END, headers={"Content-Type": "multipart/form-data"}),
                     t.post(MATRIX_PART + END, headers={"Content-Type": "multipart/form-data; charset=utf-8"})]}


@case("MP-BOUNDARY-LONG")
def _(t):
    b = "b" * 80
    return {"http": [t.post(MATRIX_PART + END, headers={"Content-Type": "multipart/form-data; boundary=" + b}),
                     t.post(MATRIX_PART + END, headers={"Content-Type": 'multipart/form-data; boundary="unterminated'})]}


@case("MP-HEADER-NUL")
def _(t):
    return {"http": raw_mp(t, part(b'Content-Disposition: form-data; name="ma\x00trix"', I2.encode()) + END)}


@case("MP-HEADER-COLON")
def _(t):
    return {"http": raw_mp(t, part(b'Content-Disposition form-data; name="matrix"', I2.encode()) + END)}


@case("MP-NOT-FORM-DATA")
def _(t):
    return {"http": raw_mp(t, part(b'Content-Disposition: attachment; name="matrix"', I2.encode()) + END)}


@case("MP-NO-NAME")
def _(t):
    return {"http": [raw_mp(t, part(b'Content-Disposition: form-data; filename="A.mtx"', I2.encode()) + END),
                     raw_mp(t, part(b'Content-Disposition: form-data; name="%s"' % (b"n" * 200), I2.encode()) + END)]}


@case("MP-FILENAME-LONG")
def _(t):
    return {"http": raw_mp(t, part(b'Content-Disposition: form-data; name="matrix"; filename="%s"' % (b"f" * 300),
                                   I2.encode()) + END)}


@case("MP-NO-DISPOSITION")
def _(t):
    return {"http": raw_mp(t, part(b"Content-Type: text/plain", I2.encode()) + END)}


@case("MP-PADDING")
def _(t):
    return {"http": raw_mp(t, b"--BND" + b" " * 300)}


@case("MP-BOUNDARY-LINE")
def _(t):
    return {"http": raw_mp(t, b"--BNDx\r\n" + b'Content-Disposition: form-data; name="matrix"\r\n\r\n' + I2.encode() + b"\r\n" + END)}


@case("MP-HEADERS-LONG")
def _(t):
    return {"http": raw_mp(t, part(b'Content-Disposition: form-data; name="matrix"\r\nX-Pad: ' + b"p" * 9000,
                                   I2.encode()) + END)}


@case("MP-UNTERMINATED")
def _(t):
    return {"http": [raw_mp(t, MATRIX_PART), raw_mp(t, b"no boundary at all")]}


@case("OPT-NOT-JSON")
def _(t):
    return {"http": [t.post_mp([("matrix", "A.mtx", I2), ("options", None, "[1,2")], line=1),
                     t.post_mp([("matrix", "A.mtx", I2), ("options", None, '{"tol": 1e-6, "tol": 1e-7}')], line=1)]}


@case("OPT-NOT-OBJECT")
def _(t):
    return {"http": t.post_mp([("matrix", "A.mtx", I2), ("options", None, "[1, 2]")])}


@case("OPT-TYPE")
def _(t):
    return {"http": [t.post_mp([("matrix", "A.mtx", I2), ("options", None, '{"tol": [1e-6]}')]),
                     t.post_mp([("matrix", "A.mtx", I2), ("options", None, '{"precond": null}')])]}


# ---- job parameters: cg

def param_row(ident, *queries, options=None):
    def fn(t):
        out = [t.post(I2.encode(), "?" + q) for q in queries]
        if options is not None:
            out.append(t.post_mp([("matrix", "A.mtx", I2), ("options", None, json.dumps(options))]))
        return {"http": out}
    CASES[ident] = fn


param_row("PARAM-KIND", "kind=bogus", "kind=", options={"kind": "CG"})
param_row("PARAM-TOL", "tol=abc", "tol=2", "tol=0", "tol=nan", options={"tol": 1})
param_row("PARAM-MAXITER", "maxiter=0", "maxiter=-1", "maxiter=1.5", "maxiter=2000000000", options={"maxiter": 0})
param_row("PARAM-PRECOND", "precond=ilu", options={"precond": "Jacobi"})
param_row("PARAM-PRECOND-OPTION", "precond_degree=0", "precond_sweeps=abc", "precond_shift=nan",
          options={"precond_lanczos": 1})
param_row("PARAM-METHOD", "method=gmres")
param_row("PARAM-PRECISION", "precision=half")
param_row("PARAM-BACKEND", "backend=cuda", options={"backend": "Native"})
param_row("PARAM-ATOL", "atol=abc", "atol=-1", "atol=inf", options={"atol": -0.5})
param_row("PARAM-KEEP", "keep=forever", "kind=springs&grid=3&keep=1", options={"keep": "Until-Fetched"})
param_row("PARAM-UNKNOWN", "color=blue", "tol=1e-6&Tol=1e-6", options={"colour": "blue"})
param_row("PARAM-CG-FOR-PHYSICS", "kind=springs&grid=3&tol=0.5", "tol=0.5&kind=nbody&random=4",
          options={"kind": "springs", "precond": "jacobi"})
param_row("PARAM-NAME-LONG", "p" * 70 + "=1", "kind=springs&" + "p" * 70 + "=1")
param_row("PARAM-NAME-UTF8", "%FF=1", "kind=nbody&%C0%80=1")
param_row("PARAM-VALUE-UTF8", "colour=%FF", "kind=springs&S=%ED%A0%80")


# ---- job parameters: physics (each also through its clsolve command where it has one)

def phys_row(ident, cli=None, query=None, options=None, kind=None, upload=None):
    """cli: argv after the command; query: query string for a job of `kind`;
    options: a JSON options part; upload: (filename, content) input part."""
    def fn(t):
        out = {}
        if cli is not None:
            out["cli"] = [t.cli(*c) for c in cli] if isinstance(cli[0], list) else t.cli(*cli)
        jobs = []
        if query is not None:
            if upload:
                jobs.append(t.post_mp([("input",) + upload], "?kind=%s&%s" % (kind, query)))
            else:
                jobs.append(t.post(b"", "?kind=%s&%s" % (kind, query)))
        if options is not None:
            parts = [("options", None, json.dumps(options))]
            if upload:
                parts.insert(0, ("input",) + upload)
            jobs.append(t.post_mp(parts, "?kind=" + kind))
        if jobs:
            out["http"] = jobs
        return out
    CASES[ident] = fn


S = "springs"
phys_row("SPRINGS-S", ["springs", "--grid", "3", "--S", "2"], "grid=3&S=2", {"grid": 3, "S": 0}, S)
phys_row("SPRINGS-DAMPING", ["springs", "--grid", "3", "--d", "1"], "grid=3&d=1", kind=S)
phys_row("SPRINGS-DT", ["springs", "--grid", "3", "--dt", "0"], "grid=3&dt=-1", kind=S)
phys_row("SPRINGS-GRAVITY", ["springs", "--grid", "3", "--gravity", "inf"])
phys_row("SPRINGS-ITERATIONS", ["springs", "--grid", "3", "--iterations", "0"], "grid=3&iterations=0", kind=S)
phys_row("SPRINGS-FLOOR", ["springs", "--grid", "3", "--floor", "nan"])
phys_row("SPRINGS-STEPS", ["springs", "--grid", "3", "--steps", "-1"], "grid=3&steps=-1", kind=S)
phys_row("SPRINGS-NO-INPUT", ["springs", "--steps", "1"], "steps=1", {"grid": 0}, S)
phys_row("SPRINGS-MIN-DIST", [["springs", "--grid", "3", "--min-dist", "-1"], ["springs", "--grid", "3", "--min-dist", "nan"]],
         "grid=3&min_dist=-1", kind=S)
phys_row("SPRINGS-MAX-DIST", [["springs", "--grid", "3", "--max-dist", "-1"], ["springs", "--grid", "3", "--max-dist", "inf"],
                              ["springs", "--grid", "3", "--max-dist", "nan"]],
         "grid=3&max_dist=-1", kind=S)
phys_row("SPRINGS-GRID", ["springs", "--grid", "50000"], "grid=50000", kind=S)
phys_row("SPRINGS-PROJECTION", ["springs", "--grid", "3", "--projection", "gauss"], "grid=3&projection=gauss", kind=S)
phys_row("SPRINGS-OMEGA", ["springs", "--grid", "3", "--projection", "jacobi", "--omega", "4"],
         "grid=3&projection=jacobi&omega=4", kind=S)
phys_row("SPRINGS-CHEBYSHEV", ["springs", "--grid", "3", "--projection", "jacobi", "--chebyshev", "1"],
         "grid=3&projection=jacobi&chebyshev=1", kind=S)
phys_row("SPRINGS-JACOBI-ONLY", [["springs", "--grid", "3", "--omega", "2"], ["springs", "--grid", "3", "--chebyshev", "0.9"]],
         "grid=3&omega=2", kind=S)
phys_row("SPRINGS-JACOBI-LAUNCH", ["springs", "--grid", "3", "--projection", "jacobi", "--launch", "color"],
         "grid=3&projection=jacobi&launch=workgroup", kind=S)
phys_row("SPRINGS-PIN-RANGE", ["springs", "--grid", "3", "--pin", "0,99"], None, {"grid": 3, "pin": [99]}, S)
phys_row("SPRINGS-OPT-NUMBER", None, "grid=3&S=abc", kind=S)
phys_row("SPRINGS-OPT-FLOOR", None, "grid=3&floor=low", kind=S)
phys_row("SPRINGS-OPT-INTEGER", None, "grid=1.5", kind=S)
phys_row("SPRINGS-OPT-RANGE", None, "grid=3000000000", kind=S)
phys_row("SPRINGS-OPT-BOOLEAN", None, "grid=3&edges=1", kind=S)
phys_row("SPRINGS-OPT-LAUNCH", None, "grid=3&launch=warp", kind=S)
phys_row("SPRINGS-OPT-PIN", None, "grid=3&pin=4", kind=S)
phys_row("SPRINGS-OPT-PIN-INTEGER", None, None, {"grid": 3, "pin": [1.5]}, S)
phys_row("SPRINGS-OPT-UNKNOWN", None, "grid=3&colour=red", kind=S)
phys_row("SPRINGS-SHAPE", ["springs", "--grid", "3", "--shape", "2"], "grid=3&shape=2", kind=S)
phys_row("SPRINGS-FRICTION", ["springs", "--grid", "3", "--friction", "-1"], "grid=3&friction=-1", kind=S)
phys_row("SPRINGS-BEND", ["springs", "--grid", "3", "--bend", "2"], "grid=3&bend=2", kind=S)
phys_row("SPRINGS-SCALE", ["springs", "--grid", "3", "--scale", "0"], "grid=3&scale=0", kind=S)
phys_row("SPRINGS-TOTAL-MASS", ["springs", "--grid", "3", "--total-mass", "-1"], "grid=3&total_mass=-1", kind=S)
phys_row("SPRINGS-ZERO-MASS", ["springs", "--grid", "1", "--mass", "area"], None, {"grid": 1, "mass": "area"}, S)
phys_row("SPRINGS-COLLIDER", [["springs", "--grid", "3", "--sphere", "0,0,0,-1"], ["springs", "--grid", "3", "--box", "1,1,1,0,0,0"]],
         None, {"grid": 3, "colliders": [{"type": "sphere", "center": [0, 0, 0], "radius": -1}]}, S)
phys_row("SPRINGS-EVERY", ["springs", "--grid", "3", "--every", "0", "-o", "x.obj"], "grid=3&every=-1", {"grid": 3, "energy_every": -2}, S)
phys_row("SPRINGS-OPT-VECTOR", None, None, {"grid": 3, "velocity": [1, 2]}, S)
phys_row("SPRINGS-OPT-MASS", None, "grid=3&mass=heavy", kind=S)
phys_row("SPRINGS-OPT-FORMAT", None, "grid=3&format=stl", kind=S)
phys_row("SPRINGS-OPT-COLLIDERS", None, None, {"grid": 3, "colliders": 5}, S)
phys_row("SPRINGS-OPT-COLLIDER", None, None, {"grid": 3, "colliders": [{"type": "cone"}]}, S)

N = "nbody"
phys_row("NBODY-NO-INPUT", ["nbody", "--steps", "1"], "steps=1", {"random": -1}, N)
phys_row("NBODY-TOO-MANY", ["nbody", "--random", "3000000000"], "random=3000000000", kind=N)
phys_row("NBODY-STEPS", ["nbody", "--random", "4", "--steps", "-1"], "random=4&steps=-1", kind=N)
phys_row("NBODY-DT", ["nbody", "--random", "4", "--dt", "-1"], "random=4&dt=-1", kind=N)
phys_row("NBODY-SOFTENING", ["nbody", "--random", "4", "--softening", "0"], "random=4&softening=0", kind=N)
phys_row("NBODY-DAMPING", ["nbody", "--random", "4", "--damping", "2"], "random=4&damping=2", kind=N)
phys_row("NBODY-TILE", ["nbody", "--random", "4", "--tile", "3"], "random=4&tile=3", kind=N)
phys_row("NBODY-OPT-NUMBER", None, "random=4&dt=soon", kind=N)
phys_row("NBODY-OPT-INTEGER", None, "random=4.5", kind=N)
phys_row("NBODY-OPT-TILE", None, "random=4&tile=2048", kind=N)
phys_row("NBODY-OPT-CHECK", None, "random=4&check=1", kind=N)
phys_row("NBODY-OPT-UNKNOWN", None, "random=4&mass=2", kind=N)
phys_row("NBODY-NONFINITE", ["nbody", "--random", "100", "--dt", "1e30", "--steps", "3"], "random=100&dt=1e30&steps=3", kind=N)
phys_row("SPRINGS-NONFINITE", ["springs", "--grid", "10", "--dt", "1e20", "--steps", "5"],
         "grid=10&dt=1e20&steps=5", kind=S)
phys_row("NBODY-SOFTENING-THESIS", ["nbody", "--random", "4", "--softening-thesis", "-1"], "random=4&softening_thesis=-1", kind=N)
phys_row("NBODY-SOFTENING-FLOAT", ["nbody", "--random", "4", "--softening", "1e-30"], "random=4&softening=1e-30", kind=N)
phys_row("NBODY-EVERY", ["nbody", "--random", "4", "--every", "0", "-o", "b.csv"], "random=4&every=-1", kind=N)
phys_row("NBODY-DISK", ["nbody", "--disk", "1"], "disk=1", kind=N)
phys_row("NBODY-OPT-INTEGRATOR", None, "random=4&integrator=rk4", kind=N)
phys_row("NBODY-OPT-FORMAT", None, "random=4&format=stl", kind=N)
phys_row("NBODY-OPT-GENERATORS", None, "random=4&plummer=4", kind=N)

C = "curvature"
phys_row("CURV-OPT-ESTIMATOR", None, "saddle=3&estimator=edge", kind=C)
phys_row("CURV-OPT-FORMAT", None, "saddle=3&format=obj", kind=C)
phys_row("CURV-OPT-COLOR-BY", None, "saddle=3&color_by=Z", kind=C)
phys_row("CURV-OPT-COLOR-RANGE", None, "saddle=3&color_range=-1", kind=C)
phys_row("CURV-OPT-CHECK", None, "saddle=3&check=yes", kind=C)
phys_row("CURV-OPT-SADDLE", None, "saddle=1", {"saddle": 3.5}, C)
phys_row("CURV-OPT-UNKNOWN", None, "saddle=3&radius=2", kind=C)
phys_row("CURV-NO-MESH", None, "estimator=face", kind=C)


# ---- faults injected by other tests: nothing here (rows name the test)


# ---- the final phase: a long job running, a full queue, draining

def long_matrix(n=300000):
    """The 1-D Laplacian (2, -1), 8 MB: CG needs more than n iterations, long
    enough on any device for the final phase (which cancels it)."""
    out = ["%%MatrixMarket matrix coordinate real symmetric", "%d %d %d" % (n, n, 2 * n - 1)]
    out += ["%d %d 2\n%d %d -1" % (i, i, i + 1, i) for i in range(1, n)]
    out.append("%d %d 2" % (n, n))
    return ("\n".join(out) + "\n").encode()


LATE_IDS = ("HTTP-409-UNFINISHED", "CLIENT-WAIT-TIMEOUT", "HTTP-503-QUEUE", "CLIENT-HTTP-503",
            "CLIENT-JOB-CANCELLED", "SOLVE-CANCELLED", "HTTP-503-DRAINING",
            "HTTP-409-DELETE-ACTIVE", "CLIENT-RM-ACTIVE")


def late_phase(t, want):
    """Runs the rows that need a long job: returns {ID: {channel: [Obs]}}."""
    res = {i: {"cli": [], "http": []} for i in LATE_IDS}
    big = long_matrix()
    q = "?tol=1e-14&maxiter=1000000000"
    l1 = t.post(big, q, retry_full=False)
    if not isinstance(l1, Pending):
        raise CaseError("long job not accepted: %s" % l1)
    t.wait_running(l1.id, 2)
    res["HTTP-409-UNFINISHED"]["http"].append(t.http("GET", "/v1/jobs/%s/solution" % l1.id))
    res["CLIENT-WAIT-TIMEOUT"]["cli"].append(t.cli("wait", l1.id, "--timeout", "1"))
    # fill the queue behind the running job
    queued, full = [], None
    for _ in range(t.a.max_queued + 5):
        o = t.post(I2.encode(), retry_full=False)
        if isinstance(o, Pending):
            queued.append(o.id)
            continue
        full = o
        break
    if full is None or not queued:
        raise CaseError("the queue never filled (%d jobs accepted)" % len(queued))
    res["HTTP-503-QUEUE"]["http"].append(hdr_check(full, "Retry-After", "5"))
    res["HTTP-409-UNFINISHED"]["http"].append(t.http("GET", "/v1/jobs/%s/solution" % queued[0]))
    a = t.file("A.mtx", I2)
    res["CLIENT-HTTP-503"]["cli"].append(t.cli("submit", a, "--retries", "0"))
    # DELETE refuses active jobs; cancel a queued job and the running one
    res["HTTP-409-DELETE-ACTIVE"]["http"].append(t.http("DELETE", "/v1/jobs/" + queued[0]))
    res["HTTP-409-DELETE-ACTIVE"]["http"].append(t.http("DELETE", "/v1/jobs/" + l1.id))
    res["CLIENT-RM-ACTIVE"]["cli"].append(t.cli("rm", queued[0]))
    res["CLIENT-RM-ACTIVE"]["cli"].append(t.cli("rm", l1.id))
    st, _, _ = t.request("POST", "/v1/jobs/%s/cancel" % queued[0])
    if st != 202:
        raise CaseError("cancel of a queued job: HTTP %d" % st)
    res["CLIENT-JOB-CANCELLED"]["cli"].append(t.cli("wait", queued[0]))
    st, _, _ = t.request("POST", "/v1/jobs/%s/cancel" % l1.id)
    if st != 202:
        raise CaseError("cancel of the running job: HTTP %d (did the long job end early? %s)"
                        % (st, t.job(l1.id).get("error")))
    res["SOLVE-CANCELLED"]["http"].append(t.resolve(Pending(l1.id, what="running job cancelled")))
    res["CLIENT-JOB-CANCELLED"]["cli"].append(t.cli("wait", l1.id))
    for jid in queued[1:]:
        t.wait(jid)
    # drain: SIGTERM to rank 0 while a long job runs
    l2 = t.post(big, q, retry_full=False)
    if not isinstance(l2, Pending):
        raise CaseError("second long job not accepted: %s" % l2)
    t.wait_running(l2.id, 2)
    os.kill(t.a.rank0_pid, signal.SIGTERM)
    for _ in range(200):
        st, _, data = t.request("GET", "/healthz", token=False)
        if b"draining" in data:
            break
        time.sleep(0.05)
    else:
        raise CaseError("/healthz never said draining after SIGTERM")
    o = t.post(I2.encode(), retry_full=False)
    res["HTTP-503-DRAINING"]["http"].append(hdr_check(o, "Retry-After", "30") if isinstance(o, Obs) else o)
    res["CLIENT-HTTP-503"]["cli"].append(t.cli("submit", a, "--retries", "0"))
    t.request("POST", "/v1/jobs/%s/cancel" % l2.id)  # the daemon exits once it stops
    return {k: v for k, v in res.items() if k in want}


late_phase.late = True
for _i in LATE_IDS:
    CASES[_i] = late_phase


# ------------------------------------------------------------- the checker

TYPES = None  # --print-types: ID -> {(status, problem type)}

def check_obs(row, rows, chan, exp, o):
    """Problems with one observation against the row's expectation."""
    kind, val, ref, slug = exp
    src = rows.get(ref) if ref else row
    if ref and src is None:
        return ["%s: the %s cell refers to %s, which is not in the catalogue" % (row["id"], chan, ref)]
    fr = frags(src["message"])
    if not fr:
        return ["%s: no `message` in the catalogue row" % src["id"]]
    probs = []
    if isinstance(o, Pending):
        return ["%s: job %s was never resolved (internal)" % (row["id"], o.id)]
    where = "%s [%s: %s]" % (row["id"], chan, o.what)
    if chan == "exit":
        if o.kind != "cli" or kind != "code":
            return ["%s: exit cell %r does not fit a command-line observation" % (where, row["exit"])]
        if o.code != val:
            probs.append("%s: exit %s, the catalogue says %s" % (where, o.code, val))
    else:
        if kind == "code":
            if o.kind != "http":
                return ["%s: HTTP %s expected, got %s %s" % (where, val, o.kind, o.code)]
            if o.code != val:
                probs.append("%s: HTTP %s, the catalogue says %s" % (where, o.code, val))
            ctype = o.extra.get("headers", {}).get("content-type", "")
            prob = o.extra.get("problem")
            if TYPES is not None:
                TYPES.setdefault(row["id"], set()).add(
                    (o.code, (prob or {}).get("type", "").replace("urn:clsolve:problem:", "")))
            if o.code >= 400 and not ctype.startswith("application/problem+json") and not row["warn"]:
                probs.append("%s: Content-Type %r, not application/problem+json (and the row has no ⚠)"
                             % (where, ctype))
            if prob is not None and prob.get("status") != o.code:
                probs.append("%s: problem status %r in an HTTP %d answer" % (where, prob.get("status"), o.code))
            if slug and (prob or {}).get("type") != "urn:clsolve:problem:" + slug:
                probs.append("%s: problem type %r, the catalogue says %s"
                             % (where, (prob or {}).get("type"), slug))
            if not slug and prob is not None:
                probs.append("%s: the row gives no type for a problem of type %r" % (where, prob.get("type")))
        elif kind == "job":
            if o.kind != "job":
                return ["%s: a job was expected (%s), got HTTP %s: %s" % (where, row["http"], o.code, o.text[:300])]
            if o.code != val:
                probs.append("%s: job %s with error %s, the catalogue says %s: %s"
                             % (where, o.extra.get("status"), o.code, val, o.text[:300]))
            want_status = "cancelled" if val == "cancelled" else "failed"
            if o.extra.get("status") != want_status:
                probs.append("%s: job status %s, expected %s" % (where, o.extra.get("status"), want_status))
            if o.code in JOB_EXIT and o.extra.get("exit_code") != JOB_EXIT[o.code]:
                probs.append("%s: error.exit_code %s for code %s" % (where, o.extra.get("exit_code"), o.code))
        else:
            return ["%s: cannot read the HTTP cell %r" % (where, row["http"])]
    for f in fr:
        if f == "NAME:LINE:":
            m = re.search(r"(?:^|[\s'\"])[^\s:'\"]+:(\d+): ", o.text)
            if not m:
                probs.append("%s: message has no NAME:LINE: %r" % (where, o.text[:300]))
                continue
            got = int(m.group(1))
            if o.want_line is not None and got != o.want_line:
                probs.append("%s: message names line %d, the input's error is on line %d: %r"
                             % (where, got, o.want_line, o.text[:200]))
            if o.kind in ("http", "job") and o.line != got:
                probs.append("%s: the answer's line field is %r, the message says %d" % (where, o.line, got))
        elif f not in o.text:
            probs.append("%s: message lacks %r: %r" % (where, f, o.text[:400]))
    return probs


def check_row(row, rows, got):
    probs = []
    for chan, cell in (("exit", row["exit"]), ("http", row["http"])):
        exp = parse_expect(cell)
        key = "cli" if chan == "exit" else "http"
        obs = got.get(key)
        obs = [] if obs is None else obs if isinstance(obs, list) else [obs]
        if exp is None:
            if obs:
                probs.append("%s: the case observed the %s channel, but the row says — (%r)"
                             % (row["id"], key, obs[0]))
            continue
        if exp[0] == "bad":
            probs.append("%s: cannot read the %s cell %r" % (row["id"], chan, cell))
            continue
        if not obs:
            probs.append("%s: the row gives %s %r, but the case has no %s observation"
                         % (row["id"], chan, cell, key))
        for o in obs:
            probs += check_obs(row, rows, chan, exp, o)
    return probs


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc", required=True)
    ap.add_argument("--tests-dir", required=True)
    ap.add_argument("--clsolve", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--rank0-pid", type=int, required=True)
    ap.add_argument("--max-upload", type=int, required=True)
    ap.add_argument("--max-queued", type=int, required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--only", help="comma-separated IDs (debugging)")
    ap.add_argument("--timing", action="store_true", help="print the slowest cases")
    ap.add_argument("--print-types", action="store_true", help="print each row's problem types")
    a = ap.parse_args()
    global TYPES
    if a.print_types:
        TYPES = {}

    rows, problems = parse_doc(a.doc)
    only = set(a.only.split(",")) if a.only else None
    t = T(a)
    # the catalogue and the cases must name the same IDs
    external, untested, mine = [], [], []
    for rid, row in rows.items():
        tb = row["tested_by"].strip()
        if tb.lower().startswith("not tested"):
            untested.append(rid)
            if rid in CASES:
                problems.append("%s: marked 'not tested' but has a case" % rid)
            if len(tb) < len("not tested: x"):
                problems.append("%s: 'not tested' needs a reason" % rid)
        elif tb and tb not in DASH:
            external.append(rid)
            name = re.sub(r"[`*]", "", tb).split()[0]
            path = os.path.join(a.tests_dir, name)
            if not os.path.exists(path):
                problems.append("%s: tested by %s, which does not exist" % (rid, name))
            elif not re.search(r"(?<![A-Z0-9-])%s(?![A-Z0-9-])" % re.escape(rid),
                               open(path, encoding="utf-8", errors="replace").read()):
                problems.append("%s: tested by %s, which does not mention it (add '# errors.md: %s')"
                                % (rid, name, rid))
            if rid in CASES:
                problems.append("%s: tested by %s but also has a case here" % (rid, name))
        else:
            mine.append(rid)
            if rid not in CASES:
                problems.append("%s: catalogue row without a case in %s" % (rid, os.path.basename(__file__)))
    for cid in CASES:
        if cid not in rows:
            problems.append("%s: case without a catalogue row in %s" % (cid, os.path.basename(a.doc)))

    run_ids = [r for r in mine if r in CASES and (only is None or r in only)]
    early = [r for r in run_ids if not getattr(CASES[r], "late", False)]
    lates = [r for r in run_ids if getattr(CASES[r], "late", False)]
    results, skipped = {}, []
    t0 = time.time()

    times = {}

    def one(rid):
        t_start = time.time()
        try:
            return rid, CASES[rid](t), None
        except CaseError as e:
            return rid, None, str(e)
        except Exception as e:  # noqa: BLE001 - a broken case is a failure, not a crash
            return rid, None, "%s: %r" % (type(e).__name__, e)
        finally:
            times[rid] = time.time() - t_start

    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for rid, got, err in ex.map(one, early):
            if err and err.startswith("SKIP"):
                skipped.append("%s (%s)" % (rid, err))
            elif err:
                problems.append("%s: the case failed: %s" % (rid, err))
            else:
                results[rid] = got
    # resolve the jobs the cases submitted
    pend = [(rid, ch, i, o) for rid, got in results.items() for ch, v in got.items()
            for i, o in enumerate(v if isinstance(v, list) else [v]) if isinstance(o, Pending)]
    for rid, ch, i, p in pend:
        try:
            o = t.resolve(p)
            if p.keep and o.kind == "job":
                # a job stopped at maxiter keeps its solution (docs/api.md)
                st, _, _ = t.request("GET", "/v1/jobs/%s/solution" % p.id)
                if st != 200:
                    problems.append("%s: the job stopped at maxiter has no solution (HTTP %d)" % (rid, st))
        except CaseError as e:
            problems.append("%s: %s" % (rid, e))
            o = Obs("job", None, "unresolved", what=p.what)
        v = results[rid][ch]
        if isinstance(v, list):
            v[i] = o
        else:
            results[rid][ch] = o
    t1 = time.time()
    if lates:
        try:
            results.update(late_phase(t, set(lates)))
        except CaseError as e:
            problems.append("final phase (%s): %s" % (", ".join(lates), e))
    for rid in run_ids:
        if rid in results:
            problems += check_row(rows[rid], rows, results[rid])

    nobs = sum(len(v) if isinstance(v, list) else 1 for g in results.values() for v in g.values())
    print("errors.md: %d rows: %d tested here (%d observations), %d by other tests, %d not tested; "
          "%d skipped; %.0f s (final phase %.0f s)"
          % (len(rows), len(mine), nobs, len(external), len(untested), len(skipped),
             time.time() - t0, time.time() - t1))
    if a.timing:
        for rid in sorted(times, key=times.get, reverse=True)[:12]:
            print("time: %6.2f s %s" % (times[rid], rid))
    if TYPES is not None:
        for rid in sorted(TYPES):
            print("types: %s %s" % (rid, sorted(TYPES[rid])))
    for s in skipped:
        print("SKIP: " + s)
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
