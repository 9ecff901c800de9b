#!/usr/bin/env python3
"""soak.py: a long, bounded run of clsolved under a mix of work and abuse
(issue 17), on loopback, standard library only.

  soak.py --url URL --rank0-pid-file F [--jobs 10000] [--seconds S]
          [--clients 4] [--kills 3] [--bomb-every 300] [--json OUT]
          MATRIX [MATRIX...]

C client threads run until --jobs jobs have been accepted or --seconds
have passed, each picking, per round:
  submit     one of the matrices, raw (70 %)
  malformed  a bad banner (400) or a bad entry found by the job (failed,
             bad_input) (8 %)
  cancel     submit, then POST .../cancel at once: the job ends cancelled (or had
             finished) (8 %)
  delete     DELETE of one of this client's finished jobs: 204, then 404 (6 %)
  disconnect a raw socket sends a third of an upload and closes: no job (4 %)
  listing    GET /v1/jobs?limit=20 (4 %)
and every job it submits is polled (GET /v1/jobs/ID, whose latencies are
kept) until it ends. Every --bomb-every accepted jobs one client sends a
gzip bomb (a 100 x 100 matrix declaring more entries than the daemon's
--max-nnz: 413, or under it and holding one extra line: the job fails at
that line). --kills times, evenly spread (over the time or the job count, whichever
runs out first), rank 0 gets SIGKILL: the
supervisor (deploy/supervise.sh) restarts the daemon on the same port;
clients retry a request whose connection failed, and a job in flight is
re-run (interrupted_runs) or had already ended.

After the run every accepted job that was not deleted must be in a final
state: succeeded with a correct answer (the solution fetched and
||A*1 - A x|| / ||A*1|| recomputed here, at most 10 * tol), failed with
a message (malformed: bad_input at the bad line; bomb: the extra line),
or cancelled. Rank 0 (its last life) is sampled from /proc: VmRSS,
threads and descriptors when it is idle after its first --warm jobs and
at the end (idle again). Prints a table and, with --json, the summary.
Exit 1 when a job is lost or wrong; memory and latency are reported, the
caller judges them.
"""
import argparse
import gzip
import http.client
import json
import math
import os
import random
import signal
import socket
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from loadgen import Matrix, parse_solution, proc_status  # noqa: E402
import attack  # noqa: E402

BAD_BANNER = b"%%MatrixMarket matrix coordinate quaternion general\n2 2 1\n1 1 1\n"
BAD_ENTRY = b"%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 x\n3 3 1\n"


class Daemon:
    """Requests to a daemon that may be restarting: a request whose
    connection fails is retried (for up to `patience` s)."""

    def __init__(self, url, patience=180):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.patience = patience
        self.local = threading.local()
        self.quiet = None  # an Event: while set, requests wait

    def _conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            c = self.local.c = http.client.HTTPConnection(self.host, self.port, timeout=60)
        return c

    def _drop(self):
        c = getattr(self.local, "c", None)
        if c is not None:
            c.close()
        self.local.c = None

    def request(self, method, path, body=None, headers=None, retry=True):
        if self.quiet is not None and self.quiet.is_set():
            self._drop()  # idle: the samples see no client connection
            while self.quiet.is_set():
                time.sleep(0.05)
        end = time.time() + self.patience
        while True:
            t0 = time.perf_counter()
            try:
                c = self._conn()
                c.request(method, path, body=body, headers=headers or {})
                r = c.getresponse()
                data = r.read()
                if r.will_close:
                    self._drop()
                return r.status, data, time.perf_counter() - t0
            except (OSError, http.client.HTTPException):
                self._drop()
                if not retry or time.time() > end:
                    raise
                time.sleep(0.2)


class Soak:
    def __init__(self, a):
        self.a = a
        self.d = Daemon(a.url)
        self.mats = [Matrix(p) for p in a.matrices]
        self.lock = threading.Lock()
        self.jobs = {}  # id -> {"kind", "matrix", "deleted"}
        self.accepted = 0
        self.counts = {}
        self.poll_lat = []
        self.errors = []
        self.stop = threading.Event()
        self.quiet = threading.Event()  # set: clients hold off (idle samples)
        self.d.quiet = self.quiet
        self.idle_start = None
        self.accepted_at_start = 0
        self.bombs = 0
        self.next_bomb = a.bomb_every

    def count(self, k):
        with self.lock:
            self.counts[k] = self.counts.get(k, 0) + 1

    def err(self, msg):
        with self.lock:
            self.errors.append(msg)

    def add(self, jid, kind, mat=None):
        with self.lock:
            self.jobs[jid] = {"kind": kind, "matrix": mat, "deleted": False}
            self.accepted += 1
            if self.accepted >= self.a.jobs:
                self.stop.set()
            bomb = self.accepted >= self.next_bomb
            if bomb:
                self.next_bomb += self.a.bomb_every
        return bomb

    def poll(self, jid, timeout=600):
        end = time.time() + timeout
        while time.time() < end:
            st, data, dt = self.d.request("GET", "/v1/jobs/" + jid)
            with self.lock:
                self.poll_lat.append(dt)
            if st != 200:
                return None
            j = json.loads(data)
            if j["status"] not in ("queued", "running"):
                return j
            time.sleep(0.02)
        return None

    def submit(self, body, kind, mat=None, query="?tol=1e-8"):
        st, data, _ = self.d.request("POST", "/v1/jobs" + query, body)
        if st == 503:
            time.sleep(0.2)
            return None
        if st != 202:
            return st, data
        jid = json.loads(data)["id"]
        bomb = self.add(jid, kind, mat)
        return jid, bomb

    def bomb(self):
        """A 100 x 100 gzip bomb: over --max-nnz (413) or under it with an
        extra line (the job fails there)."""
        self.bombs += 1
        over = self.bombs % 2 == 1
        entries = self.a.max_nnz + 1 if over else max(1000, self.a.max_nnz // 2)
        gen, _ = attack.gzip_bomb(100, entries)
        body = b"".join(gen)
        st, data, _ = self.d.request("POST", "/v1/jobs", body)
        if over:
            self.count("bomb_413")
            if st != 413 or b"matrix-too-large" not in data:
                self.err("bomb over --max-nnz: HTTP %d %r" % (st, data[:200]))
            return
        if st != 202:
            self.err("bomb under --max-nnz: HTTP %d %r" % (st, data[:200]))
            return
        jid = json.loads(data)["id"]
        self.add(jid, "bomb")
        self.count("bomb_job")

    def disconnect(self, mat):
        s = socket.create_connection((self.d.host, self.d.port), timeout=10)
        try:
            s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(mat.body))
            s.sendall(mat.body[: len(mat.body) // 3])
            time.sleep(0.05)
        finally:
            s.close()

    def client(self, cid):
        rnd = random.Random(cid * 7919 + int(time.time()))
        mine = []
        end = time.time() + self.a.seconds
        while not self.stop.is_set() and time.time() < end:
            if self.quiet.is_set():
                time.sleep(0.1)
                continue
            try:
                r = rnd.random()
                mat = rnd.choice(self.mats)
                if r < 0.70:
                    got = self.submit(mat.body, "good", mat)
                    if got and isinstance(got[0], str):
                        self.count("submit")
                        j = self.poll(got[0])
                        if j and j["status"] == "succeeded":
                            mine.append(got[0])
                        if got[1]:
                            self.bomb()
                elif r < 0.78:
                    if rnd.random() < 0.5:
                        st, data, _ = self.d.request("POST", "/v1/jobs", BAD_BANNER)
                        self.count("malformed_400")
                        if st != 400:
                            self.err("bad banner: HTTP %d" % st)
                    else:
                        got = self.submit(BAD_ENTRY, "bad_entry")
                        if got and isinstance(got[0], str):
                            self.count("malformed_job")
                            self.poll(got[0])
                elif r < 0.86:
                    got = self.submit(mat.body, "cancel", mat, "?tol=1e-14&maxiter=1000000")
                    if got and isinstance(got[0], str):
                        self.count("cancel")
                        st, _, _ = self.d.request("POST", "/v1/jobs/" + got[0] + "/cancel")
                        # 409: it finished first (nothing to cancel)
                        if st not in (202, 404, 409):
                            self.err("cancel: POST .../cancel %d" % st)
                        if st == 404:  # as for delete, below
                            with self.lock:
                                self.jobs[got[0]]["deleted"] = True
                        else:
                            self.poll(got[0])
                elif r < 0.92:
                    if mine:
                        jid = mine.pop(rnd.randrange(len(mine)))
                        st, _, _ = self.d.request("DELETE", "/v1/jobs/" + jid)
                        self.count("delete")
                        if st in (204, 404):
                            # 404: a DELETE retried after a kill -9 cut its
                            # answer off (the restart finished the removal)
                            with self.lock:
                                self.jobs[jid]["deleted"] = True
                            st2, _, _ = self.d.request("GET", "/v1/jobs/" + jid)
                            if st2 != 404:
                                self.err("deleted job %s answers %d" % (jid, st2))
                        else:
                            self.err("delete of a finished job: %d" % st)
                elif r < 0.96:
                    self.disconnect(mat)
                    self.count("disconnect")
                else:
                    st, _, _ = self.d.request("GET", "/v1/jobs?limit=20")
                    self.count("list")
                    if st != 200:
                        self.err("list: %d" % st)
            except Exception as e:  # noqa: BLE001
                self.err("client %d: %r" % (cid, e))
                time.sleep(0.5)
        self.d._drop()

    def killer(self, pidfile, t0):
        """SIGKILL rank 0 --kills times, evenly spread over the run."""
        for k in range(1, self.a.kills + 1):
            # whichever comes first: the k-th share of the time or of the jobs
            at = t0 + self.a.seconds * k / (self.a.kills + 1)
            n_at = self.a.jobs * k // (self.a.kills + 1)
            while time.time() < at and self.accepted < n_at:
                if self.stop.wait(0.2):
                    break
            try:
                pid = int(open(pidfile).read())
                os.kill(pid, signal.SIGKILL)
                self.count("kill9")
                time.sleep(1.0)
                for _ in range(600):  # the supervisor restarts it
                    try:
                        if int(open(pidfile).read()) != pid:
                            break
                    except (OSError, ValueError):
                        pass
                    time.sleep(0.1)
            except (OSError, ValueError) as e:
                self.err("kill -9: %r" % e)
        # rank 0's last life: once it is warm, an idle sample to compare the
        # end with
        base = self.accepted
        while not self.stop.is_set() and self.accepted < base + self.a.warm:
            time.sleep(0.2)
        self.quiet.set()
        time.sleep(self.a.quiet)  # idle keep-alive connections dropped meanwhile
        try:
            self.idle_start = proc_status(int(open(pidfile).read()))
        except (OSError, ValueError):
            pass
        self.accepted_at_start = self.accepted
        self.quiet.clear()

    def verify(self):
        """Every accepted, not deleted job final and right."""
        ok = {"succeeded": 0, "failed": 0, "cancelled": 0}
        lost, wrong, gone = [], [], 0
        with self.lock:
            items = list(self.jobs.items())
        for jid, info in items:
            if info["deleted"]:
                continue
            j = self.poll(jid, timeout=300)
            if j is None:
                st, _, _ = self.d.request("GET", "/v1/jobs/" + jid)
                if st == 404 and self.a.keep:
                    gone += 1  # retention (--keep) removed it
                    continue
                lost.append(jid)
                continue
            ok[j["status"]] = ok.get(j["status"], 0) + 1
            kind = info["kind"]
            if kind == "good" and j["status"] == "succeeded":
                st, data, _ = self.d.request("GET", "/v1/jobs/%s/solution?format=binary" % jid)
                try:
                    x = parse_solution("binary", data)
                    res = info["matrix"].residual(x)
                    if not (st == 200 and res <= 10 * 1e-8):
                        wrong.append((jid, "residual %g" % res))
                except ValueError as e:
                    wrong.append((jid, str(e)))
            elif kind == "good":
                wrong.append((jid, "a good job ended %s: %s" % (j["status"], j.get("error"))))
            elif kind == "bad_entry":
                e = j.get("error") or {}
                if j["status"] != "failed" or e.get("code") != "bad_input" or e.get("line") != 4:
                    wrong.append((jid, "bad entry: %s %s" % (j["status"], e)))
            elif kind == "bomb":
                e = j.get("error") or {}
                if j["status"] != "failed" or "more entries than the" not in e.get("message", ""):
                    wrong.append((jid, "bomb: %s %s" % (j["status"], e)))
            elif kind == "cancel" and j["status"] not in ("cancelled", "succeeded"):
                wrong.append((jid, "cancel: %s" % j["status"]))
        return ok, lost, wrong, gone


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--rank0-pid-file", required=True)
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--seconds", type=float, default=3600)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--bomb-every", type=int, default=300)
    ap.add_argument("--max-nnz", type=int, default=1000000, help="the daemon's --max-nnz")
    ap.add_argument("--warm", type=int, default=50)
    ap.add_argument("--quiet", type=float, default=4,
                    help="seconds idle before a sample: more than the daemon's --header-timeout, "
                    "so idle keep-alive connections are gone")
    ap.add_argument("--keep", action="store_true", help="the daemon runs with --keep: jobs may go")
    ap.add_argument("--json")
    ap.add_argument("matrices", nargs="+")
    a = ap.parse_args()
    s = Soak(a)
    t0 = time.time()
    threads = [threading.Thread(target=s.client, args=(i,), daemon=True) for i in range(a.clients)]
    killer = threading.Thread(target=s.killer, args=(a.rank0_pid_file, t0), daemon=True)
    for t in threads:
        t.start()
    killer.start()
    for t in threads:
        t.join()
    s.stop.set()
    killer.join()
    run_s = time.time() - t0
    # rank 0's last life: idle after warming up (the killer sampled it),
    # and idle at the end, after the verification
    pid = int(open(a.rank0_pid_file).read())
    before = s.idle_start
    ok, lost, wrong, gone = s.verify()
    s.d._drop()
    time.sleep(a.quiet)
    # an idle daemon's descriptors settle (a connection the server has not
    # yet closed, a job file of the last retention pass): up to ten samples
    # a second apart, the first back at the warm sample's count, else the
    # lowest; a descriptor that leaks stays in every one of them
    after = proc_status(pid)
    for _ in range(10):
        if not before or not after or after["fds"] <= before["fds"]:
            break
        time.sleep(1)
        again = proc_status(pid)
        if again and again["fds"] < after["fds"]:
            after = again
    lat = sorted(s.poll_lat)
    def p(q):
        return round(1e3 * lat[min(len(lat) - 1, int(len(lat) * q))], 2) if lat else None
    out = {"seconds": round(run_s, 1), "accepted": s.accepted, "actions": s.counts,
           "final": ok, "lost": lost, "wrong": wrong[:20], "wrong_count": len(wrong),
           "removed_by_retention": gone, "errors": s.errors[:20], "error_count": len(s.errors),
           "poll_ms": {"count": len(lat), "p50": p(0.5), "p99": p(0.99), "max": p(1.0)},
           "rank0_last_life": {"idle_after_warm": before, "idle_at_end": after,
                               "jobs_since": s.accepted - s.accepted_at_start}}
    print("soak: %d jobs accepted in %.0f s (%s); final %s; lost %d, wrong %d, client errors %d" % (
        s.accepted, run_s, ", ".join("%s %d" % kv for kv in sorted(s.counts.items())), ok, len(lost),
        len(wrong), len(s.errors)))
    print("GET /v1/jobs/ID: %d polls, p50 %s ms, p99 %s ms, max %s ms" % (
        len(lat), p(0.5), p(0.99), p(1.0)))
    print("rank 0 (last life), idle after %d warm jobs / idle at the end (%d jobs later): %s / %s" % (
        a.warm, s.accepted - s.accepted_at_start, before, after))
    for e in s.errors[:10]:
        print("  client error: " + e)
    for w in wrong[:10]:
        print("  wrong: %s %s" % w)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if lost or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
