#!/usr/bin/env python3
"""dashboard_check.py: the dashboard in headless Chromium (cdp.py), against
a daemon test_daemon_dashboard.sh started with these jobs:

  RUN   running (a long cg job)     DONE  succeeded (LFAT5.mtx)
  FAIL  failed (breakdown)          HIST  succeeded, a few thousand iterations

  dashboard_check.py CHROMIUM URL OUTDIR RUN DONE FAIL HIST

Checks, writing screenshots to OUTDIR (dashboard-1400.png,
dashboard-800-dpr2.png, dashboard-huge.png) for a person to look at:
  * every job is a row with a link to /#/jobs/ID and its input's name;
  * /#/jobs/ID selects that job; the phase bar shows solving for RUN
    (with elapsed time, ETA once known) and the final state for the others;
  * the plot of HIST draws all its points; a 300 000-iteration history put
    into the page's state draws too (no stack overflow), decimated to at
    most two points per pixel column;
  * at 800 px and a pixel density of 2 the canvas has twice its CSS size
    in pixels and nothing makes the page wider than the window;
  * download of DONE's solution fetches the file (its size against the
    API's) under the input's name; cancel stops RUN; delete (two clicks)
    removes FAIL;
  * no uncaught exception or console error on the page.
"""
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402

chromium, url, out, run, done, fail, hist = sys.argv[1:8]
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)
    return cond


def api(path, method="GET"):
    req = urllib.request.Request(url + path, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def select(p, jid):
    p.eval("location.hash = '#/jobs/%s'" % jid)
    p.wait("document.getElementById('sel-link').textContent === '%s' && "
           "window.clsolve.state.job && window.clsolve.state.job.id === '%s'" % (jid, jid))


with Browser(chromium, os.path.join(out, "chromium-profile"), os.path.join(out, "chromium.log")) as b:
    p = b.page()
    p.viewport(1400, 1000, 1)
    p.goto(url + "/")
    p.wait("document.querySelectorAll('#jobs tbody tr').length >= 4")
    rows = p.eval("""[...document.querySelectorAll('#jobs tbody tr')].map(tr => ({
        id: tr.dataset.jobId, status: tr.dataset.status,
        href: tr.querySelector('a').getAttribute('href'),
        input: tr.querySelector('td.input').textContent}))""")
    by = {r["id"]: r for r in rows}
    for jid in (run, done, fail, hist):
        check(jid in by and by[jid]["href"] == "#/jobs/" + jid, "row and link of %s: %s" % (jid, by.get(jid)))
    check(by.get(done, {}).get("input") == "LFAT5.mtx", "DONE's input name: %s" % by.get(done))
    check(by.get(run, {}).get("status") == "running", "RUN is not running: %s" % by.get(run))

    # a finished job's time bar: a segment per phase it spent time in, the
    # seconds in all those of its record (receive + queue + total)
    bar = p.eval("""(() => { const b = document.querySelector("#jobs tbody tr[data-job-id='%s'] .tbar");
        return b && {segs: [...b.children].map(s => s.className), secs: b.dataset.seconds,
                     widths: [...b.children].map(s => parseFloat(s.style.width))}; })()""" % hist)
    tj = json.loads(api("/v1/jobs/" + hist)[1])["timings"]
    want = tj["receive_s"] + tj["queue_s"] + tj["total_s"]
    check(bar is not None and "seg seg-solve" in bar["segs"] and "seg seg-parse" in bar["segs"]
          and abs(float(bar["secs"]) - want) <= 1e-3 + 1e-3 * want
          and abs(sum(bar["widths"]) - 100) < 0.1,
          "HIST's time bar: %s against timings %s" % (bar, tj))
    print("time bar: %s, %s s" % (" ".join(c.split("-")[-1] for c in (bar or {}).get("segs", [])),
                                  (bar or {}).get("secs")))
    check(p.eval("""document.querySelector("#jobs tbody tr[data-job-id='%s'] .tbar").children.length === 0""" % run),
          "a running job has no time bar yet")

    # the running job: the phase bar, the elapsed time, the ETA
    select(p, run)
    p.wait("document.getElementById('phases').dataset.phase === 'solving'", 60)
    p.wait("/about .* left/.test(document.getElementById('phase-line').textContent)", 60)
    line = p.eval("document.getElementById('phase-line').textContent")
    check(line.startswith("solving for ") and "iteration" in line, "phase line: %r" % line)
    cur = p.eval("document.querySelector('#phases li.current').textContent")
    check(cur == "solving", "current phase: %r" % cur)
    check(p.eval("!document.getElementById('act-cancel').hidden && document.getElementById('act-delete').hidden"),
          "a running job offers cancel, not delete")
    p.screenshot(os.path.join(out, "dashboard-1400.png"))

    # a finished job with a real history: every point drawn
    select(p, hist)
    p.wait("document.getElementById('plot').dataset.drawn === '1' && "
           "document.getElementById('plot').dataset.job === '%s' && window.clsolve.state.histDone" % hist, 60)
    st, body = api("/v1/jobs/%s/residuals" % hist)
    n = json.loads(body)["count"]
    c = p.eval("Object.assign({}, document.getElementById('plot').dataset)")
    check(int(c["points"]) == n, "HIST plot: %s points, the job has %d" % (c["points"], n))
    check(p.eval("document.querySelector('#phases li.current').textContent") == "succeeded", "HIST's last phase")

    # 300 000 iterations: the same drawing, decimated, without a stack overflow
    p.eval("""(() => { const s = window.clsolve.state, h = new Array(300000);
        for (let i = 0; i < h.length; i++) h[i] = Math.pow(10, -12 * i / h.length) * (1.5 + Math.sin(i / 50));
        s.hist = h; s.first = 0; s.histDone = true; draw(); })()""")
    c = p.eval("Object.assign({width: document.getElementById('plot').clientWidth}, document.getElementById('plot').dataset)")
    check(c["drawn"] == "1" and int(c["points"]) == 300000, "300k history not drawn: %s" % c)
    check(int(c["drawnPoints"]) <= 2 * int(c["width"]) and int(c["drawnPoints"]) >= 100,
          "300k history decimated to %s points for %s px" % (c["drawnPoints"], c["width"]))
    p.screenshot(os.path.join(out, "dashboard-huge.png"))
    print("300000 residuals drawn as %s points on %s px" % (c["drawnPoints"], c["width"]))

    # 800 px, pixel density 2
    p.viewport(800, 1000, 2)
    select(p, done)
    p.wait("document.getElementById('plot').dataset.job === '%s' && document.getElementById('plot').dataset.drawn === '1'" % done)
    g = p.eval("""(() => { const c = document.getElementById('plot');
        return {w: c.width, cw: c.clientWidth, h: c.height, ch: c.clientHeight,
                sw: document.documentElement.scrollWidth, vw: window.innerWidth, dpr: window.devicePixelRatio}; })()""")
    check(g["dpr"] == 2 and g["w"] == 2 * g["cw"] and g["h"] == 2 * g["ch"], "HiDPI canvas: %s" % g)
    check(g["sw"] <= g["vw"], "the page is wider than an 800 px window: %s" % g)
    p.screenshot(os.path.join(out, "dashboard-800-dpr2.png"))

    # download DONE's solution, named after its input
    p.wait("!document.getElementById('downloads').hidden")
    p.eval("document.querySelector('#downloads button[data-format=mtx]').click()")
    p.wait("document.querySelector('#downloads button[data-format=mtx]').dataset.downloaded")
    d = p.eval("Object.assign({}, document.querySelector('#downloads button[data-format=mtx]').dataset)")
    st, body = api("/v1/jobs/%s/solution" % done)
    check(int(d["downloaded"]) == len(body), "downloaded %s bytes, the solution has %d" % (d["downloaded"], len(body)))
    check(d.get("filename") == "LFAT5.x.mtx", "download name: %s" % d.get("filename"))

    # cancel RUN
    select(p, run)
    p.eval("document.getElementById('act-cancel').click()")
    t0 = time.time()
    while time.time() - t0 < 60:
        st, body = api("/v1/jobs/" + run)
        if json.loads(body)["status"] not in ("queued", "running"):
            break
        time.sleep(0.2)
    check(json.loads(body)["status"] == "cancelled", "cancel from the page: %s" % json.loads(body)["status"])
    p.wait("document.querySelector('#phases li.current') && "
           "document.querySelector('#phases li.current').textContent === 'cancelled'", 30)

    # delete FAIL: the first click arms, the second deletes
    select(p, fail)
    p.wait("!document.getElementById('act-delete').hidden")
    p.eval("document.getElementById('act-delete').click()")
    check(api("/v1/jobs/" + fail)[0] == 200, "one click deleted the job")
    check(p.eval("document.getElementById('act-delete').textContent") == "Really delete?", "delete is not armed")
    p.eval("document.getElementById('act-delete').click()")
    p.wait("!document.querySelector('#jobs tbody tr[data-job-id=\"%s\"]')" % fail, 30)
    check(api("/v1/jobs/" + fail)[0] == 404, "the job was not deleted")

    for e in p.errors:
        check(False, "page error: %s" % e)

print("dashboard: %d problems" % len(fails))
sys.exit(1 if fails else 0)
