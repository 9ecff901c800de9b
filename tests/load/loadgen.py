#!/usr/bin/env python3
"""loadgen.py: a bounded load test of clsolved's HTTP API (Python 3.9+,
standard library only).

  loadgen.py --url URL [--clients C] [--duration D] [--jobs N] [--poll-ms P]
             [--drain-timeout T] [--param k=v ...] [--json OUT]
             [--pids PID,PID | --pid-file F] [--data-dir DIR] [--fsync-probe DIR]
             [--metrics exact|relaxed|off] [--label TEXT] A.mtx [B.mtx ...]

C client threads, each with its own keep-alive connection, loop for D
seconds and/or until N jobs have been accepted (whichever comes first):
submit one of the matrices (raw POST /v1/jobs, round robin), poll
GET /v1/jobs/ID every P ms until the job is terminal, then download the
solution (formats mtx, json and binary in turn) and check it: n values,
and the relative residual ||A*1 - A x|| / ||A*1|| recomputed here with a
pure-Python CSR product, at most 10 * tol and equal (to 0.1 %) to the
job's own true_relative_residual. A 503 (queue full, draining) is retried
with backoff and counted apart; it is not an error. After the submitting
stops, the jobs in flight get T seconds to finish.

Then the accounting: GET /v1/jobs (every page, following `next`) must list
every accepted id, once, as succeeded, and no job this run did not submit
(the list is compared with the one taken before the run); the daemon's
/metrics counters must have moved by exactly what this client saw
(--metrics exact; `relaxed` when something else talks to the daemon at the
same time: then they must have moved at least that much); with --data-dir
the daemon's incoming/ must be empty and every job must have its directory.

Memory: the daemon's rank processes (their pids from GET /v1/devices, or
--pids, or the ranks beside the pid in --pid-file) are sampled from
/proc/PID/status (VmRSS, VmHWM, Threads) and /proc/PID/fd before the run,
every 0.2 s during it (peak) and after it (once the client connections are
closed and the daemon's fd count has settled).

Latencies, per request type (submit = the 202 POST including the upload,
poll, fetch, submit_503), are measured around one request/response on the
client; a job's end-to-end time runs from its first submit attempt (503
retries included) to its solution checked; the daemon's own queue wait
and run time come from the job's created_at/started_at/finished_at. The
five slowest requests of each type are kept with the second of the run
they started in, so that spikes can be lined up. Each client thread holds
one http.client connection and reopens it when the daemon closes it
(`connections_opened` counts them). Context for the figures: the machine's
CPU split (/proc/stat) and load average over the run, how late this
process's own 10 ms sleeps wake up (its CPU starvation and GIL waits, which
are in every latency it measures) and, with --fsync-probe DIR, the time of
a 4 KiB write + fsync in DIR every 100 ms (the disk the daemon syncs to).
RSS growth per finished job (`rss_kb_per_job`, least squares over the
second half of the run) separates memory that grows with the jobs kept
from a one-off warm-up.

Output: a short table on stdout and the whole summary as JSON (--json
FILE, else on stdout after the table). Exit status: 0 when there were no
errors and every job is accounted for, 1 otherwise, 2 for a usage error.
Latencies are reported, never judged.
"""
import argparse
import calendar
import heapq
import http.client
import json
import math
import os
import random
import resource
import struct
import sys
import threading
import time
import urllib.parse

TERMINAL = ("succeeded", "failed", "cancelled")
FORMATS = ("mtx", "json", "binary")


# --- matrices -------------------------------------------------------------

class Matrix:
    """A square Matrix Market coordinate matrix as CSR, with b = A*1."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        with open(path, "rb") as f:
            self.body = f.read()
        lines = self.body.decode("ascii", "replace").splitlines()
        banner = lines[0].lower().split()
        if len(banner) < 5 or banner[0] != "%%matrixmarket" or banner[2] != "coordinate":
            raise ValueError("%s: not a Matrix Market coordinate file" % path)
        field, sym = banner[3], banner[4]
        data = [l for l in lines[1:] if l.strip() and not l.lstrip().startswith("%")]
        m, n, _ = (int(v) for v in data[0].split()[:3])
        if m != n:
            raise ValueError("%s: not square" % path)
        rows = [dict() for _ in range(n)]
        for l in data[1:]:
            p = l.split()
            i, j = int(p[0]) - 1, int(p[1]) - 1
            v = 1.0 if field == "pattern" else float(p[2])
            rows[i][j] = rows[i].get(j, 0.0) + v
            if sym != "general" and i != j:
                rows[j][i] = rows[j].get(i, 0.0) + (-v if sym == "skew-symmetric" else v)
        self.n = n
        self.ptr = [0]
        self.col = []
        self.val = []
        for r in rows:
            for j in sorted(r):
                self.col.append(j)
                self.val.append(r[j])
            self.ptr.append(len(self.col))
        self.b = self.matvec([1.0] * n)
        self.bnorm = math.sqrt(sum(v * v for v in self.b))

    def matvec(self, x):
        ptr, col, val = self.ptr, self.col, self.val
        return [sum(val[k] * x[col[k]] for k in range(ptr[i], ptr[i + 1]))
                for i in range(self.n)]

    def residual(self, x):
        ax = self.matvec(x)
        return math.sqrt(sum((bi - yi) ** 2 for bi, yi in zip(self.b, ax))) / self.bnorm


def parse_solution(fmt, data):
    """The solution vector from a GET /v1/jobs/ID/solution body."""
    if fmt == "binary":
        if len(data) % 8:
            raise ValueError("binary solution of %d bytes" % len(data))
        return list(struct.unpack("<%dd" % (len(data) // 8), data))
    if fmt == "json":
        j = json.loads(data)
        if j.get("n") != len(j.get("x", ())):
            raise ValueError("json solution: n=%r but %d values" % (j.get("n"), len(j.get("x", ()))))
        return [float(v) for v in j["x"]]
    lines = data.decode("ascii").splitlines()
    if not lines or not lines[0].lower().startswith("%%matrixmarket matrix array"):
        raise ValueError("solution is not a Matrix Market array: %r" % lines[:1])
    body = [l for l in lines[1:] if l.strip() and not l.startswith("%")]
    m, k = (int(v) for v in body[0].split()[:2])
    x = [float(v) for v in body[1:]]
    if k != 1 or len(x) != m:
        raise ValueError("solution is %d x %d with %d values" % (m, k, len(x)))
    return x


# --- statistics -----------------------------------------------------------

def pct(sorted_vals, p):
    """Nearest-rank percentile of an ascending list."""
    if not sorted_vals:
        return None
    k = max(1, int(math.ceil(p / 100.0 * len(sorted_vals))))
    return sorted_vals[min(k, len(sorted_vals)) - 1]


def stats_ms(vals):
    s = sorted(vals)
    out = {"count": len(s)}
    for name, p in (("p50", 50), ("p90", 90), ("p99", 99)):
        v = pct(s, p)
        out[name + "_ms"] = None if v is None else round(v * 1000, 3)
    out["max_ms"] = round(s[-1] * 1000, 3) if s else None
    out["mean_ms"] = round(sum(s) / len(s) * 1000, 3) if s else None
    return out


def iso_seconds(s):
    """'2025-01-01T12:00:00.123Z' -> Unix seconds (None for null)."""
    if not s:
        return None
    frac = s[19:].rstrip("Z")
    return calendar.timegm(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")) + (float(frac) if frac else 0.0)


# --- HTTP -----------------------------------------------------------------

class Conn:
    """One keep-alive connection; every response is tallied by class in
    `tally` (shared, for the comparison with the daemon's counters)."""

    def __init__(self, url, token, timeout, tally):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.token = token
        self.timeout = timeout
        self.tally = tally
        self.c = None
        self.connects = 0

    def request(self, method, path, body=None, headers=None):
        """(status, headers dict (lower-case names), body, seconds)."""
        if self.c is None:
            self.c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.connects += 1
        h = dict(headers or {})
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        t0 = time.perf_counter()
        try:
            self.c.request(method, path, body=body, headers=h)
            r = self.c.getresponse()
            data = r.read()
        except Exception:
            self.close()
            raise
        dt = time.perf_counter() - t0
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        if r.will_close:
            self.close()
        self.tally.add(r.status)
        return r.status, hdrs, data, dt

    def close(self):
        if self.c is not None:
            try:
                self.c.close()
            except Exception:  # noqa: BLE001
                pass
            self.c = None


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.by_class = {}

    def add(self, status):
        k = "%dxx" % (status // 100)
        with self.lock:
            self.by_class[k] = self.by_class.get(k, 0) + 1


def parse_metrics(text):
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, val = line.rpartition(" ")
        try:
            out[key] = float(val)
        except ValueError:
            pass
    return out


# --- processes ------------------------------------------------------------

def proc_status(pid):
    d = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "Threads"):
                    d[k] = int(v.split()[0])
        d["fds"] = len(os.listdir("/proc/%d/fd" % pid))
    except (OSError, ValueError):
        return None
    return d


def ranks_beside(pid):
    """The pids of the processes with the same parent and executable as pid
    (the ranks mpirun started), pid first."""
    def stat(p):
        with open("/proc/%d/stat" % p) as f:
            s = f.read()
        return s[s.index("(") + 1:s.rindex(")")], int(s[s.rindex(")") + 2:].split()[1])
    comm, ppid = stat(pid)
    pids = [pid]
    for e in os.listdir("/proc"):
        if e.isdigit() and int(e) != pid:
            try:
                c, pp = stat(int(e))
            except (OSError, ValueError):
                continue
            if pp == ppid and c == comm:
                pids.append(int(e))
    return pids


class Sampler(threading.Thread):
    def __init__(self, pids, every=0.2, progress=None):
        super().__init__(daemon=True)
        self.pids = pids
        self.every = every
        self.progress = progress  # () -> jobs finished so far, for the RSS timeline
        self.timeline = []  # (seconds, jobs, {pid: VmRSS kB})
        self.t0 = time.monotonic()
        self.stop = threading.Event()
        self.peak = {p: {"VmRSS": 0, "fds": 0, "Threads": 0} for p in pids}
        self.samples = 0
        self.lock = threading.Lock()

    def sample(self):
        with self.lock:
            rss = {}
            for p in self.pids:
                s = proc_status(p)
                if s is None:
                    continue
                pk = self.peak[p]
                for k in ("VmRSS", "fds", "Threads"):
                    pk[k] = max(pk[k], s.get(k, 0))
                rss[p] = s.get("VmRSS")
            self.samples += 1
            if self.progress:
                self.timeline.append((round(time.monotonic() - self.t0, 2), self.progress(), rss))

    def growth(self, pid):
        """Least-squares slope of the pid's RSS (kB) over jobs finished, on
        the second half of the run (after the allocator's warm-up)."""
        pts = [(j, r[pid]) for _, j, r in self.timeline if r.get(pid) is not None]
        pts = pts[len(pts) // 2:]
        if len(pts) < 3 or pts[-1][0] - pts[0][0] < 10:
            return None
        n = float(len(pts))
        mx = sum(x for x, _ in pts) / n
        my = sum(y for _, y in pts) / n
        sxx = sum((x - mx) ** 2 for x, _ in pts)
        return round(sum((x - mx) * (y - my) for x, y in pts) / sxx, 3) if sxx else None

    def run(self):
        while not self.stop.wait(self.every):
            self.sample()


class Probe(threading.Thread):
    """How late a 10 ms sleep of this process wakes up (its own stalls: CPU
    starvation, the GIL), and optionally how long a 4 KiB write + fsync
    takes in a directory every 100 ms (disk stalls)."""

    def __init__(self, fsync_dir=None):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.late = []
        self.fsync_dir = fsync_dir
        self.fsyncs = []
        self.fsync_errors = 0

    def run(self):
        path = os.path.join(self.fsync_dir, ".loadgen-fsync-probe") if self.fsync_dir else None
        n = 0
        while not self.stop.is_set():
            t = time.perf_counter()
            time.sleep(0.01)
            self.late.append(max(0.0, time.perf_counter() - t - 0.01))
            n += 1
            if path and n % 10 == 0:
                t = time.perf_counter()
                try:
                    with open(path, "wb") as f:
                        f.write(b"x" * 4096)
                        f.flush()
                        os.fsync(f.fileno())
                    self.fsyncs.append(time.perf_counter() - t)
                except OSError:
                    self.fsync_errors += 1
        if path:
            try:
                os.unlink(path)
            except OSError:
                pass


def cpu_times():
    """/proc/stat's cpu line: {user, nice, system, idle, iowait, irq, softirq, steal}."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        return dict(zip(("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"), v))
    except (OSError, ValueError):
        return None


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except (OSError, ValueError):
        return None


# --- the load -------------------------------------------------------------

class Load:
    def __init__(self, args, matrices):
        self.a = args
        self.mats = matrices
        self.lock = threading.Lock()
        self.tally = Tally()
        self.lat = {"submit": [], "poll": [], "wait": [], "fetch": [], "submit_503": []}
        self.slow = {k: [] for k in self.lat}  # min-heaps of (seconds, start, what)
        self.t0 = time.monotonic()
        self.e2e = []
        self.queue_wait = []
        self.run_s = []
        self.jobs = {}  # id -> record
        self.tickets = 0
        self.errors = []
        self.error_count = 0
        self.r503 = {}
        self.abandoned_503 = 0
        self.connects = 0
        self.stop_at = None
        self.deadline = None

    def record(self, kind, dt, what):
        """A request's latency; keeps the 5 slowest of each kind with the
        second of the run they started in, to line spikes up with each other."""
        with self.lock:
            self.lat[kind].append(dt)
            h = self.slow[kind]
            item = (dt, round(time.monotonic() - dt - self.t0, 2), what)
            if len(h) < 5:
                heapq.heappush(h, item)
            elif dt > h[0][0]:
                heapq.heapreplace(h, item)

    def error(self, what):
        with self.lock:
            self.error_count += 1
            if len(self.errors) < 50:
                self.errors.append(what)

    def take_ticket(self):
        with self.lock:
            if time.monotonic() >= self.stop_at or self.tickets >= self.a.jobs:
                return None
            self.tickets += 1
            return self.tickets - 1

    def submitting(self):
        return time.monotonic() < self.stop_at

    def worker(self, wid):
        a = self.a
        c = Conn(a.url, a.token, a.http_timeout, self.tally)
        rnd = random.Random(wid)
        query = "?" + urllib.parse.urlencode(a.params) if a.params else ""
        try:
            while True:
                t = self.take_ticket()
                if t is None:
                    return
                m = self.mats[t % len(self.mats)]
                fmt = FORMATS[t % len(FORMATS)]
                t_first = time.perf_counter()
                job, backoff = None, 0.05
                while job is None:
                    try:
                        st, h, data, dt = c.request("POST", "/v1/jobs" + query, m.body,
                                                    {"Content-Type": "text/plain"})
                    except Exception as e:  # noqa: BLE001
                        self.error("submit %s: %s: %s" % (m.name, type(e).__name__, e))
                        break
                    if st == 503:
                        try:
                            slug = json.loads(data).get("type", "").rsplit(":", 1)[-1]
                        except ValueError:
                            slug = "?"
                        ra = float(h.get("retry-after", "1") or 1)
                        self.record("submit_503", dt, m.name)
                        with self.lock:
                            self.r503[slug] = self.r503.get(slug, 0) + 1
                        if not self.submitting():
                            with self.lock:
                                self.abandoned_503 += 1
                            break
                        time.sleep(min(backoff, ra) * (0.5 + rnd.random()))
                        backoff = min(backoff * 2, 2.0)
                        if not self.submitting():
                            with self.lock:
                                self.abandoned_503 += 1
                            break
                        continue
                    if st != 202:
                        self.error("submit %s: HTTP %d: %s" % (m.name, st, data[:200]))
                        break
                    try:
                        job = json.loads(data)
                        if h.get("location") != "/v1/jobs/" + job["id"]:
                            raise ValueError("Location %r" % h.get("location"))
                    except (ValueError, KeyError) as e:
                        self.error("submit %s: bad 202 answer: %s" % (m.name, e))
                        job = None
                        break
                    self.record("submit", dt, "%s %s" % (m.name, job["id"]))
                    with self.lock:
                        dup = job["id"] in self.jobs
                        self.jobs.setdefault(job["id"], {"file": m.name, "status": "submitted"})
                    if dup:
                        self.error("duplicate job id %s" % job["id"])
                if job is None:
                    continue
                self.follow(c, job["id"], m, fmt, t_first)
        finally:
            with self.lock:
                self.connects += c.connects
            c.close()

    def follow(self, c, jid, m, fmt, t_first):
        a = self.a
        rec = self.jobs[jid]
        while True:
            if time.monotonic() > self.deadline:
                rec["status"] = "unfinished"
                self.error("job %s (%s) not finished by the deadline" % (jid, m.name))
                return
            path = "/v1/jobs/" + jid
            if a.wait > 0:  # a long poll: answered when the job ends
                path += "?wait=%g" % a.wait
            else:
                time.sleep(a.poll_ms / 1000.0)
            try:
                st, _, data, dt = c.request("GET", path)
            except Exception as e:  # noqa: BLE001
                self.error("poll %s: %s: %s" % (jid, type(e).__name__, e))
                rec["status"] = "poll-error"
                return
            self.record("wait" if a.wait > 0 else "poll", dt, jid)
            if st != 200:
                self.error("poll %s: HTTP %d: %s" % (jid, st, data[:200]))
                rec["status"] = "poll-error"
                return
            try:
                j = json.loads(data)
                status = j["status"]
            except (ValueError, KeyError) as e:
                self.error("poll %s: bad JSON: %s" % (jid, e))
                rec["status"] = "poll-error"
                return
            if status in TERMINAL:
                break
        rec["status"] = status
        if status != "succeeded":
            self.error("job %s (%s) %s: %s" % (jid, m.name, status, j.get("error")))
            return
        try:
            cr, cs = iso_seconds(j["created_at"]), iso_seconds(j["started_at"])
            cf = iso_seconds(j["finished_at"])
            with self.lock:
                self.queue_wait.append(cs - cr)
                self.run_s.append(cf - cs)
        except (TypeError, ValueError, KeyError):
            pass
        try:
            st, _, data, dt = c.request("GET", "/v1/jobs/%s/solution?format=%s" % (jid, fmt))
        except Exception as e:  # noqa: BLE001
            self.error("fetch %s: %s: %s" % (jid, type(e).__name__, e))
            rec["status"] = "fetch-error"
            return
        self.record("fetch", dt, "%s %s" % (jid, fmt))
        if st != 200:
            self.error("fetch %s: HTTP %d: %s" % (jid, st, data[:200]))
            rec["status"] = "fetch-error"
            return
        try:
            x = parse_solution(fmt, data)
            if len(x) != m.n:
                raise ValueError("%d values for n = %d" % (len(x), m.n))
            res = m.residual(x)
            r = j.get("result") or {}
            tol = float(r.get("tol") or j["parameters"]["tol"])
            rep = float(r["true_relative_residual"])
            if not res <= 10 * tol:
                raise ValueError("recomputed residual %.3g above 10 * tol %.3g" % (res, tol))
            if abs(res - rep) > 1e-3 * rep + 1e-14:
                raise ValueError("recomputed residual %.6g, the job says %.6g" % (res, rep))
        except Exception as e:  # noqa: BLE001
            self.error("solution %s (%s, %s): %s: %s" % (jid, m.name, fmt, type(e).__name__, e))
            rec["status"] = "wrong-solution"
            return
        rec["status"] = "verified"
        rec["residual"] = res
        with self.lock:
            self.e2e.append(time.perf_counter() - t_first)


def list_all(c, errors):
    """Every job of GET /v1/jobs, following `next`; (ids in order, jobs)."""
    ids, jobs, path, pages = [], {}, "/v1/jobs?limit=200", 0
    while path:
        st, _, data, _ = c.request("GET", path)
        pages += 1
        if st != 200:
            errors.append("list %s: HTTP %d" % (path, st))
            break
        page = json.loads(data)
        for j in page["jobs"]:
            ids.append(j["id"])
            jobs[j["id"]] = j["status"]
        path = page.get("next")
        if pages > 100000:
            errors.append("list: more than 100000 pages")
            break
    return ids, jobs, pages


def fetch_metrics(c):
    st, _, data, _ = c.request("GET", "/metrics")
    if st != 200:
        raise RuntimeError("/metrics: HTTP %d" % st)
    return parse_metrics(data.decode("utf-8", "replace"))


def daemon_pids(args, c):
    """[(rank or None, pid)]"""
    ranks = {}
    try:
        st, _, data, _ = c.request("GET", "/v1/devices")
        if st == 200:
            for r in json.loads(data).get("per_rank", []):
                ranks[int(r["pid"])] = int(r["rank"])
    except Exception:  # noqa: BLE001
        pass
    if args.pids:
        pids = [int(p) for p in args.pids.split(",") if p]
    elif args.pid_file:
        with open(args.pid_file) as f:
            pids = ranks_beside(int(f.read().split()[0]))
    else:
        pids = sorted(ranks, key=lambda p: ranks[p])
    pids = [p for p in pids if os.path.isdir("/proc/%d" % p)]
    return [(ranks.get(p), p) for p in pids]


def snapshot(pids):
    return {p: proc_status(p) for _, p in pids}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="Matrix Market coordinate matrices to submit")
    ap.add_argument("--url", required=True)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--duration", type=float, help="seconds of submitting")
    ap.add_argument("--jobs", type=int, help="jobs accepted at most")
    ap.add_argument("--poll-ms", type=float, default=20)
    ap.add_argument("--wait", type=float, default=0,
                    help="wait with long polls of this many seconds (GET /v1/jobs/ID?wait=S) "
                         "instead of polling every --poll-ms")
    ap.add_argument("--drain-timeout", type=float, default=60)
    ap.add_argument("--http-timeout", type=float, default=30)
    ap.add_argument("--param", action="append", default=[], help="k=v query parameter")
    ap.add_argument("--token", default=os.environ.get("CLSOLVE_TOKEN"))
    ap.add_argument("--pids", help="comma-separated daemon pids to sample")
    ap.add_argument("--pid-file", help="rank 0's pid file; its sibling ranks are sampled too")
    ap.add_argument("--data-dir", help="the daemon's --data-dir, to check incoming/ and jobs/")
    ap.add_argument("--metrics", choices=("exact", "relaxed", "off"), default="exact")
    ap.add_argument("--settle", type=float, default=10,
                    help="seconds at most to wait for the daemon's fd count to settle after")
    ap.add_argument("--fsync-probe", metavar="DIR",
                    help="also time a 4 KiB write + fsync in DIR every 100 ms")
    ap.add_argument("--json", help="write the JSON summary here")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    if args.duration is None and args.jobs is None:
        args.duration = 30.0
    if args.jobs is None:
        args.jobs = 1 << 62
    if args.duration is None:
        args.duration = 1e9
    if args.clients < 1:
        ap.error("--clients must be at least 1")
    args.params = dict(p.partition("=")[::2] for p in args.param)
    try:
        mats = [Matrix(f) for f in args.files]
    except (OSError, ValueError, IndexError) as e:
        ap.error("cannot use the matrices: %s" % e)

    ctl = Conn(args.url, args.token, args.http_timeout, Tally())
    summary_errors = []
    try:
        st, _, data, _ = ctl.request("GET", "/healthz")
    except OSError as e:
        print("loadgen: %s: %s" % (args.url, e), file=sys.stderr)
        return 1
    if st != 200:
        print("loadgen: %s/healthz answers %d" % (args.url, st), file=sys.stderr)
        return 1
    pids = daemon_pids(args, ctl)
    ids_before, _, _ = list_all(ctl, summary_errors)
    ctl.close()
    mem_before = snapshot(pids)
    # from here on every response is tallied: the daemon's counters must
    # move by exactly what this client saw
    tally = Tally()
    ctl.tally = tally
    m0 = fetch_metrics(ctl) if args.metrics != "off" else {}
    ctl.close()

    load = Load(args, mats)
    load.tally = tally
    sampler = Sampler([p for _, p in pids], progress=lambda: len(load.e2e))
    sampler.sample()
    sampler.start()
    probe = Probe(args.fsync_probe)
    probe.start()
    cpu0, la0 = cpu_times(), loadavg()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    load.t0 = t0
    load.stop_at = t0 + args.duration
    load.deadline = t0 + args.duration + args.drain_timeout
    threads = [threading.Thread(target=load.worker, args=(w,), daemon=True)
               for w in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, load.deadline - time.monotonic()) + args.http_timeout + 5)
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu1, la1 = cpu_times(), loadavg()
    probe.stop.set()
    probe.join()
    machine = {"nproc": os.cpu_count(), "loadavg_start": la0, "loadavg_end": la1,
               "client_wakeup_late": stats_ms(probe.late)}
    if cpu0 and cpu1:
        tot = float(sum(cpu1.values()) - sum(cpu0.values())) or 1.0
        machine["cpu_percent"] = {k: round(100.0 * (cpu1[k] - cpu0[k]) / tot, 1) for k in cpu0}
    if args.fsync_probe:
        machine["fsync_4k"] = stats_ms(probe.fsyncs)
    stuck = sum(1 for t in threads if t.is_alive())
    if stuck:
        load.error("%d client threads still running after the deadline" % stuck)
    sampler.stop.set()
    sampler.join()
    sampler.sample()

    # after: the client connections are closed; wait for the daemon to close its side
    t_settle = time.monotonic()
    while True:
        mem_after = snapshot(pids)
        if all(mem_after[p] and mem_before[p] and mem_after[p]["fds"] <= mem_before[p]["fds"]
               for _, p in pids) or time.monotonic() - t_settle > args.settle:
            break
        time.sleep(0.2)
    settle_s = time.monotonic() - t_settle

    # accounting
    acct_errors = list(summary_errors)
    st, _, data, _ = ctl.request("GET", "/healthz")
    health = None
    try:
        health = json.loads(data)
    except ValueError:
        pass
    if st != 200 or not health or health.get("status") != "ok":
        acct_errors.append("after the load /healthz answers %d %r" % (st, data[:100]))
    ids_after, status_after, pages = list_all(ctl, acct_errors)
    before_set = set(ids_before)
    mine = set(load.jobs)
    listed_new = [i for i in ids_after if i not in before_set]
    dups = len(ids_after) - len(set(ids_after))
    missing = sorted(mine - set(ids_after))
    foreign = sorted(set(listed_new) - mine)
    not_succeeded = sorted(i for i in mine if status_after.get(i) not in (None, "succeeded"))
    not_verified = sorted(i for i, r in load.jobs.items() if r["status"] != "verified")
    if dups:
        acct_errors.append("GET /v1/jobs lists %d ids twice" % dups)
    if missing:
        acct_errors.append("%d accepted jobs missing from GET /v1/jobs: %s" % (len(missing), missing[:5]))
    if foreign:
        acct_errors.append("%d listed jobs this run did not submit: %s" % (len(foreign), foreign[:5]))
    if not_succeeded:
        acct_errors.append("%d jobs not succeeded in the list: %s" % (
            len(not_succeeded), [(i, status_after[i]) for i in not_succeeded[:5]]))
    metrics = {}
    if args.metrics != "off":
        m1 = fetch_metrics(ctl)

        def d(k):
            return m1.get(k, 0.0) - m0.get(k, 0.0)
        n503 = sum(load.r503.values())
        seen = dict(tally.by_class)
        metrics = {
            "submitted_delta": d("clsolve_jobs_submitted_total"),
            "succeeded_delta": d('clsolve_jobs_finished_total{state="succeeded"}'),
            "failed_delta": d('clsolve_jobs_finished_total{state="failed"}'),
            "rejected_delta": d("clsolve_uploads_rejected_total"),
            "http_2xx_delta": d('clsolve_http_responses_total{code="2xx"}'),
            "http_4xx_delta": d('clsolve_http_responses_total{code="4xx"}'),
            "http_5xx_delta": d('clsolve_http_responses_total{code="5xx"}'),
            "queued_after": m1.get('clsolve_jobs{state="queued"}'),
            "running_after": m1.get('clsolve_jobs{state="running"}'),
            "client_saw": seen,
        }
        # a /metrics answer is counted after it is rendered: the first one
        # is in the deltas, the last one is not
        want = {"submitted_delta": len(mine), "succeeded_delta": len(mine),
                "rejected_delta": n503, "http_2xx_delta": seen.get("2xx", 0) - 1,
                "http_4xx_delta": seen.get("4xx", 0), "http_5xx_delta": seen.get("5xx", 0)}
        metrics["expected"] = want
        for k, v in want.items():
            got = metrics[k]
            if (got != v) if args.metrics == "exact" else (got < v):
                acct_errors.append("/metrics %s moved by %g, this client expected %s%g"
                                   % (k, got, "" if args.metrics == "exact" else "at least ", v))
        if metrics["queued_after"] or metrics["running_after"]:
            acct_errors.append("after the load the daemon still has %g queued, %g running jobs"
                               % (metrics["queued_after"] or 0, metrics["running_after"] or 0))
    ctl.close()
    mem_final = snapshot(pids)
    disk = {}
    if args.data_dir:
        inc = os.path.join(args.data_dir, "incoming")
        left = os.listdir(inc) if os.path.isdir(inc) else []
        nodir = [i for i in mine if not os.path.isfile(os.path.join(args.data_dir, "jobs", i, "job.json"))]
        disk = {"incoming_left": len(left), "jobs_without_job_json": len(nodir)}
        if left:
            acct_errors.append("%d uploads left in %s: %s" % (len(left), inc, left[:5]))
        if nodir:
            acct_errors.append("%d accepted jobs without DATA/jobs/ID/job.json" % len(nodir))

    # summary
    procs = []
    for rank, p in pids:
        b, a, f = mem_before.get(p) or {}, mem_after.get(p) or {}, mem_final.get(p) or {}
        pk = sampler.peak.get(p, {})
        procs.append({"rank": rank, "pid": p,
                      "rss_before_kb": b.get("VmRSS"), "rss_peak_kb": pk.get("VmRSS"),
                      "rss_after_kb": a.get("VmRSS"), "rss_final_kb": f.get("VmRSS"),
                      "hwm_kb": f.get("VmHWM") or a.get("VmHWM"),
                      "fds_before": b.get("fds"), "fds_peak": pk.get("fds"),
                      "fds_after": a.get("fds"),
                      "threads_before": b.get("Threads"), "threads_peak": pk.get("Threads"),
                      "threads_after": a.get("Threads"), "alive_after": bool(f),
                      "rss_kb_per_job": sampler.growth(p)})
        if not f:
            acct_errors.append("daemon process %d (rank %s) is gone after the load" % (p, rank))
    verified = sum(1 for r in load.jobs.values() if r["status"] == "verified")
    nreq = sum(len(v) for v in load.lat.values())
    lat = {k: stats_ms(v) for k, v in load.lat.items()}
    summary = {
        "label": args.label,
        "url": args.url,
        "clients": args.clients,
        "duration_s": None if args.duration >= 1e8 else args.duration,
        "max_jobs": None if args.jobs >= 1 << 62 else args.jobs,
        "poll_ms": args.poll_ms,
        "params": args.params,
        "files": [{"name": m.name, "n": m.n, "nnz": len(m.val)} for m in mats],
        "wall_s": round(wall, 3),
        "jobs": {"accepted": len(mine), "verified": verified,
                 "unverified": len(not_verified),
                 "by_status": _count(r["status"] for r in load.jobs.values())},
        "errors": load.error_count + len(acct_errors),
        "load_errors": load.error_count,
        "accounting_errors": acct_errors,
        "error_samples": load.errors,
        "retried_503": dict(load.r503),
        "abandoned_after_503": load.abandoned_503,
        "connections_opened": load.connects,
        "requests": nreq,
        "throughput": {"jobs_per_s": round(verified / wall, 2) if wall else None,
                       "requests_per_s": round(nreq / wall, 1) if wall else None},
        "latency": lat,
        "job_e2e": stats_ms(load.e2e),
        "daemon_queue_wait": stats_ms(load.queue_wait),
        "daemon_run": stats_ms(load.run_s),
        "listing": {"before": len(ids_before), "after": len(ids_after), "pages": pages,
                    "new": len(listed_new), "duplicates": dups, "missing": len(missing),
                    "foreign": len(foreign), "not_succeeded": len(not_succeeded)},
        "metrics": metrics,
        "disk": disk,
        "processes": procs,
        "memory_samples": sampler.samples,
        "rss_timeline": [(t, j, [r.get(p) for _, p in pids]) for t, j, r in sampler.timeline[::5]],
        "fd_settle_s": round(settle_s, 2),
        "loadgen_cpu_s": round((ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime), 2),
        "python": sys.version.split()[0],
        "machine": machine,
        "slowest": {k: [{"ms": round(d * 1000, 1), "at_s": t, "what": w}
                        for d, t, w in sorted(v, reverse=True)] for k, v in load.slow.items()},
    }
    text = json.dumps(summary, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print_table(summary)
    if args.json:
        print("JSON summary: %s" % args.json)
    else:
        print(text)
    return 0 if summary["errors"] == 0 and len(not_verified) == 0 else 1


def _count(it):
    d = {}
    for v in it:
        d[v] = d.get(v, 0) + 1
    return d


def _f(v, fmt="%.1f"):
    return "-" if v is None else fmt % v


def print_table(s):
    w = print
    dur = "%.0f s" % s["duration_s"] if s["duration_s"] else "%s jobs" % s["max_jobs"]
    w("clsolve load %s: %d clients, %s, poll %g ms, wall %.1f s, python %s"
      % (s["label"], s["clients"], dur, s["poll_ms"], s["wall_s"], s["python"]))
    w("jobs: accepted %d, verified %d, errors %d, 503 retried %s, abandoned after 503 %d"
      % (s["jobs"]["accepted"], s["jobs"]["verified"], s["errors"],
         sum(s["retried_503"].values()) if s["retried_503"] else 0, s["abandoned_after_503"]))
    w("throughput: %s jobs/s, %s requests/s; %d connections opened; loadgen CPU %.1f s"
      % (s["throughput"]["jobs_per_s"], s["throughput"]["requests_per_s"],
         s["connections_opened"], s["loadgen_cpu_s"]))
    w("%-18s %8s %9s %9s %9s %9s" % ("latency", "count", "p50 ms", "p90 ms", "p99 ms", "max ms"))
    rows = [(k, s["latency"][k]) for k in ("submit", "poll", "wait", "fetch", "submit_503")]
    rows += [("job end-to-end", s["job_e2e"]), ("daemon queue wait", s["daemon_queue_wait"]),
             ("daemon run", s["daemon_run"])]
    for name, st in rows:
        if st["count"]:
            w("%-18s %8d %9s %9s %9s %9s" % (name, st["count"], _f(st["p50_ms"]), _f(st["p90_ms"]),
                                             _f(st["p99_ms"]), _f(st["max_ms"])))
    w("%-5s %8s %9s %9s %9s %9s %7s %5s %5s %5s %8s" % (
        "rank", "pid", "RSS0 MB", "peak MB", "after MB", "HWM MB", "kB/job", "fds0", "fdmax", "fds1",
        "threads"))
    for p in s["processes"]:
        mb = lambda k: _f(None if p[k] is None else p[k] / 1024.0)  # noqa: E731
        w("%-5s %8d %9s %9s %9s %9s %7s %5s %5s %5s %8s" % (
            _f(p["rank"], "%d"), p["pid"], mb("rss_before_kb"), mb("rss_peak_kb"),
            mb("rss_after_kb"), mb("hwm_kb"), _f(p["rss_kb_per_job"]),
            _f(p["fds_before"], "%d"), _f(p["fds_peak"], "%d"),
            _f(p["fds_after"], "%d"), "%s/%s" % (p["threads_before"], p["threads_after"])))
    mc = s["machine"]
    cp = mc.get("cpu_percent") or {}
    w("machine: nproc %s, load %s -> %s; CPU user %s%% nice %s%% system %s%% idle %s%% iowait %s%% "
      "steal %s%%; "
      "client 10 ms sleeps late p99 %s ms max %s ms%s"
      % (mc["nproc"], mc["loadavg_start"], mc["loadavg_end"], cp.get("user"), cp.get("nice"), cp.get("system"),
         cp.get("idle"), cp.get("iowait"), cp.get("steal"), mc["client_wakeup_late"]["p99_ms"],
         mc["client_wakeup_late"]["max_ms"],
         "; fsync 4 KiB p50 %s p99 %s max %s ms" % (mc["fsync_4k"]["p50_ms"], mc["fsync_4k"]["p99_ms"],
                                                     mc["fsync_4k"]["max_ms"]) if "fsync_4k" in mc else ""))
    w("slowest (ms@second of the run): " + "; ".join(
        "%s %s" % (k, " ".join("%.0f@%.1f" % (x["ms"], x["at_s"]) for x in v[:3]))
        for k, v in s["slowest"].items() if v))
    L = s["listing"]
    w("accounting: listed %d new (%d pages), missing %d, foreign %d, duplicates %d, "
      "not succeeded %d; metrics %s"
      % (L["new"], L["pages"], L["missing"], L["foreign"], L["duplicates"], L["not_succeeded"],
         "checked" if s["metrics"] else "off"))
    for e in s["accounting_errors"] + s["error_samples"][:10]:
        w("ERROR: %s" % e)


if __name__ == "__main__":
    sys.exit(main())
