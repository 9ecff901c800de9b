#!/usr/bin/env python3
"""dashboard_kinds_check.py: what the dashboard shows for each job kind, in
headless Chromium with software WebGL (cdp.py), against a daemon
test_daemon_dashboard_kinds.sh started with one succeeded job per kind:

  dashboard_kinds_check.py CHROMIUM URL OUTDIR curvature=ID springs=ID \\
                           nbody=ID deform=ID cg=ID

Each job's page (/#/jobs/ID, loaded afresh) at 800, 1280 and 1600 px wide
and 900 high, a screenshot OUTDIR/dashboard-KIND-WIDTH.png each, and these
checks, each able to fail:
  * kind: a physics job's panel has no "converged" or "iterations" (CG
    wording) and no residual plot; a cg job has its plot drawn and its
    converged / iterations rows;
  * numbers: every cell of the result table (td[data-key]) holds the API
    result's value at its key (data-value exactly, the text to 6 digits),
    and the fields that matter for the kind are there (curvature: H and K
    ranges, chi; springs: steps, energy; nbody: energy drift; deform: sizes);
  * viewer: for the jobs with a mesh or bodies, the canvas is drawn, for
    this job, its top within the first 900 px; none for cg and deform;
  * colour legend (curvature): its range equals the min and max of the
    value it colours by over the interior vertices of the downloaded PLY
    (and the result's H_range), not the file's clipped colour range; the
    labels at its ends say so;
  * files: the API's list and the page's list are in natural order (the
    springs frames by step: 0, 50, 100, 150, 200);
  * fit: document.documentElement.scrollWidth <= innerWidth; every visible
    table fits its container (scrollWidth <= clientWidth), no cell clipped;
  * time: a bar element (#timing-bar) with one segment per phase, widths
    summing to 100 %, its seconds the API's timings, a legend entry
    "PHASE SECONDS s" per segment, and no raw "parse_s"/"total_s" dump;
  * the legend's other scale (+-98th percentile of |value|) keeps the real
    range at its ends (dashboard-curvature-robust-1280.png);
  * selection: switching jobs in the same page, the viewer drops the old
    job at once and shows the new one; a cg job hides it; #view=ID
    selects ID;
  * no uncaught exception or console error on the page.
"""
import json
import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402

chromium, url, out = sys.argv[1:4]
ids = dict(a.split("=", 1) for a in sys.argv[4:])
WIDTHS = (800, 1280, 1600)
HEIGHT = 900
MESH_KINDS = ("curvature", "springs", "nbody")
# fields that must be in the result table, per kind
MUST = {"curvature": ["H_range", "K_range", "topology.euler_characteristic", "vertices", "faces"],
        "springs": ["steps", "particles", "energy.start.total", "energy.end.total"],
        "nbody": ["bodies", "steps", "energy_drift", "energy_max_drift"],
        "deform": ["vertices", "modes", "frames"],
        "cg": ["converged", "iterations", "relative_residual"]}
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)
    return cond


def api(path):
    with urllib.request.urlopen(url + path, timeout=60) as r:
        return r.read()


def at(obj, path):
    for k in path.split("."):
        if obj is None:
            return None
        obj = len(obj) if k == "length" and isinstance(obj, list) else obj.get(k) if isinstance(obj, dict) else None
    return obj


def natural_key(name):
    return [(0, int(t), len(t)) if t.isdigit() else (1, t, 0) for t in re.findall(r"\d+|\D+", name)]


NUM = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def close(a, b, rel=2e-6):
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-300


def ply_values(text, prop):
    """(values of prop, boundary flags) per vertex of an ASCII PLY."""
    lines = text.split("\n")
    h = lines.index("end_header")
    props, n, in_vertex = [], 0, False
    for ln in lines[:h]:
        t = ln.split()
        if t and t[0] == "element":
            in_vertex = t[1] == "vertex"
            if in_vertex:
                n = int(t[2])
        elif t and t[0] == "property" and in_vertex:
            props.append(t[-1])
    iv, ib = props.index(prop), props.index("boundary") if "boundary" in props else None
    vals, bnd = [], []
    for k in range(n):
        t = lines[h + 1 + k].split()
        vals.append(float(t[iv]))
        bnd.append(ib is not None and float(t[ib]) != 0)
    return vals, bnd


jobs = {k: json.loads(api("/v1/jobs/" + v)) for k, v in ids.items()}
files = {k: json.loads(api("/v1/jobs/%s/files" % v))["files"] for k, v in ids.items()}

# the API's list: natural order; the springs frames by step
for kind, fl in files.items():
    names = [f["name"] for f in fl]
    check(names == sorted(names, key=natural_key), "%s: the API lists files out of order: %s" % (kind, names))
spr = [f["name"] for f in files["springs"] if f["name"].startswith("springs_")]
check(spr == ["springs_%06d.ply" % s for s in (0, 50, 100, 150, 200)], "springs frames from the API: %s" % spr)

# the curvature legend's truth: the PLY's values over the interior
cj = jobs["curvature"]
by = (cj["result"].get("color") or {}).get("by", "H")
prop = {"H": "mean_curvature", "K": "gaussian_curvature"}.get(by, by)
vals, bnd = ply_values(api("/v1/jobs/%s/files/curvature.ply" % ids["curvature"]).decode(), prop)
interior = [v for v, b in zip(vals, bnd) if not b]
data_min, data_max = min(interior), max(interior)
print("curvature %s over the interior of curvature.ply: [%r, %r] (the file's colours: +-%s)" %
      (by, data_min, data_max, cj["result"].get("color", {}).get("range")))
if by == "H":
    hr = cj["result"]["H_range"]
    check(close(hr[0], data_min, 1e-6) and close(hr[1], data_max, 1e-6),
          "H_range %s against the PLY's [%r, %r]" % (hr, data_min, data_max))

PAGE = """(() => {
  const q = s => document.querySelector(s), vis = e => !!e && !e.closest('[hidden]') && e.getClientRects().length > 0;
  const panel = q('#detail-panel'), cv = q('#viewer'), lg = q('#viewer-legend'), plot = q('#plot');
  const r = {sw: document.documentElement.scrollWidth, iw: innerWidth, selected: q('#sel-link').textContent,
             panelText: panel.innerText, pageText: document.body.innerText,
             plot: vis(plot) ? Object.assign({}, plot.dataset) : null,
             viewer: vis(cv) ? Object.assign({top: cv.getBoundingClientRect().top,
                                              height: cv.getBoundingClientRect().height}, cv.dataset) : null,
             legend: vis(lg) ? Object.assign({lo_text: lg.querySelector('.lo').textContent,
                                             hi_text: lg.querySelector('.hi').textContent}, lg.dataset) : null,
             cells: [...document.querySelectorAll('#result td[data-key]')].map(td => ({
                 key: td.dataset.key, value: td.dataset.value, text: td.textContent})),
             files: [...document.querySelectorAll('#files li')].map(li => li.dataset.name),
             filesShown: vis(q('#files-box')),
             tables: [], clipped: []};
  for (const t of document.querySelectorAll('table')) {
    if (!vis(t)) continue;
    const c = t.parentElement;
    r.tables.push({id: t.id, sw: c.scrollWidth, cw: c.clientWidth,
                   right: t.getBoundingClientRect().right, cright: c.getBoundingClientRect().right});
    for (const cell of t.querySelectorAll('th, td'))
      if (vis(cell) && cell.scrollWidth > cell.clientWidth + 1)
        r.clipped.push(t.id + ': ' + cell.textContent.slice(0, 40) + ' (' + cell.scrollWidth + ' > ' + cell.clientWidth + ')');
  }
  const bar = q('#timing-bar');
  r.bar = vis(bar) ? {tag: bar.tagName, seconds: bar.dataset.seconds, w: bar.getBoundingClientRect().width,
      segs: [...bar.children].map(s => ({phase: s.dataset.phase, seconds: s.dataset.seconds,
                                         width: parseFloat(s.style.width), cls: s.className})),
      legend: [...document.querySelectorAll('#timing-legend li')].map(li => li.textContent)} : null;
  return r;
})()"""


def ready(kind, jid):
    base = ("window.clsolve.state.job && window.clsolve.state.job.id === '%s' && "
            "!document.getElementById('timing').hidden && "
            "document.querySelectorAll('#result td[data-key]').length > 0" % jid)
    if kind == "cg":
        return base + " && document.getElementById('plot').dataset.drawn === '1'"
    base += " && !document.getElementById('files-box').hidden"
    if kind in MESH_KINDS:
        base += (" && document.getElementById('viewer') && document.getElementById('viewer').dataset.job === '%s'"
                 " && document.getElementById('viewer').dataset.drawn === '1'" % jid)
    if kind == "curvature":
        base += " && !document.getElementById('viewer-legend').hidden"
    if kind == "deform":
        base += " && /deform job writes u.mtx only/.test(document.getElementById('viewer-msg').textContent)"
    return base


def check_page(kind, jid, w, r):
    j = jobs[kind]
    tag = "%s at %d px" % (kind, w)
    check(r["selected"] == jid, "%s: the page shows job %r" % (tag, r["selected"]))
    # kind
    if kind != "cg":
        m = re.search(r"(?i)converged|iterations", r["panelText"])
        check(m is None, "%s: CG wording on a physics job: %r" % (tag, m and r["panelText"][max(0, m.start() - 60):m.end() + 40]))
        check(r["plot"] is None, "%s: a residual plot on a physics job" % tag)
    else:
        check(r["plot"] is not None and r["plot"].get("drawn") == "1" and int(r["plot"]["points"]) > 0,
              "%s: no convergence plot: %s" % (tag, r["plot"]))
        check(r["viewer"] is None, "%s: a viewer on a cg job" % tag)
    # numbers
    keys = [c["key"] for c in r["cells"]]
    for k in MUST[kind]:
        check(k in keys, "%s: the result table lacks %s (has %s)" % (tag, k, keys))
    for c in r["cells"]:
        want = at(j["result"], c["key"])
        got = json.loads(c["value"])
        check(got == want, "%s: %s is %r on the page, %r in the API" % (tag, c["key"], got, want))
        nums = [float(x) for x in NUM.findall(c["text"])]
        wl = [want] if isinstance(want, (int, float)) and not isinstance(want, bool) else \
            want if isinstance(want, list) and all(isinstance(x, (int, float)) for x in want) else None
        if wl is not None:
            check(len(nums) == len(wl) and all(close(a, b, 1e-5) for a, b in zip(nums, wl)),
                  "%s: %s shows %r, the API has %r" % (tag, c["key"], c["text"], want))
        elif isinstance(want, bool):
            check(c["text"] == ("yes" if want else "no"), "%s: %s shows %r for %r" % (tag, c["key"], c["text"], want))
        else:
            check(c["text"] == str(want), "%s: %s shows %r for %r" % (tag, c["key"], c["text"], want))
    # viewer
    if kind in MESH_KINDS:
        v = r["viewer"]
        if check(v is not None, "%s: no viewer" % tag):
            check(v.get("job") == jid and v.get("drawn") == "1", "%s: viewer not drawn for this job: %s" % (tag, v))
            check(0 <= v["top"] < HEIGHT - 100, "%s: the viewer's top at %.0f px, below the fold (%d)" % (tag, v["top"], HEIGHT))
            check(int(v.get("nonblank", 0)) >= (40 if kind == "nbody" else 300),
                  "%s: the viewer is nearly blank: %s" % (tag, v.get("nonblank")))
    elif kind == "deform":
        check(r["viewer"] is None or r["viewer"].get("drawn") != "1", "%s: a drawn viewer without a mesh" % tag)
    # legend
    if kind == "curvature":
        lg = r["legend"]
        if check(lg is not None, "%s: no colour legend" % tag):
            check(float(lg["min"]) == data_min and float(lg["max"]) == data_max,
                  "%s: legend range [%s, %s], the data's [%r, %r]" % (tag, lg["min"], lg["max"], data_min, data_max))
            check(float(lg["lo"]) == data_min and float(lg["hi"]) == data_max and lg.get("scale") == "data",
                  "%s: the colour scale [%s, %s] is not the data's [%r, %r]" % (tag, lg["lo"], lg["hi"], data_min, data_max))
            check(close(float(lg["lo_text"]), data_min, 1e-3) and close(float(lg["hi_text"]), data_max, 1e-3),
                  "%s: legend labels %s, %s for [%r, %r]" % (tag, lg["lo_text"], lg["hi_text"], data_min, data_max))
    elif kind != "cg":
        check(r["legend"] is None, "%s: a colour legend without values" % tag)
    # files
    if kind != "cg":
        want = [f["name"] for f in files[kind]]
        check(r["filesShown"] and r["files"] == sorted(want, key=natural_key),
              "%s: the page's files %s, in order %s" % (tag, r["files"], sorted(want, key=natural_key)))
    # fit
    check(r["sw"] <= r["iw"], "%s: the page is %d px wide in a %d px window" % (tag, r["sw"], r["iw"]))
    for t in r["tables"]:
        check(t["sw"] <= t["cw"] and t["right"] <= t["cright"] + 0.5,
              "%s: table #%s does not fit its box: %s" % (tag, t["id"], t))
    check(not r["clipped"], "%s: clipped cells: %s" % (tag, r["clipped"][:5]))
    check(len(r["tables"]) >= 2, "%s: only %d tables visible" % (tag, len(r["tables"])))
    # time
    b = r["bar"]
    t = j["timings"]
    if check(b is not None and b["tag"] == "DIV" and len(b["segs"]) >= 3 and b["w"] > 200,
             "%s: no timing bar: %s" % (tag, b)):
        check(abs(sum(s["width"] for s in b["segs"]) - 100) < 0.1, "%s: bar widths %s" % (tag, b["segs"]))
        want_total = t["receive_s"] + t["queue_s"] + t["total_s"]
        check(close(float(b["seconds"]), want_total, 1e-9), "%s: bar %s s, the API %r" % (tag, b["seconds"], want_total))
        api_s = {"receive": t["receive_s"], "queue": t["queue_s"]}
        if kind != "cg":
            api_s["run"] = t["total_s"]
        else:
            api_s.update({k: t[k + "_s"] for k in ("parse", "setup", "solve", "gather", "write")})
        phases = [s["phase"] for s in b["segs"]]
        for ph, secs in api_s.items():
            if check(ph in phases, "%s: the bar has no %s segment: %s" % (tag, ph, phases)):
                seg = b["segs"][phases.index(ph)]
                check(close(float(seg["seconds"]), secs, 1e-9) and seg["cls"] == "seg seg-" + ph,
                      "%s: %s segment %s against %r" % (tag, ph, seg, secs))
        check(len(b["legend"]) == len(b["segs"]) and
              all(re.match(r"^%s [0-9.e-]+ s\b" % s["phase"], li) for s, li in zip(b["segs"], b["legend"])),
              "%s: timing legend %s" % (tag, b["legend"]))
    check(not re.search(r"\b(parse|total|queue|receive)_s\b", r["pageText"]), "%s: a raw timings dump" % tag)


with Browser(chromium, os.path.join(out, "chromium-profile"), os.path.join(out, "chromium.log"),
             extra=Browser.WEBGL) as br:
    p = br.page()
    for kind in ("curvature", "springs", "nbody", "deform", "cg"):
        jid = ids[kind]
        for w in WIDTHS:
            p.viewport(w, HEIGHT, 1)
            p.goto("about:blank")
            t0 = time.time()
            p.goto(url + "/#/jobs/" + jid)
            try:
                p.wait(ready(kind, jid), 60)
            except TimeoutError as e:
                check(False, "%s at %d px: %s" % (kind, w, e))
            time.sleep(0.3)  # a poll more: the page as a person would see it
            r = p.eval(PAGE)
            p.screenshot(os.path.join(out, "dashboard-%s-%d.png" % (kind, w)))
            check_page(kind, jid, w, r)
            print("%s at %d px: %.1f s, viewer top %s, %d result cells, bar %s" %
                  (kind, w, time.time() - t0, r["viewer"] and round(r["viewer"]["top"]), len(r["cells"]),
                   r["bar"] and " ".join("%s %.4f" % (s["phase"], float(s["seconds"])) for s in r["bar"]["segs"])))

    # the viewer always belongs to the selected job: switch in the page
    p.viewport(1280, HEIGHT, 1)
    p.goto("about:blank")
    p.goto(url + "/#/jobs/" + ids["curvature"])
    p.wait(ready("curvature", ids["curvature"]), 60)
    # the other scale: symmetric at the 98th percentile of |value|; the
    # legend still spans the data's real range
    p.eval("(() => { const s = document.getElementById('viewer-scale'); s.value = 'robust'; "
           "s.dispatchEvent(new Event('change')); })()")
    p.wait("document.getElementById('viewer-legend').dataset.scale === 'robust'", 30)
    lg = p.eval("Object.assign({}, document.getElementById('viewer-legend').dataset)")
    mags = sorted(abs(v) for v in interior)
    r98 = mags[min(len(mags) - 1, int(0.98 * len(mags)))]
    check(float(lg["min"]) == data_min and float(lg["max"]) == data_max and
          float(lg["hi"]) == r98 and float(lg["lo"]) == -r98,
          "robust scale: legend %s, the data's [%r, %r], 98%% of |H| within %r" % (lg, data_min, data_max, r98))
    p.screenshot(os.path.join(out, "dashboard-curvature-robust-1280.png"))
    print("robust scale: +-%r over the data's [%r, %r]" % (r98, data_min, data_max))
    # the old job's picture goes the moment the selection changes
    r = p.eval("""(() => { location.hash = '#/jobs/%s'; window.dispatchEvent(new HashChangeEvent('hashchange'));
        const v = document.getElementById('viewer'), lg = document.getElementById('viewer-legend');
        return {job: v.dataset.job, drawn: v.dataset.drawn, legend: !lg.hidden,
                table: document.querySelectorAll('#result td[data-key]').length}; })()""" % ids["springs"])
    check(r["job"] != ids["curvature"] and r["drawn"] == "0" and not r["legend"] and r["table"] == 0,
          "switching to springs left the curvature job on the page: %s" % r)
    p.wait(ready("springs", ids["springs"]), 60)
    check(p.eval("document.getElementById('viewer').dataset.file") == "springs_000000.ply",
          "the springs viewer does not start at frame 0")
    p.eval("location.hash = '#/jobs/%s'" % ids["cg"])
    p.wait(ready("cg", ids["cg"]), 60)
    check(p.eval("document.getElementById('viewer-panel').hidden"), "the viewer stays on a cg job's page")
    p.eval("location.hash = '#view=%s'" % ids["nbody"])
    p.wait(ready("nbody", ids["nbody"]), 60)
    check(p.eval("document.getElementById('sel-link').textContent") == ids["nbody"], "#view=ID does not select ID")

    for e in p.errors:
        check(False, "page error: %s" % e)

print("dashboard kinds: %d problems" % len(fails))
sys.exit(1 if fails else 0)
