#!/usr/bin/env python3
"""poll.py: submit a Matrix Market system to a clsolved daemon, wait for it
with long polls and download the solution, with Python's standard library only.

  python3 poll.py A.mtx x.mtx [--server http://127.0.0.1:8080] [--tol 1e-10]
                  [--precond none|jacobi|chebyshev|ic0|amg|auto] [--precond-degree N]
                  [--precond-sweeps N] [--token-file F]

The preconditioner's names are the daemon's (PETSc's aliases too: icc,
gamg, cheby, ...); the job's record says whether its set-up was built for
it or reused from an earlier job on the same matrix.

The token may also come from $CLSOLVE_TOKEN, the server from
$CLSOLVE_SERVER. Exit status: 0 converged, 3 bad input, 4 not converged,
5 breakdown, 1 anything else (as `clsolve solve`).
"""
import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request


def call(server, token, method, path, body=None, headers=None):
    req = urllib.request.Request(server.rstrip("/") + path, data=body, method=method)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("matrix")
    ap.add_argument("output")
    ap.add_argument("--server", default=os.environ.get("CLSOLVE_SERVER", "http://127.0.0.1:8080"))
    ap.add_argument("--tol", default="1e-8")
    ap.add_argument("--precond", default="none")
    ap.add_argument("--precond-degree", help="chebyshev: polynomial degree")
    ap.add_argument("--precond-sweeps", help="ic0: Jacobi sweeps per triangular solve (0: exact)")
    ap.add_argument("--token-file")
    a = ap.parse_args()
    token = os.environ.get("CLSOLVE_TOKEN")
    if a.token_file:
        token = open(a.token_file).read().strip()

    # 1. submit: the file is the request body (a .mtx.gz works as it is)
    params = {"tol": a.tol, "precond": a.precond}
    if a.precond_degree:
        params["precond_degree"] = a.precond_degree
    if a.precond_sweeps:
        params["precond_sweeps"] = a.precond_sweeps
    query = urllib.parse.urlencode(params)
    with open(a.matrix, "rb") as f:
        status, body = call(a.server, token, "POST", "/v1/jobs?" + query, f.read(),
                            {"Content-Type": "text/plain"})
    if status != 202:
        problem = json.loads(body)
        print("rejected: %s" % problem["detail"], file=sys.stderr)
        return 3 if status == 400 else 1
    job = json.loads(body)
    print("job", job["id"])

    # 2. wait until the job ends: each GET is a long poll (?wait=S), answered
    # as soon as the job ends or after S seconds with its progress (refreshed
    # every iteration); S grows to 2 s, so short phases are still printed
    wait = 0.1
    while job["status"] in ("queued", "running"):
        status, body = call(a.server, token, "GET", "/v1/jobs/%s?wait=%g" % (job["id"], wait))
        wait = min(wait * 1.5, 2.0)
        if status != 200:
            print("GET failed: HTTP %d" % status, file=sys.stderr)
            return 1
        job = json.loads(body)
        p = job["progress"]
        print("  %-8s iteration %6d  residual %s" % (job["status"], p["iteration"], p["residual"]),
              file=sys.stderr)

    # 3. the outcome, and x when there is one
    if job["status"] != "succeeded":
        err = job["error"] or {}
        print("%s: %s" % (job["status"], err.get("message")), file=sys.stderr)
        code = err.get("exit_code", 1)
    else:
        r = job["result"]
        print("converged after %d iterations, relative residual %.3e"
              % (r["iterations"], r["relative_residual"]))
        pc = r.get("preconditioner") or {}
        if pc.get("type") not in (None, "none", "jacobi"):
            print("preconditioner %s: set-up %.3f s, %s" % (
                pc["type"], pc["setup_s"], "reused" if pc.get("reused") else "built"))
        code = 0
    if job["result"] and job["result"].get("solution_available"):
        status, body = call(a.server, token, "GET", "/v1/jobs/%s/solution" % job["id"])
        if status == 200:
            with open(a.output, "wb") as f:
                f.write(body)
            print("solution written to", a.output)
    return code if code in (0, 3, 4, 5) else 1


if __name__ == "__main__":
    sys.exit(main())
