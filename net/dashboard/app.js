// app.js: the clsolve dashboard's logic. Polls the daemon's API once a
// second: the job list (GET /v1/jobs), the selected job (GET /v1/jobs/ID)
// and its residual history, fetched incrementally while it runs
// (GET /v1/jobs/ID/residuals?since=N), drawn on a <canvas> as relative
// residual against iteration on a log scale. The device table comes from
// GET /v1/devices once. When the daemon asks for a bearer token (401), a
// field for it appears; the token stays in this tab's sessionStorage.
// After each drawing the canvas carries data-job, data-points and
// data-drawn="1", so a headless browser test can check the plot.
"use strict";

const state = { busy: false, selected: null, userSelected: false, hist: [], first: 0, histJob: null,
                histDone: false, tol: null, jobs: [] };

function token() { return sessionStorage.getItem("clsolve-token") || ""; }

async function api(path) {
  const headers = {};
  if (token()) headers["Authorization"] = "Bearer " + token();
  const r = await fetch(path, { headers, cache: "no-store" });
  if (r.status === 401) {
    document.getElementById("auth").hidden = false;
    throw new Error("unauthorized");
  }
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function fmtRes(r) { return typeof r === "number" ? r.toExponential(3) : "–"; }
function fmtTime(t) { return t ? t.replace("T", " ").replace(/\.\d+Z$/, "Z") : "–"; }

function renderJobs(list) {
  const tbody = document.querySelector("#jobs tbody");
  tbody.replaceChildren();
  for (const j of list.jobs) {
    const tr = el("tr");
    tr.dataset.jobId = j.id;
    tr.dataset.status = j.status;
    if (j.id === state.selected) tr.className = "selected";
    tr.append(el("td", j.id.slice(0, 12), "mono"), el("td", j.kind));
    const st = el("td");
    st.append(el("span", j.status, "pill st-" + j.status));
    tr.append(st, el("td", j.progress.iteration), el("td", fmtRes(j.progress.residual)),
              el("td", fmtTime(j.created_at)));
    tr.addEventListener("click", () => { select(j.id, true); });
    tbody.append(tr);
  }
  document.getElementById("jobs-empty").hidden = list.jobs.length > 0;
  document.body.dataset.jobs = String(list.total);
  const counts = {};
  for (const j of list.jobs) counts[j.status] = (counts[j.status] || 0) + 1;
  document.getElementById("summary").textContent =
    list.total + " jobs" + Object.keys(counts).map(k => ", " + counts[k] + " " + k).join("");
}

function select(id, byUser) {
  if (id !== state.selected) {
    state.selected = id;
    state.hist = [];
    state.first = 0;
    state.histJob = id;
    state.histDone = false;
  }
  if (byUser) state.userSelected = true;
  for (const tr of document.querySelectorAll("#jobs tbody tr"))
    tr.className = tr.dataset.jobId === id ? "selected" : "";
  document.getElementById("sel-id").textContent = id ? id : "";
  refreshSelected();
}

function renderDetail(j) {
  const dl = document.getElementById("detail");
  dl.replaceChildren();
  const add = (k, v) => { dl.append(el("dt", k), el("dd", v)); };
  add("status", j.status + (j.cancel_requested && j.status === "running" ? " (cancel requested)" : ""));
  add("kind", j.kind);
  add("inputs", Object.entries(j.inputs).filter(e => e[1]).map(e => e[0] + ": " + e[1]).join(", "));
  add("parameters", JSON.stringify(j.parameters));
  add("progress", j.progress.phase + ", iteration " + j.progress.iteration + ", residual " +
      fmtRes(j.progress.residual) + " (" + fmtTime(j.progress.updated_at) + ")");
  if (j.result) {
    const r = j.result;
    if (r.iterations !== undefined)
      add("result", (r.converged ? "converged" : "not converged") + " after " + r.iterations +
          " iterations, residual " + fmtRes(r.relative_residual) + " (true " + fmtRes(r.true_relative_residual) + ")");
    else add("result", JSON.stringify(r).slice(0, 400));
  }
  if (j.timings) add("timings", Object.entries(j.timings).map(e => e[0] + " " + Number(e[1]).toFixed(3)).join(", "));
  if (j.devices && j.devices.length)
    add("devices", j.devices.map(d => "rank " + d.rank + ": " + d.name + " rows " + d.rows.join("–")).join("; "));
  if (j.error) add("error", j.error.message);
}

async function refreshSelected() {
  const id = state.selected;
  if (!id || state.busy) return;
  state.busy = true;
  try { await refreshSelectedOnce(id); } finally { state.busy = false; }
}

async function refreshSelectedOnce(id) {
  let j;
  try { j = await api("/v1/jobs/" + id); } catch (e) { return; }
  if (id !== state.selected) return;
  renderDetail(j);
  if (window.clsolveViewer) window.clsolveViewer.show(j); // physics results: viewer.js
  state.tol = j.parameters && typeof j.parameters.tol === "number" ? j.parameters.tol : null;
  if (j.kind !== "cg") { draw(); return; }
  const finished = j.status !== "queued" && j.status !== "running";
  if (state.histDone) { draw(); return; }
  if (finished) {          // the final history (it starts at iteration 0)
    state.hist = []; state.first = 0;
  }
  try {
    const r = await api("/v1/jobs/" + id + "/residuals?since=" + state.hist.length);
    if (id !== state.selected || r.start !== state.hist.length) return;
    state.first = r.first_iteration;
    state.hist = state.hist.concat(r.residuals);
    state.histDone = finished;
  } catch (e) { /* keep what we have */ }
  draw();
}

function draw() {
  const c = document.getElementById("plot");
  const g = c.getContext("2d");
  const W = c.width, H = c.height, L = 64, R = 16, T = 14, B = 40;
  g.clearRect(0, 0, W, H);
  g.font = "12px system-ui, sans-serif";
  const pts = [];
  state.hist.forEach((v, i) => { if (typeof v === "number" && v > 0) pts.push([i + state.first, Math.log10(v)]); });
  c.dataset.job = state.selected || "";
  c.dataset.points = String(pts.length);
  if (!pts.length) {
    g.fillStyle = "#7a8598";
    g.fillText(state.selected ? "no residuals yet" : "select a job", L, H / 2);
    c.dataset.drawn = "0";
    return;
  }
  let ymin = Math.min(...pts.map(p => p[1])), ymax = Math.max(...pts.map(p => p[1]));
  if (state.tol) ymin = Math.min(ymin, Math.log10(state.tol));
  ymin = Math.floor(ymin); ymax = Math.ceil(ymax);
  if (ymax === ymin) ymax = ymin + 1;
  const xmin = pts[0][0], xmax = Math.max(pts[pts.length - 1][0], xmin + 1);
  const X = x => L + (x - xmin) / (xmax - xmin) * (W - L - R);
  const Y = y => T + (ymax - y) / (ymax - ymin) * (H - T - B);
  // grid and axes: one line per decade
  g.strokeStyle = "#eef1f5"; g.fillStyle = "#546075"; g.lineWidth = 1;
  const step = Math.max(1, Math.ceil((ymax - ymin) / 10));
  for (let d = ymin; d <= ymax; d += step) {
    g.beginPath(); g.moveTo(L, Y(d)); g.lineTo(W - R, Y(d)); g.stroke();
    g.fillText("1e" + d, 8, Y(d) + 4);
  }
  for (let k = 0; k <= 5; k++) {
    const x = xmin + (xmax - xmin) * k / 5;
    g.fillText(String(Math.round(x)), X(x) - 8, H - B + 16);
  }
  g.fillText("iteration", (W + L) / 2 - 24, H - 6);
  g.strokeStyle = "#8892a6";
  g.strokeRect(L, T, W - L - R, H - T - B);
  if (state.tol) {           // the tolerance
    g.setLineDash([5, 4]); g.strokeStyle = "#23904a";
    g.beginPath(); g.moveTo(L, Y(Math.log10(state.tol))); g.lineTo(W - R, Y(Math.log10(state.tol))); g.stroke();
    g.setLineDash([]);
  }
  g.strokeStyle = "#2f6fd6"; g.lineWidth = 1.5;
  g.beginPath();
  pts.forEach((p, i) => { if (i) g.lineTo(X(p[0]), Y(p[1])); else g.moveTo(X(p[0]), Y(p[1])); });
  g.stroke();
  c.dataset.drawn = "1";
  c.dataset.ymin = String(ymin);
  c.dataset.ymax = String(ymax);
}

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
  } catch (e) { /* shown by the health pill */ }
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
                el("td", dev.name), el("td", dev.type), el("td", dev.compute_units),
                el("td", (dev.global_mem_bytes / 1073741824).toFixed(1) + " GiB"),
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

loadDevices();
tick();
setInterval(tick, 1000);
