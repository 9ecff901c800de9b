// app.js: the clsolve dashboard's logic. Once a second it polls the daemon's
// API: the job list (GET /v1/jobs), the selected job (GET /v1/jobs/ID) and
// its residual history, fetched incrementally (GET .../residuals?since=N),
// drawn on a <canvas> as relative residual against iteration on a log
// scale. The device table comes from GET /v1/devices once.
//
// Each row of the job list ends in the job's time as one bar (receive,
// queue, parse, setup, solve, gather, write; timeBar), from its timings.
// The list has seven columns (a running job's phase sits by its status, a
// cg job's iteration and residual share one), so it fits its half of the
// page without scrolling sideways from 1200 px up, and the whole width
// below.
//
// What the selected job shows depends on its kind, because the kinds
// produce different things: a cg job its convergence plot and its solve
// report (converged or not, iterations, residuals); a physics job
// (springs, deform, curvature, nbody) never a word of that (a springs
// result has an "iterations" of its own: constraint passes), but its
// result in 3-D (viewer.js, in #viewer-slot, where the plot would be, so
// it is above the fold) and a table of the numbers that matter for its
// kind (RESULT_FIELDS: curvature's H and K ranges and its topology,
// springs' energy, nbody's energy drift, deform's sizes), read from the
// result the daemon wrote, each cell carrying data-key and data-value (the
// raw value) so a test can compare it with the API. Every job's time is
// drawn as a bar of its phases with a legend of seconds (timingBar), and
// a finished job's output files are listed in natural order (frames by
// step; the daemon sends them so, the page sorts them again for older
// daemons), each a download.
//
// Each job has an address, /#/jobs/ID (the table's links, the browser's
// history). The selected job shows its phases as a bar (queued, parsing,
// setting up, solving with its share of the way to tol, gathering,
// writing, done) with the phase's elapsed time and, while solving, the ETA
// the daemon estimates; its actions: cancel (queued or running), delete (a
// finished job; a second click within 4 s confirms), and the solution as
// .mtx, .json or .f64 (fetched with the token, saved under the input's
// name).
//
// The plot stays fast for any history: it keeps, per horizontal pixel, the
// lowest and the highest residual of the iterations that fall on it (at
// most two points a pixel, so a few thousand in all, whatever the
// iteration count), finds its ranges with loops (no Math.min(...array),
// which overflows the stack past ~125k values), and draws at the screen's
// pixel density (devicePixelRatio), redrawn on resize.
//
// When the daemon asks for a bearer token (401), a field for it appears;
// the token stays in this tab's sessionStorage. Errors of actions show in
// one message line. After each drawing the canvas carries data-job,
// data-points (residuals held), data-drawn-points (after decimation),
// data-dpr and data-drawn="1", so a headless browser test can check it.
//
// Other scripts extend it through window.clsolve: hooks.jobSelected
// (functions called with the job document whenever the selected job is
// rendered), hooks.selectionChanged (called with the new id the moment
// the selection changes, so nothing of the previous job stays on the
// page while the new one loads), api(path, options), naturalCompare and
// the state. #view=ID selects job ID like #/jobs/ID: the viewer always
// shows the selected job.
"use strict";

const state = { selected: null, userSelected: false, job: null, fetchedAt: 0, hist: [], first: 0,
                histJob: null, histDone: false, jobs: [], frac: {}, busy: false, armed: null };
const hooks = { jobSelected: [], selectionChanged: [] };

function token() { return sessionStorage.getItem("clsolve-token") || ""; }

// One API call: the parsed JSON (null for a 204), or an Error whose message
// is the problem's detail.
async function api(path, opts) {
  const o = Object.assign({ cache: "no-store" }, opts || {});
  o.headers = Object.assign({}, o.headers || {});
  if (token()) o.headers["Authorization"] = "Bearer " + token();
  const r = await fetch(path, o);
  if (r.status === 401) {
    document.getElementById("auth").hidden = false;
    throw new Error("a bearer token is needed");
  }
  if (!r.ok) {
    let detail = "HTTP " + r.status;
    try { const p = await r.json(); if (p && p.detail) detail = p.detail; } catch (e) { /* not JSON */ }
    const err = new Error(detail);
    err.status = r.status;
    throw err;
  }
  if (r.status === 204) return null;
  return o.blob ? r.blob() : r.json();
}

// Natural order: digit runs compare as numbers, so frame_50 comes before
// frame_100 (the daemon's own order, net/job_files.c).
function naturalCompare(a, b) {
  const ra = String(a).match(/\d+|\D+/g) || [], rb = String(b).match(/\d+|\D+/g) || [];
  for (let i = 0; i < Math.min(ra.length, rb.length); i++) {
    const x = ra[i], y = rb[i];
    const dx = /^\d/.test(x), dy = /^\d/.test(y);
    if (dx && dy) {
      const nx = x.replace(/^0+/, ""), ny = y.replace(/^0+/, "");
      if (nx.length !== ny.length) return nx.length - ny.length;
      if (nx !== ny) return nx < ny ? -1 : 1;
    } else if (x !== y) return x < y ? -1 : 1;
  }
  if (ra.length !== rb.length) return ra.length - rb.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

window.clsolve = { hooks, api, state, naturalCompare };

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function fmtRes(r) { return typeof r === "number" ? r.toExponential(2) : "–"; }
function fmtTime(t) { return t ? t.replace("T", " ").replace(/\.\d+Z$/, "Z") : "–"; }
// the table's short form: the time of day (UTC) today, else the date
function fmtShort(t) {
  if (!t) return "–";
  const today = new Date().toISOString().slice(0, 10);
  return t.slice(0, 10) === today ? t.slice(11, 19) : t.slice(0, 10);
}
function fmtDur(s) {
  if (typeof s !== "number" || !isFinite(s) || s < 0) return "?";
  s = Math.round(s);
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, sec = s % 60;
  return (h ? h + ":" + String(m).padStart(2, "0") : String(m)) + ":" + String(sec).padStart(2, "0");
}
// A finished job's time as one bar: its upload, its wait in the queue and
// the phases of its run (timings), each a segment as wide as its share;
// the title lists the seconds. Physics jobs have receive, queue and run.
const BAR_PHASES = [["receive", "receive_s"], ["queue", "queue_s"], ["parse", "parse_s"],
                    ["setup", "setup_s"], ["solve", "solve_s"], ["gather", "gather_s"],
                    ["write", "write_s"]];
// [[phase, seconds]] of a job's timings, null while it has none: what
// total_s holds beyond its named phases is "run" for a physics job (its
// whole run) and "other" for cg (the scheduler's own steps)
function timeSegments(j) {
  const t = j.timings;
  if (!t || typeof t.total_s !== "number") return null;
  const segs = [];
  let inRun = 0;
  for (const [name, key] of BAR_PHASES) {
    const v = t[key];
    if (typeof v !== "number" || !(v >= 0)) continue;
    segs.push([name, v]);
    if (key !== "receive_s" && key !== "queue_s") inRun += v;
  }
  if (t.total_s > inRun) segs.push([j.kind === "cg" ? "other" : "run", t.total_s - inRun]);
  return segs;
}
function timeBar(j) {
  const bar = el("span", null, "tbar");
  const segs = timeSegments(j);
  if (!segs) return bar;
  const sum = segs.reduce((a, s) => a + s[1], 0);
  if (!(sum > 0)) return bar;
  for (const [name, v] of segs) {
    if (v <= 0) continue;
    const s = el("span", null, "seg seg-" + name);
    s.style.width = (100 * v / sum).toFixed(2) + "%";
    bar.append(s);
  }
  bar.title = segs.map(s => s[0] + " " + s[1].toFixed(3) + " s").join(", ") +
              " (" + sum.toFixed(3) + " s in all)";
  bar.dataset.seconds = sum.toFixed(4);
  return bar;
}
function inputName(j) {
  const i = j.inputs || {};
  return i.matrix || i.input || "";
}
function phaseName(p) { return (p || "").replace("_", " "); }

let messageTimer = null;
function showMessage(text) {
  const m = document.getElementById("message");
  m.textContent = text;
  m.hidden = !text;
  clearTimeout(messageTimer);
  if (text) messageTimer = setTimeout(() => { m.hidden = true; }, 8000);
}

// --- the job list ---

function renderJobs(list) {
  const tbody = document.querySelector("#jobs tbody");
  tbody.replaceChildren();
  for (const j of list.jobs) {
    const tr = el("tr");
    tr.dataset.jobId = j.id;
    tr.dataset.status = j.status;
    if (j.id === state.selected) tr.className = "selected";
    const idc = el("td", null, "mono");
    const a = el("a", j.id.slice(0, 8));
    a.href = "#/jobs/" + j.id;
    idc.append(a);
    const name = inputName(j);
    const st = el("td", null, "status");
    st.append(el("span", j.status, "pill st-" + j.status));
    const running = j.status === "running" || j.status === "queued";
    if (running && j.progress.phase !== j.status) st.append(" ", el("span", phaseName(j.progress.phase), "muted"));
    // a cg job's iteration and residual; a physics job has neither
    const prog = el("td", j.kind === "cg" ? null : "–", "num progress");
    if (j.kind === "cg") prog.append(el("span", j.progress.iteration, "nw"), " · ", el("span", fmtRes(j.progress.residual), "nw"));
    const when = el("td", fmtShort(j.created_at));
    when.title = fmtTime(j.created_at);
    tr.append(idc, el("td", name, "input"), el("td", j.kind), st, prog, when);
    const tc = el("td", null, "time");
    tc.append(timeBar(j));
    tr.append(tc);
    tr.querySelector("td.input").title = name;
    tr.addEventListener("click", ev => { if (ev.target.tagName !== "A") location.hash = "#/jobs/" + j.id; });
    tbody.append(tr);
  }
  document.getElementById("jobs-empty").hidden = list.jobs.length > 0;
  document.body.dataset.jobs = String(list.total);
  const counts = {};
  for (const j of list.jobs) counts[j.status] = (counts[j.status] || 0) + 1;
  document.getElementById("summary").textContent =
    list.total + " jobs" + Object.keys(counts).map(k => ", " + counts[k] + " " + k).join("");
}

// --- selection and the address ---

function route() {
  const m = location.hash.match(/^#\/jobs\/([0-9a-f]{32})$/) || location.hash.match(/^#view=([0-9a-f]{32})\b/);
  if (m) select(m[1], true);
  else if (location.hash === "" || location.hash === "#/") state.userSelected = false;
}

function select(id, byUser) {
  if (id !== state.selected) {
    state.selected = id;
    state.job = null;
    state.hist = [];
    state.first = 0;
    state.histJob = id;
    state.histDone = false;
    state.armed = null;
    state.filesKey = "";
    clearDetail();
    for (const f of hooks.selectionChanged) {
      try { f(id); } catch (e) { console.error(e); }
    }
  }
  if (byUser) state.userSelected = true;
  for (const tr of document.querySelectorAll("#jobs tbody tr"))
    tr.className = tr.dataset.jobId === id ? "selected" : "";
  const link = document.getElementById("sel-link");
  link.textContent = id ? id : "";
  link.href = id ? "#/jobs/" + id : "#/";
  refreshSelected();
}

// --- the selected job ---

const PHASES_CG = ["queued", "parsing", "setting_up", "solving", "gathering", "writing", "done"];
const PHASES_OTHER = ["queued", "running", "done"];

// The bar's share of the way from the first residual to tol (log scale),
// never going back for a job while this page shows it.
function solvedFraction(j) {
  const tol = j.parameters && typeof j.parameters.tol === "number" ? j.parameters.tol : null;
  const r = j.progress.residual;
  if (!tol || typeof r !== "number" || r <= 0) return state.frac[j.id] || 0;
  const r0 = state.hist.length && state.hist[0] > 0 ? state.hist[0] : 1;
  const l0 = Math.log10(Math.max(r0, tol * 10)), lt = Math.log10(tol), l = Math.log10(r);
  const f = Math.min(1, Math.max(0, (l0 - l) / (l0 - lt)));
  state.frac[j.id] = Math.max(state.frac[j.id] || 0, f);
  return state.frac[j.id];
}

function phaseElapsed(j) {
  const p = j.progress;
  const a = Date.parse(p.phase_started_at), b = Date.parse(p.updated_at);
  if (isNaN(a) || isNaN(b)) return null;
  const live = j.status === "queued" || j.status === "running";
  return (b - a) / 1000 + (live ? (Date.now() - state.fetchedAt) / 1000 : 0);
}

function renderPhases(j) {
  const ol = document.getElementById("phases");
  const steps = j.kind === "cg" ? PHASES_CG : PHASES_OTHER;
  let phase = j.status === "queued" ? "queued" : j.progress.phase;
  if (phase === "starting") phase = j.kind === "cg" ? "parsing" : "running";
  // waiting (for the lanes' small jobs) sits on the queued step, saving (a
  // final record the store retries) on the last one before done
  const step = phase === "waiting" ? "queued" : phase === "saving" ? steps[steps.length - 2] : phase;
  const finished = !(j.status === "queued" || j.status === "running");
  let cur = finished ? steps.length - 1 : steps.indexOf(step);
  ol.replaceChildren();
  steps.forEach((s, i) => {
    const li = el("li", i === steps.length - 1 && finished ? j.status : phaseName(s));
    if (i < cur) li.className = "past";
    if (i === cur) li.className = "current" + (finished ? " " + j.status : "");
    if (i === cur && s === "solving") {
      const fill = el("span", null, "fill");
      fill.style.width = (100 * solvedFraction(j)).toFixed(1) + "%";
      li.append(fill);
    }
    ol.append(li);
  });
  ol.dataset.phase = finished ? "done" : phase;
  const line = document.getElementById("phase-line");
  const e = phaseElapsed(j);
  const parts = [];
  if (!finished) {
    parts.push(phaseName(phase) + (e !== null ? " for " + fmtDur(e) : ""));
    if (phase === "solving") {
      parts.push("iteration " + j.progress.iteration, "residual " + fmtRes(j.progress.residual),
                 Math.round(100 * solvedFraction(j)) + "% of the way to tol");
      if (typeof j.progress.eta_s === "number") parts.push("about " + fmtDur(j.progress.eta_s) + " left");
    }
    if (j.progress.note) parts.push(j.progress.note); // why a queued job waits (admission)
    if (j.store_error) parts.push(j.store_error);
    if (j.cancel_requested) parts.push("cancel requested");
  } else if (j.started_at && j.finished_at) {
    parts.push(j.status + " after " + fmtDur((Date.parse(j.finished_at) - Date.parse(j.started_at)) / 1000) +
               " of running");
  } else {
    parts.push(j.status);
  }
  line.textContent = parts.join(" · ");
}

function renderActions(j) {
  const live = j.status === "queued" || j.status === "running";
  document.getElementById("act-cancel").hidden = !live;
  const del = document.getElementById("act-delete");
  del.hidden = live;
  del.textContent = state.armed === j.id ? "Really delete?" : "Delete";
  document.getElementById("downloads").hidden = !(j.result && j.result.solution_available);
}

// The numbers a physics result is read for, per kind: [label, path in the
// result]. A path that is absent or null in the result is left out (an
// older driver, an option not given). Ranges ([min, max]) show as
// "min … max".
const RESULT_FIELDS = {
  cg: [["converged", "converged"], ["reason", "reason"], ["iterations", "iterations"],
       ["relative residual", "relative_residual"], ["true relative residual", "true_relative_residual"],
       ["rows", "rows"], ["entries", "nnz"], ["right-hand side", "rhs"]],
  curvature: [["vertices", "vertices"], ["faces", "faces"], ["estimator", "estimator"],
              ["mean curvature H, min … max", "H_range"], ["Gaussian curvature K, min … max", "K_range"],
              ["Euler characteristic χ", "topology.euler_characteristic"],
              ["closed surface", "topology.closed"], ["boundary vertices", "boundary_vertices"],
              ["Gauss–Bonnet: angle defect / 2π", "gauss_bonnet.angle_defect_over_2pi"],
              ["Gauss–Bonnet holds", "gauss_bonnet.holds"], ["area", "gauss_bonnet.area"]],
  springs: [["particles", "particles"], ["springs", "springs"], ["steps", "steps"], ["time step", "dt"],
            ["energy at start", "energy.start.total"], ["energy at end", "energy.end.total"],
            ["kinetic energy at end", "energy.end.kinetic"], ["elastic energy at end", "energy.end.elastic"],
            ["max strain at end", "energy.end.max_strain"], ["height at start", "height_start"],
            ["height at end", "height_end"], ["shape error", "shape_error"], ["floor", "floor"],
            ["ms per step", "ms_per_step"], ["frames", "files.length"]],
  nbody: [["bodies", "bodies"], ["initial conditions", "initial_conditions"], ["steps", "steps"],
          ["integrator", "integrator"], ["time step", "dt"], ["energy at start", "energy.start"],
          ["energy at end", "energy.end"], ["energy drift (relative, at end)", "energy_drift"],
          ["energy drift (relative, largest)", "energy_max_drift"], ["momentum drift", "momentum_drift"],
          ["angular momentum drift", "angular_momentum_drift"], ["ms per step", "ms_per_step"],
          ["GFLOP/s", "gflops"], ["frames", "files.length"]],
  deform: [["basis", "basis"], ["vertices", "vertices"], ["domains", "domains"], ["modes", "modes"],
           ["frames", "frames"], ["corners", "corners"], ["uq kernel ms per frame", "times.uq_kernel_ms_per_frame"]],
};

function at(obj, path) {
  let v = obj;
  for (const k of path.split(".")) {
    if (v === null || v === undefined) return undefined;
    v = v[k];
  }
  return v;
}
// A result's number as text: integers whole, others to 6 significant
// digits (exponent form when very small or large); a test reads them back.
function fmtNum(v) {
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  if (v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e6)) return v.toExponential(5);
  return String(Number(v.toPrecision(6)));
}
function fmtValue(v) {
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (Array.isArray(v) && v.length === 2 && v.every(x => typeof x === "number")) return fmtNum(v[0]) + " … " + fmtNum(v[1]);
  if (Array.isArray(v)) return v.map(fmtValue).join(", ");
  return fmtNum(v);
}

function renderResult(j) {
  const t = document.getElementById("result");
  const tb = t.querySelector("tbody");
  tb.replaceChildren();
  const fields = j.result ? RESULT_FIELDS[j.kind] || [] : [];
  for (const [label, path] of fields) {
    const v = at(j.result, path);
    if (v === undefined || v === null) continue;
    const tr = el("tr");
    const td = el("td", fmtValue(v), typeof v === "number" || Array.isArray(v) ? "num" : "");
    td.dataset.key = path;
    td.dataset.value = JSON.stringify(v);
    tr.append(el("th", label), td);
    tb.append(tr);
  }
  if (j.kind !== "cg" && j.result && j.result.device && j.result.device.name) {
    const tr = el("tr");
    tr.append(el("th", "device"), el("td", j.result.device.name));
    tb.append(tr);
  }
  t.hidden = !tb.children.length;
  t.dataset.kind = j.kind;
}

// The job's time as a bar of its phases (each as wide as its share) with
// a legend: the phase, its seconds and its share.
function renderTiming(j) {
  const box = document.getElementById("timing"), bar = document.getElementById("timing-bar");
  const legend = document.getElementById("timing-legend");
  const segs = timeSegments(j);
  const sum = segs ? segs.reduce((a, s) => a + s[1], 0) : 0;
  box.hidden = !(sum > 0);
  bar.replaceChildren();
  legend.replaceChildren();
  if (box.hidden) return;
  for (const [name, v] of segs) {
    const seg = el("span", null, "seg seg-" + name);
    seg.style.width = (100 * v / sum).toFixed(3) + "%";
    seg.dataset.phase = name;
    seg.dataset.seconds = String(v);
    seg.title = name + " " + v.toFixed(3) + " s";
    bar.append(seg);
    const li = el("li");
    li.dataset.phase = name;
    li.append(el("i", null, "sw seg-" + name), el("span", name), " ",
              el("span", (v < 0.001 && v > 0 ? v.toExponential(1) : v.toFixed(3)) + " s", "secs"),
              el("span", " " + Math.round(100 * v / sum) + "%", "muted"));
    legend.append(li);
  }
  bar.dataset.seconds = String(sum);
  document.getElementById("timing-total").textContent = sum.toFixed(3) + " s in all";
}

// A finished physics job's output files, in natural order, each a
// download (fetched with the token). Fetched once per job and status.
async function renderFiles(j) {
  const box = document.getElementById("files-box");
  const live = j.status === "queued" || j.status === "running";
  if (j.kind === "cg" || live) { box.hidden = true; return; }
  const key = j.id + ":" + j.status;
  if (state.filesKey === key) return;
  state.filesKey = key;
  let list;
  try { list = await api("/v1/jobs/" + j.id + "/files"); } catch (e) { state.filesKey = ""; return; }
  if (j.id !== state.selected) return;
  const names = list.files.slice().sort((a, b) => naturalCompare(a.name, b.name));
  const ol = document.getElementById("files");
  ol.replaceChildren();
  for (const f of names) {
    const li = el("li");
    li.dataset.name = f.name;
    const a = el("a", f.name);
    a.href = f.href;
    a.addEventListener("click", ev => {
      ev.preventDefault();
      act("download", async () => {
        const blob = await api(f.href, { blob: true });
        const url = URL.createObjectURL(blob);
        const d = document.createElement("a");
        d.href = url;
        d.download = f.name;
        document.body.append(d);
        d.click();
        d.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
      });
    });
    li.append(a, el("span", " " + (f.bytes >= 1048576 ? (f.bytes / 1048576).toFixed(1) + " MiB"
                                   : (f.bytes / 1024).toFixed(1) + " KiB"), "muted"));
    ol.append(li);
  }
  document.getElementById("files-count").textContent = names.length ? names.length + "" : "none";
  box.hidden = false;
}

// Nothing of the previous job stays while the selected one loads.
function clearDetail() {
  document.getElementById("detail").replaceChildren();
  document.querySelector("#result tbody").replaceChildren();
  document.getElementById("result").hidden = true;
  document.getElementById("timing").hidden = true;
  document.getElementById("files-box").hidden = true;
  document.getElementById("files").replaceChildren();
}

function renderDetail(j) {
  renderActions(j);
  renderPhases(j);
  // the residual plot is a cg job's; a physics job's result is the viewer
  document.getElementById("plot").hidden = j.kind !== "cg";
  const dl = document.getElementById("detail");
  dl.replaceChildren();
  const add = (k, v) => { dl.append(el("dt", k), el("dd", v)); };
  add("status", j.status + (j.cancel_requested && j.status === "running" ? " (cancel requested)" : ""));
  add("kind", j.kind);
  const inputs = Object.entries(j.inputs || {}).filter(e => e[1]);
  if (inputs.length) add("inputs", inputs.map(e => e[0] + ": " + e[1]).join(", "));
  add("parameters", Object.entries(j.parameters || {}).map(e => e[0] + " " + (e[1] === null ? "default" : e[1])).join(", "));
  add("submitted", fmtTime(j.created_at));
  renderResult(j);
  renderTiming(j);
  renderFiles(j);
  if (j.placement)
    add("placement", j.placement.mode + (j.placement.lane !== undefined ? " (lane " + j.placement.lane + " of " +
        j.placement.lanes + ")" : "") + ", " + j.placement.ranks + " rank(s), " + j.placement.running + " running");
  if (j.pinned) add("pinned", "yes (exempt from retention)");
  if (j.devices && j.devices.length)
    add("devices", j.devices.map(d => "rank " + d.rank + ": " + d.name + " rows " + d.rows.join("–")).join("; "));
  if (j.error) add("error", j.error.message);
  for (const f of hooks.jobSelected) {
    try { f(j); } catch (e) { console.error(e); }
  }
}

async function refreshSelected() {
  const id = state.selected;
  if (!id || state.busy) return;
  state.busy = true;
  try { await refreshSelectedOnce(id); } finally { state.busy = false; }
}

async function refreshSelectedOnce(id) {
  let j;
  try { j = await api("/v1/jobs/" + id); } catch (e) {
    if (e.status === 404 && id === state.selected) {
      document.getElementById("phase-line").textContent = "no such job (it was deleted?)";
      document.getElementById("phases").replaceChildren();
      for (const b of ["act-cancel", "act-delete", "downloads"]) document.getElementById(b).hidden = true;
      state.job = null;
      clearDetail();
      draw();
    }
    return;
  }
  if (id !== state.selected) return;
  state.job = j;
  state.fetchedAt = Date.now();
  if (j.kind === "cg" && !state.histDone && j.status !== "queued") {
    const finished = j.status !== "running";
    try {
      const r = await api("/v1/jobs/" + id + "/residuals?since=" + state.hist.length);
      if (id !== state.selected) return;
      if (r.first_iteration !== state.first && state.hist.length) { state.hist = []; }
      if (r.start === state.hist.length) {
        state.first = r.first_iteration;
        state.hist = state.hist.concat(r.residuals);
        state.histDone = finished;
      }
    } catch (e) { /* keep what we have */ }
  }
  renderDetail(j);
  draw();
}

// --- the plot ---

// At most two points per pixel column: the lowest and the highest log10
// residual of the iterations on it, in iteration order.
function decimate(hist, first, columns) {
  const n = hist.length, out = [];
  const per = Math.max(1, n / Math.max(1, columns));
  for (let c = 0; c * per < n; c++) {
    const a = Math.floor(c * per), b = Math.min(n, Math.floor((c + 1) * per));
    let lo = null, hi = null, ilo = 0, ihi = 0;
    for (let i = a; i < b; i++) {
      const v = hist[i];
      if (typeof v !== "number" || !(v > 0)) continue;
      if (lo === null || v < lo) { lo = v; ilo = i; }
      if (hi === null || v > hi) { hi = v; ihi = i; }
    }
    if (lo === null) continue;
    if (ilo === ihi) out.push([ilo + first, Math.log10(lo)]);
    else if (ilo < ihi) out.push([ilo + first, Math.log10(lo)], [ihi + first, Math.log10(hi)]);
    else out.push([ihi + first, Math.log10(hi)], [ilo + first, Math.log10(lo)]);
  }
  return out;
}

function draw() {
  const c = document.getElementById("plot");
  const dpr = window.devicePixelRatio || 1;
  const W = c.clientWidth || 640, H = c.clientHeight || 320;
  if (c.width !== Math.round(W * dpr) || c.height !== Math.round(H * dpr)) {
    c.width = Math.round(W * dpr);
    c.height = Math.round(H * dpr);
  }
  const g = c.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  const L = 56, R = 14, T = 12, B = 36;
  g.clearRect(0, 0, W, H);
  g.font = "12px system-ui, sans-serif";
  const j = state.job && state.job.id === state.selected ? state.job : null;
  const tol = j && j.parameters && typeof j.parameters.tol === "number" ? j.parameters.tol : null;
  let valid = 0;
  for (const v of state.hist) if (typeof v === "number" && v > 0) valid++;
  const pts = decimate(state.hist, state.first, Math.floor(W - L - R));
  c.dataset.job = state.selected || "";
  c.dataset.points = String(valid);
  c.dataset.drawnPoints = String(pts.length);
  c.dataset.dpr = String(dpr);
  if (!pts.length) {
    g.fillStyle = "#7a8598";
    g.fillText(!state.selected ? "select a job" : j && j.kind !== "cg" ? "no residuals for a " + j.kind + " job"
               : "no residuals yet", L, H / 2);
    c.dataset.drawn = "0";
    return;
  }
  let ymin = Infinity, ymax = -Infinity;
  for (const p of pts) { if (p[1] < ymin) ymin = p[1]; if (p[1] > ymax) ymax = p[1]; }
  if (tol) ymin = Math.min(ymin, Math.log10(tol));
  ymin = Math.floor(ymin); ymax = Math.ceil(ymax);
  if (ymax === ymin) ymax = ymin + 1;
  const xmin = state.first, xmax = Math.max(state.first + state.hist.length - 1, xmin + 1);
  const X = x => L + (x - xmin) / (xmax - xmin) * (W - L - R);
  const Y = y => T + (ymax - y) / (ymax - ymin) * (H - T - B);
  // grid and axes: one line per decade (fewer when there are many)
  g.strokeStyle = "#eef1f5"; g.fillStyle = "#546075"; g.lineWidth = 1;
  const step = Math.max(1, Math.ceil((ymax - ymin) / 10));
  for (let d = ymin; d <= ymax; d += step) {
    g.beginPath(); g.moveTo(L, Y(d)); g.lineTo(W - R, Y(d)); g.stroke();
    g.fillText("1e" + d, 6, Y(d) + 4);
  }
  // iteration ticks at 1, 2 or 5 times a power of ten, about 90 px apart
  g.textAlign = "center";
  const want = (xmax - xmin) / Math.max(2, Math.floor((W - L - R) / 90));
  const p10 = Math.pow(10, Math.floor(Math.log10(Math.max(1, want))));
  const xstep = [1, 2, 5, 10].map(m => m * p10).find(v => v >= want) || 10 * p10;
  for (let x = Math.ceil(xmin / xstep) * xstep; x <= xmax; x += xstep) {
    const label = x >= 1e6 ? (x / 1e6) + "M" : x >= 1e4 ? (x / 1e3) + "k" : String(x);
    g.textAlign = X(x) > W - R - 20 ? "right" : "center";
    g.fillText(label, X(x), H - B + 16);
  }
  g.fillText("iteration", (W + L) / 2, H - 4);
  g.textAlign = "start";
  g.strokeStyle = "#8892a6";
  g.strokeRect(L, T, W - L - R, H - T - B);
  if (tol) {           // the tolerance
    g.setLineDash([5, 4]); g.strokeStyle = "#23904a";
    g.beginPath(); g.moveTo(L, Y(Math.log10(tol))); g.lineTo(W - R, Y(Math.log10(tol))); g.stroke();
    g.setLineDash([]);
  }
  g.strokeStyle = "#2f6fd6"; g.lineWidth = 1.5; g.lineJoin = "round";
  g.beginPath();
  pts.forEach((p, i) => { if (i) g.lineTo(X(p[0]), Y(p[1])); else g.moveTo(X(p[0]), Y(p[1])); });
  g.stroke();
  c.dataset.drawn = "1";
  c.dataset.ymin = String(ymin);
  c.dataset.ymax = String(ymax);
}

// --- actions ---

async function act(what, fn) {
  try { await fn(); showMessage(""); } catch (e) { showMessage(what + ": " + e.message); }
  await tick();
}

document.getElementById("act-cancel").addEventListener("click", () => {
  const id = state.selected;
  act("cancel", () => api("/v1/jobs/" + id + "/cancel", { method: "POST" }));
});

document.getElementById("act-delete").addEventListener("click", () => {
  const id = state.selected;
  if (state.armed !== id) {      // the first click arms, a second within 4 s deletes
    state.armed = id;
    if (state.job) renderActions(state.job);
    setTimeout(() => { if (state.armed === id) { state.armed = null; if (state.job) renderActions(state.job); } }, 4000);
    return;
  }
  state.armed = null;
  act("delete", async () => {
    await api("/v1/jobs/" + id, { method: "DELETE" });
    if (location.hash === "#/jobs/" + id) location.hash = "#/";
    state.userSelected = false;
    select(null, false);
  });
});

for (const b of document.querySelectorAll("#downloads button")) {
  b.addEventListener("click", () => {
    const id = state.selected, fmt = b.dataset.format;
    const stem = (inputName(state.job || {}) || id).replace(/\.(mtx|gz)$/g, "").replace(/\.mtx$/, "");
    const ext = fmt === "mtx" ? ".mtx" : fmt === "json" ? ".json" : ".f64";
    act("download", async () => {
      const blob = await api("/v1/jobs/" + id + "/solution?format=" + fmt, { blob: true });
      const url = URL.createObjectURL(blob);
      const a = document.createElement("a");
      a.href = url;
      a.download = stem + ".x" + ext;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      b.dataset.downloaded = String(blob.size);
      b.dataset.filename = a.download;
    });
  });
}

// --- the rest of the page ---

async function refreshJobs() {
  try {
    const list = await api("/v1/jobs?limit=50");
    state.jobs = list.jobs;
    renderJobs(list);
    if (!state.userSelected && list.jobs.length) {   // follow the running job
      const run = list.jobs.find(j => j.status === "running");
      const want = run ? run.id : list.jobs[0].id;
      if (want !== state.selected) select(want, false);
    }
  } catch (e) { /* shown by the health pill or the token field */ }
}

async function refreshHealth() {
  const h = document.getElementById("health");
  try {
    const r = await fetch("/healthz", { cache: "no-store" });
    const j = await r.json();
    h.textContent = j.status;
    h.className = "pill " + (j.status === "ok" ? "ok" : "bad");
  } catch (e) { h.textContent = "unreachable"; h.className = "pill bad"; }
}

async function loadDevices() {
  let d;
  try { d = await api("/v1/devices"); } catch (e) { return; }
  const tbody = document.querySelector("#devices tbody");
  tbody.replaceChildren();
  for (const r of d.per_rank) {
    if (r.error && !(r.devices || []).length) {
      const tr = el("tr"); tr.append(el("td", r.rank), el("td", r.host), el("td", r.error)); tbody.append(tr);
      continue;
    }
    for (const dev of r.devices) {
      const tr = el("tr");
      const wg = dev.work_group;
      tr.append(el("td", r.rank), el("td", r.host), el("td", dev.index),
                el("td", dev.name), el("td", dev.type), el("td", dev.compute_units, "num"),
                el("td", (dev.global_mem_bytes / 1073741824).toFixed(1) + " GiB", "num"),
                el("td", [wg.local_size, wg.groups_per_cu, wg.spmv_local_size, wg.vector_width].join(", ")));
      tbody.append(tr);
    }
  }
  document.body.dataset.devices = String(tbody.children.length);
}

document.getElementById("auth").addEventListener("submit", ev => {
  ev.preventDefault();
  sessionStorage.setItem("clsolve-token", document.getElementById("token").value.trim());
  document.getElementById("auth").hidden = true;
  loadDevices(); tick();
});

async function tick() {
  await Promise.all([refreshHealth(), refreshJobs()]);
  await refreshSelected();
}

window.addEventListener("hashchange", route);
window.addEventListener("resize", () => draw());
route();
loadDevices();
tick();
setInterval(tick, 1000);
