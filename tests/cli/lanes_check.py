#!/usr/bin/env python3
"""lanes_check.py URL OUT_JSON FILE... : submits every FILE twice, all at
once from one thread per job, waits for every job, and writes a JSON list
of {file, id, status, placement, result, solution (hex of solution.bin)}.
Exits 1 if a submission fails; the caller judges the outcome."""
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_client import Client  # noqa: E402


def main():
    url, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    cl = Client(url, timeout=120)
    jobs, lock, errors = [], threading.Lock(), []

    def one(path):
        try:
            jid = cl.submit(path, params={"tol": "1e-10", "precond": "jacobi"})["id"]
            j = cl.wait(jid, timeout=600)
            st, _, body = cl.request("GET", "/v1/jobs/%s/solution?format=binary" % jid)
            with lock:
                jobs.append({"file": os.path.basename(path), "id": jid, "status": j["status"],
                             "placement": j.get("placement"), "result": j.get("result"),
                             "error": j.get("error"),
                             "solution": body.hex() if st == 200 else None})
        except Exception as e:  # reported, and the caller fails the test
            with lock:
                errors.append("%s: %s" % (path, e))

    threads = [threading.Thread(target=one, args=(f,)) for f in files + files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(out, "w") as f:
        json.dump({"jobs": jobs, "errors": errors}, f)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
