#!/usr/bin/env python3
"""store_faults.py: the job store's failure paths, driven against a running
clsolved whose file system calls tests/fault/clsfault.c can fail ("io"
rules in $CLSFAULT_DIR/io). Run by tests/cli/test_daemon_store.sh, which
starts and restarts the daemon; see there for the whole story.

  store_faults.py life URL DATA FAULTDIR SMALL       each write of a job's life
  store_faults.py paths URL DATA FAULTDIR SMALL BIG  store unhealthy, pending
                                                     final state, cancel, DELETE
  store_faults.py snapshot URL OUT                   every job's status -> OUT
  store_faults.py compare URL OUT                    ... equal after a restart

Each check prints "ok: ..." or "FAIL: ..."; the exit status is the number of
failures (capped at 100). Standard library only.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_client import Client  # noqa: E402

FAILS = 0


def check(cond, what):
    global FAILS
    if cond:
        print("ok: " + what)
    else:
        FAILS += 1
        print("FAIL: " + what)
    return cond


def set_rule(fdir, *rules):
    path = os.path.join(fdir, "io")
    if rules:
        with open(path + ".new", "w") as f:
            f.write("\n".join(rules) + "\n")
        os.replace(path + ".new", path)
    elif os.path.exists(path):
        os.remove(path)


def fault_log(fdir):
    try:
        with open(os.path.join(fdir, "log")) as f:
            return f.read()
    except OSError:
        return ""


def disk_status(data, jid):
    try:
        with open(os.path.join(data, "jobs", jid, "job.json")) as f:
            return json.load(f)["status"]
    except (OSError, ValueError):
        return None


def get(cl, jid):
    st, _, body = cl.request("GET", "/v1/jobs/" + jid)
    return json.loads(body) if st == 200 else None


def wait_final(cl, jid, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        j = get(cl, jid)
        if j and j["status"] not in ("queued", "running"):
            return j
        time.sleep(0.05)
    return get(cl, jid)


def wait_until(pred, timeout):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return pred()


def readyz(cl):
    st, _, body = cl.request("GET", "/readyz")
    return st, json.loads(body)


def agree(cl, data, jid, what):
    """Memory (the API) and disk (job.json) say the same status."""
    j = get(cl, jid)
    mem = j["status"] if j else None
    disk = disk_status(data, jid)
    return check(mem == disk, "%s: memory says %s, disk says %s" % (what, mem, disk))


def cmd_life(url, data, fdir, small):
    """Fails the N-th call of each kind a job's life makes under DATA/jobs/
    (claim, solution files, final record), N = 1, 2, ... until a job meets
    no fault: every job ends in a final state, with memory and disk
    agreeing, and a failed one says why."""
    cl = Client(url)
    jobs_prefix = os.path.join(data, "jobs") + "/"
    for call, err in (("write", "EIO"), ("fsync", "EIO"), ("rename", "ENOSPC")):
        for n in range(1, 16):
            log_before = fault_log(fdir)
            set_rule(fdir, "%s %s %s %d 1" % (call, jobs_prefix, err, n))
            jid = cl.submit(small, params={"tol": "1e-10"})["id"]
            j = wait_final(cl, jid, 120)
            set_rule(fdir)
            met = len(fault_log(fdir)) > len(log_before)
            what = "%s #%d fails (%s)" % (call, n, "met" if met else "not met")
            if not check(j is not None and j["status"] in ("succeeded", "failed"),
                         what + ": job ends %s" % (j and j["status"])):
                continue
            if j["status"] == "failed":
                words = "Input/output error" if err == "EIO" else "No space left on device"
                check(j["error"]["code"] == "internal" and words in j["error"]["message"],
                      what + ": failed with the fault in its message: %s" % j["error"])
            else:
                sol = cl.request("GET", "/v1/jobs/%s/solution?format=json" % jid)
                check(sol[0] == 200 and json.loads(sol[2])["n"] > 0,
                      what + ": succeeded with its solution")
            check(j.get("store_error") is None, what + ": no store_error left: %s" % j.get("store_error"))
            agree(cl, data, jid, what)
            if not met:
                print("  %s: a job's life makes %d %s calls under jobs/" % (call, n - 1, call))
                break
    st, body = readyz(cl)
    check(st == 200, "ready again after the faults: %s" % body)
    return FAILS


def submit_running(cl, big, iteration=5):
    jid = cl.submit(big, params={"tol": "1e-12"})["id"]
    wait_until(lambda: (get(cl, jid) or {}).get("progress", {}).get("iteration", 0) >= iteration, 120)
    return jid


def cmd_paths(url, data, fdir, small, big):
    cl = Client(url)
    jobs = os.path.join(data, "jobs")

    # 1. every write fails: a job is accepted (incoming/ is fine) but cannot
    # be claimed: it stays queued with its store_error, the store is
    # unhealthy (/readyz 503, the metric 0); the fault goes: it runs
    set_rule(fdir, "write %s/ ENOSPC 1 0" % jobs)
    jid = cl.submit(small)["id"]
    j = wait_until(lambda: (get(cl, jid) or {}).get("store_error"), 10)
    check(j and get(cl, jid)["status"] == "queued", "claim cannot be written: the job stays queued")
    check(bool(j) and "No space left" in j, "claim cannot be written: store_error says why: %s" % j)
    st, body = readyz(cl)
    check(st == 503 and body["status"] == "store-unhealthy", "readyz while the store fails: %d %s" % (st, body))
    m = cl.request("GET", "/metrics")[2].decode()
    check("clsolve_store_healthy 0" in m, "metrics say the store is unhealthy")
    agree(cl, data, jid, "claim cannot be written")
    time.sleep(1.5)  # a retry or two, still failing
    check(get(cl, jid)["status"] == "queued", "still queued while the disk fails")
    set_rule(fdir)
    j = wait_final(cl, jid, 60)
    check(j and j["status"] == "succeeded", "the fault gone, the job runs: %s" % (j and j["status"]))
    check(wait_until(lambda: readyz(cl)[0] == 200, 10), "ready again")

    # 2. the final record cannot be written: the job stays running (phase
    # saving, store_error), the store unhealthy; written once the fault goes
    jid = submit_running(cl, big)
    set_rule(fdir, "write %s/%s/job.json EIO 1 0" % (jobs, jid))
    j = wait_until(lambda: (get(cl, jid) or {}).get("progress", {}).get("phase") == "saving" and get(cl, jid), 120)
    check(bool(j), "final record cannot be written: phase saving")
    if j:
        check(j["status"] == "running" and j["store_error"], "... shown running with store_error: %s %s" % (j["status"], j["store_error"]))
        check(disk_status(data, jid) == "running", "... the disk says running")
        check(readyz(cl)[0] == 503, "... readyz 503")
    set_rule(fdir)
    j = wait_until(lambda: (get(cl, jid) or {}).get("status") == "succeeded" and get(cl, jid), 10)
    check(bool(j) and j["store_error"] is None, "the retry writes the final record: %s" % (j and j["status"]))
    agree(cl, data, jid, "final record written late")
    check(wait_until(lambda: readyz(cl)[0] == 200, 10), "ready again after the retry")

    # 2b. the disk fills as a job writes its solution (ENOSPC on every write
    # of its solution files): the solve is kept, the job waits with a note
    # and /readyz says why; space back, it succeeds with its solution
    # (issue 27, item 4: it used to fail for good)
    jid = submit_running(cl, big, 1)
    set_rule(fdir, "write %s/%s/solution ENOSPC 1 0" % (jobs, jid))
    j = wait_until(lambda: "disk space" in ((get(cl, jid) or {}).get("progress", {}).get("note") or "")
                   and get(cl, jid), 120)
    check(bool(j) and j["status"] == "running", "disk full at the solution: the job waits: %s"
          % repr(j and (j["status"], j["progress"]["note"])))
    st, body = readyz(cl)
    check(st == 503 and "disk is full" in json.dumps(body), "readyz while a job waits for disk: %d %s" % (st, body))
    time.sleep(1.5)  # a retry or two, still full
    check(get(cl, jid)["status"] == "running", "still waiting while the disk is full")
    set_rule(fdir)
    j = wait_final(cl, jid, 60)
    check(j and j["status"] == "succeeded", "space back: the job succeeds: %s" % repr(j and (j["status"], j.get("error"))))
    sol = cl.request("GET", "/v1/jobs/%s/solution?format=json" % jid)
    check(sol[0] == 200 and json.loads(sol[2])["n"] > 0, "... with its solution")
    check(wait_until(lambda: readyz(cl)[0] == 200, 10), "ready again once written")

    # 3. cancelling a queued job whose record cannot be written: 500, the job
    # still queued (memory and disk); then it can be cancelled
    run = submit_running(cl, big, 1)
    q = cl.submit(small)["id"]
    set_rule(fdir, "write %s/%s/job.json EIO 1 0" % (jobs, q))
    st, _, body = cl.request("POST", "/v1/jobs/" + q + "/cancel")
    check(st == 500 and b"still queued" in body, "cancel not written: %d %s" % (st, body[:200]))
    check(get(cl, q)["status"] == "queued", "... the job is still queued")
    agree(cl, data, q, "cancel not written")
    set_rule(fdir)
    st, _, body = cl.request("POST", "/v1/jobs/" + q + "/cancel")
    check(st == 202 and json.loads(body)["status"] == "cancelled", "cancel written: %d" % st)
    agree(cl, data, q, "cancel written")
    cl.request("POST", "/v1/jobs/" + run + "/cancel")  # stop the long job
    wait_final(cl, run, 60)

    # 4. DELETE of a finished job: the record cannot be removed: 500, the job
    # kept; a file cannot be removed: 500 that says the job is deleted, the
    # rest goes at the next start
    a = cl.submit(small)["id"]
    wait_final(cl, a)
    set_rule(fdir, "unlink %s/%s/job.json EIO 1 0" % (jobs, a))
    st, _, body = cl.request("DELETE", "/v1/jobs/" + a)
    set_rule(fdir)
    check(st == 500 and b"is kept" in body, "record not removed: %d %s" % (st, body[:200]))
    check(get(cl, a) is not None and disk_status(data, a) == "succeeded", "... the job is kept")
    set_rule(fdir, "unlink %s/%s/solution.bin EIO 1 0" % (jobs, a))
    st, _, body = cl.request("DELETE", "/v1/jobs/" + a)
    set_rule(fdir)
    check(st == 500 and b"is deleted, but some of its files" in body, "file not removed: %d %s" % (st, body[:200]))
    check(get(cl, a) is None and disk_status(data, a) is None, "... the job is gone (memory and record)")
    check(os.path.isdir(os.path.join(jobs, a)), "... its directory is left for the next start")
    print("LEFTOVER " + a)
    return FAILS


def cmd_snapshot(url, out):
    cl = Client(url)
    jobs = cl.json("GET", "/v1/jobs?limit=1000")["jobs"]
    with open(out, "w") as f:
        json.dump({j["id"]: j["status"] for j in jobs}, f)
    print("ok: %d jobs recorded" % len(jobs))
    return 0


def cmd_compare(url, out):
    cl = Client(url)
    before = json.load(open(out))
    after = {j["id"]: j["status"] for j in cl.json("GET", "/v1/jobs?limit=1000")["jobs"]}
    lost = [k for k in before if k not in after]
    check(not lost, "no job lost across the restart (%d before): %s" % (len(before), lost))
    changed = {k: (before[k], after.get(k)) for k in before if k in after and before[k] != after[k]}
    check(not changed, "every job's status the same after the restart: %s" % changed)
    extra = [k for k in after if k not in before]
    check(not extra, "no job appeared: %s" % extra)
    return FAILS


def main():
    cmd = sys.argv[1]
    a = sys.argv[2:]
    if cmd == "life":
        rc = cmd_life(*a)
    elif cmd == "paths":
        rc = cmd_paths(*a)
    elif cmd == "snapshot":
        rc = cmd_snapshot(*a)
    elif cmd == "compare":
        rc = cmd_compare(*a)
    else:
        raise SystemExit("unknown command " + cmd)
    return min(rc, 100)


if __name__ == "__main__":
    sys.exit(main())
