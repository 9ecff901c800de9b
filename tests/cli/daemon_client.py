#!/usr/bin/env python3
"""daemon_client.py: a client of clsolved's HTTP API written with Python's
standard library only (urllib, json, threading), used by the daemon tests
and usable as an example.

  daemon_client.py submit URL A.mtx [--rhs b.mtx] [--x0 x0.mtx] [--param k=v ...]
                                  [--gzip] [--multipart]       -> prints the job id
  daemon_client.py wait URL ID [--timeout S]                   -> prints the final job JSON
  daemon_client.py fetch URL ID OUT [--format mtx|json|binary]
  daemon_client.py load URL --jobs N --clients C [--param k=v] A.mtx [B.mtx ...]
        C threads submit N jobs in all (round robin over the files), poll each
        to its end and download its solution; prints a JSON summary and exits
        1 unless every job succeeded and is listed by GET /v1/jobs.
  daemon_client.py running URL ID [--iteration K] [--timeout S]
        waits until the job runs and has reached iteration K; exits 1 if it
        finished (or timed out) first
  daemon_client.py request URL METHOD PATH [--body FILE]       -> prints "STATUS" and the body

The token comes from --token or $CLSOLVE_TOKEN.
"""
import argparse
import gzip
import http.client
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__("HTTP %d: %s" % (status, body[:300]))
        self.status = status
        self.body = body


class Client:
    def __init__(self, url, token=None, timeout=60):
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("CLSOLVE_TOKEN")
        self.timeout = max(timeout, float(os.environ.get("DCLIENT_TIMEOUT", "0")))

    def request(self, method, path, body=None, headers=None):
        """Returns (status, headers, body bytes); never raises for HTTP errors."""
        req = urllib.request.Request(self.url + path, data=body, method=method)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def json(self, method, path, body=None, headers=None, ok=(200,)):
        st, _, data = self.request(method, path, body, headers)
        if st not in ok:
            raise ApiError(st, data.decode("utf-8", "replace"))
        return json.loads(data)

    def submit(self, matrix, rhs=None, x0=None, params=None, use_gzip=False, multipart=False):
        query = "?" + urllib.parse.urlencode(params) if params else ""
        if rhs or x0 or multipart:
            boundary = "----clsolve" + uuid.uuid4().hex
            parts = []
            for name, path in (("matrix", matrix), ("rhs", rhs), ("x0", x0)):
                if not path:
                    continue
                with open(path, "rb") as f:
                    data = f.read()
                if use_gzip:
                    data = gzip.compress(data)
                parts.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"; "
                              "filename=\"%s\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                              % (boundary, name, os.path.basename(path))).encode() + data + b"\r\n")
            body = b"".join(parts) + ("--%s--\r\n" % boundary).encode()
            headers = {"Content-Type": "multipart/form-data; boundary=" + boundary}
        else:
            with open(matrix, "rb") as f:
                body = f.read()
            headers = {"Content-Type": "text/plain"}
            if use_gzip:
                body = gzip.compress(body)
                headers["Content-Encoding"] = "gzip"
        st, hdrs, data = self.request("POST", "/v1/jobs" + query, body, headers)
        if st != 202:
            raise ApiError(st, data.decode("utf-8", "replace"))
        job = json.loads(data)
        loc = hdrs.get("Location")
        if loc != "/v1/jobs/" + job["id"]:
            raise ApiError(st, "Location header %r does not name job %s" % (loc, job["id"]))
        return job

    def wait(self, job_id, timeout=600, interval=0.05):
        """Long polls (GET /v1/jobs/ID?wait=S) until the job ends. A wait
        the server cut (a restart) is asked again; a refused one raises."""
        deadline = time.time() + timeout
        while True:
            s = max(0.05, min(10.0, self.timeout / 2, deadline - time.time()))
            try:
                st, hdrs, data = self.request("GET", "/v1/jobs/%s?wait=%.3g" % (job_id, s))
            except (http.client.RemoteDisconnected, ConnectionResetError):
                st, data = 503, b""
            if st == 200:
                job = json.loads(data)
                if job["status"] in ("succeeded", "failed", "cancelled"):
                    return job
            elif st != 503:
                raise ApiError(st, data.decode("utf-8", "replace"))
            if time.time() > deadline:
                raise TimeoutError("job %s still not finished after %s s" % (job_id, timeout))
            if st == 503:
                time.sleep(interval)
                interval = min(interval * 1.5, 0.5)

    def fetch(self, job_id, out, fmt="mtx"):
        st, _, data = self.request("GET", "/v1/jobs/%s/solution?format=%s" % (job_id, fmt))
        if st != 200:
            raise ApiError(st, data.decode("utf-8", "replace"))
        with open(out, "wb") as f:
            f.write(data)
        return len(data)


def parse_params(items):
    params = {}
    for it in items or []:
        k, _, v = it.partition("=")
        params[k] = v
    return params


def cmd_load(cl, args):
    params = parse_params(args.param)
    results = {}
    lock = threading.Lock()
    counter = iter(range(args.jobs))
    errors = []

    def worker(wid):
        c = Client(cl.url, cl.token)
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            path = args.files[i % len(args.files)]
            try:
                t0 = time.time()
                for attempt in range(200):
                    try:
                        job = c.submit(path, params=params)
                        break
                    except ApiError as e:
                        if e.status != 503:
                            raise
                        time.sleep(0.1)
                final = c.wait(job["id"], timeout=args.timeout)
                out = os.path.join(args.outdir, "x_%03d.mtx" % i) if args.outdir else None
                if out and final["status"] == "succeeded":
                    c.fetch(job["id"], out)
                with lock:
                    results[i] = {"id": job["id"], "file": path, "status": final["status"],
                                  "iterations": (final.get("result") or {}).get("iterations"),
                                  "seconds": round(time.time() - t0, 3), "solution": out}
            except Exception as e:  # noqa: BLE001 - every failure is reported
                with lock:
                    errors.append("job %d (%s): %s" % (i, path, e))

    t0 = time.time()
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # every job is accounted for in the daemon's own list
    listed = set()
    after = None
    while True:
        q = "/v1/jobs?limit=100" + ("&after=" + after if after else "")
        page = cl.json("GET", q)
        listed.update(j["id"] for j in page["jobs"])
        if not page["next"]:
            break
        after = page["jobs"][-1]["id"]
    missing = [r["id"] for r in results.values() if r["id"] not in listed]
    not_ok = [r for r in results.values() if r["status"] != "succeeded"]
    summary = {"jobs": args.jobs, "clients": args.clients, "completed": len(results),
               "succeeded": len(results) - len(not_ok), "errors": errors,
               "not_succeeded": not_ok, "missing_from_list": missing,
               "ids_unique": len({r["id"] for r in results.values()}) == len(results),
               "wall_s": round(time.time() - t0, 2), "results": results}
    print(json.dumps(summary, indent=1))
    good = (not errors and not not_ok and not missing and len(results) == args.jobs
            and summary["ids_unique"])
    return 0 if good else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd")
    ap.add_argument("url")
    ap.add_argument("rest", nargs="*")
    ap.add_argument("--rhs")
    ap.add_argument("--x0")
    ap.add_argument("--param", action="append")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--multipart", action="store_true")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--format", default="mtx")
    ap.add_argument("--token")
    ap.add_argument("--body")
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--outdir")
    ap.add_argument("--iteration", type=int, default=1)
    args = ap.parse_intermixed_args()
    # a slow daemon (under valgrind: tests/valgrind/daemon-e2e.sh) gets
    # longer waits without touching the tests
    slow = float(os.environ.get("DCLIENT_TIMEOUT", "0"))
    args.timeout = max(args.timeout, slow)
    cl = Client(args.url, args.token)
    try:
        if args.cmd == "submit":
            job = cl.submit(args.rest[0], args.rhs, args.x0, parse_params(args.param),
                            args.gzip, args.multipart)
            print(job["id"])
        elif args.cmd == "wait":
            print(json.dumps(cl.wait(args.rest[0], args.timeout), indent=1))
        elif args.cmd == "fetch":
            cl.fetch(args.rest[0], args.rest[1], args.format)
        elif args.cmd == "load":
            args.files = args.rest
            return cmd_load(cl, args)
        elif args.cmd == "running":
            deadline = time.time() + args.timeout
            while time.time() < deadline:
                job = cl.json("GET", "/v1/jobs/" + args.rest[0])
                it = job["progress"]["iteration"]
                if job["status"] == "running" and it >= args.iteration:
                    print("running", it)
                    return 0
                if job["status"] not in ("queued", "running"):
                    print(job["status"], it)
                    return 1
                time.sleep(0.02)
            return 1
        elif args.cmd == "request":
            body = open(args.body, "rb").read() if args.body else None
            st, _, data = cl.request(args.rest[0], args.rest[1], body)
            print(st)
            sys.stdout.write(data.decode("utf-8", "replace"))
        else:
            ap.error("unknown command " + args.cmd)
    except ApiError as e:
        print("daemon_client: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
