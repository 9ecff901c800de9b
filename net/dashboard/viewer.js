// viewer.js: the dashboard's 3-D viewer for physics jobs (issue 16). No
// external assets: WebGL 1, its own parsers, its own matrices.
//
// It sits in the selected job's panel (#viewer-slot, where a cg job's plot
// is), so a physics job's result is above the fold, and it only ever shows
// the selected job: app.js calls show(job) with every poll of the selected
// job (hooks.jobSelected) and reset() the moment the selection changes
// (hooks.selectionChanged); a load still running for a job no longer
// selected sees its generation (V.gen) passed and drops what it fetched.
// #view=JOBID selects the job in app.js like #/jobs/JOBID.
//
// When a physics job is shown, the viewer lists the job's output files
// (GET /v1/jobs/ID/files) and draws what it finds:
//   curvature  curvature.ply / .vtk: the mesh coloured from its per-vertex
//              values (below);
//   springs    springs.obj|ply|vtk, or the frames springs_NNNNNN.EXT: the
//              body, frames playable;
//   nbody      bodies.ply|vtk|obj|csv or its frames: the bodies as points;
//   deform     no mesh in a job's outputs (a job cannot upload one): says so.
// Files are fetched with the tab's bearer token (GET /v1/jobs/ID/files/NAME)
// and parsed here: ASCII PLY, OBJ, legacy VTK (POLYDATA) and the bodies
// CSV. Drag to turn, wheel to zoom; frames: play / pause and a slider.
//
// #view=ID opens the page on that job; #view=ID&full shows the viewer
// alone, filling the window; &yaw=RAD&pitch=RAD set the first view.
// Curvature colours come from the data, not from the file's colours (the
// driver colours over a robust ±range, [-10.5, 10.5] for spot's H in
// [-51.9, 45.4], which a reader takes for the data's range): the value the
// job coloured by (result.color.by: H, K, k1, k2, K_defect) is read from
// the file's per-vertex properties, and the scale runs from its real
// minimum (blue) through 0 (the map's neutral middle) to its real maximum
// (red), over the interior vertices (boundary ones are grey, as in the
// file, their one-sided values left out, as in the result's H_range). A
// legend under the canvas shows the ramp with the real minimum and maximum
// at its ends. "±98%" switches to a symmetric scale at the 98th
// percentile of |value|, which shows more of the body's variation; the
// legend then still spans the real range and shows where colours saturate.
// OBJ results have no values: their file colours are drawn, and said so.
//
// For headless tests the canvas carries data-job, data-kind, data-file,
// data-frames, data-frame, data-vertices, data-primitives, data-drawn="1"
// after a draw, and data-nonblank: the pixels (out of a 64 x 64 sample of
// the drawing buffer) that are not the background colour; the legend
// (#viewer-legend) data-by, data-prop, data-min, data-max (the data's
// range, full precision), data-lo, data-hi (the scale's ends) and
// data-scale.
"use strict";

(function () {
  const BG = [0.96, 0.97, 0.98];
  const V = {
    job: null, files: [], frames: [], frame: 0, cache: new Map(), gl: null,
    prog: null, yaw: 0.6, pitch: 0.35, zoom: 1.0, geo: null, playing: false, timer: null,
    key: "", gen: 0, model: null, scale: "data",
  };

  function token() { return sessionStorage.getItem("clsolve-token") || ""; }

  async function get(path, asText) {
    const headers = {};
    if (token()) headers["Authorization"] = "Bearer " + token();
    const r = await fetch(path, { headers, cache: "no-store" });
    if (!r.ok) throw new Error(path + ": HTTP " + r.status);
    return asText ? r.text() : r.json();
  }

  // ---- the panel ---------------------------------------------------------------

  function panel() {
    let p = document.getElementById("viewer-panel");
    if (p) return p;
    p = document.createElement("div");
    p.id = "viewer-panel";
    p.hidden = true;
    const h = document.createElement("h3");
    h.textContent = "3-D view ";
    const sub = document.createElement("span");
    sub.id = "viewer-title";
    sub.className = "muted";
    h.append(sub);
    const cv = document.createElement("canvas");
    cv.id = "viewer";
    cv.width = 640;
    cv.height = 480;
    cv.dataset.drawn = "0";
    const bar = document.createElement("div");
    bar.className = "viewer-bar";
    const play = document.createElement("button");
    play.id = "viewer-play";
    play.textContent = "Play";
    const slider = document.createElement("input");
    slider.id = "viewer-frame";
    slider.type = "range";
    slider.min = "0";
    slider.max = "0";
    slider.value = "0";
    const label = document.createElement("span");
    label.id = "viewer-label";
    label.className = "muted";
    bar.append(play, slider, label);
    const legend = document.createElement("div");
    legend.id = "viewer-legend";
    legend.hidden = true;
    const msg = document.createElement("p");
    msg.id = "viewer-msg";
    msg.className = "muted";
    p.append(h, cv, bar, legend, msg);
    (document.getElementById("viewer-slot") || document.querySelector("main") || document.body).append(p);
    play.addEventListener("click", () => setPlaying(!V.playing));
    slider.addEventListener("input", () => { setPlaying(false); showFrame(Number(slider.value)); });
    let drag = null;
    cv.addEventListener("mousedown", e => { drag = [e.clientX, e.clientY]; });
    window.addEventListener("mouseup", () => { drag = null; });
    window.addEventListener("mousemove", e => {
      if (!drag) return;
      V.yaw += (e.clientX - drag[0]) * 0.01;
      V.pitch = Math.max(-1.5, Math.min(1.5, V.pitch + (e.clientY - drag[1]) * 0.01));
      drag = [e.clientX, e.clientY];
      render();
    });
    cv.addEventListener("wheel", e => {
      e.preventDefault();
      V.zoom = Math.max(0.2, Math.min(5, V.zoom * (e.deltaY > 0 ? 1.1 : 0.9)));
      render();
    }, { passive: false });
    return p;
  }

  function message(text) { document.getElementById("viewer-msg").textContent = text || ""; }

  // ---- the colour scale ------------------------------------------------------------

  // Moreland's cool-warm map, the table physics/mesh_write.c colours files
  // with: t in [-1, 1] -> [r, g, b] in 0..1
  const COOLWARM = [[59, 76, 192], [68, 90, 204], [77, 104, 215], [87, 117, 225], [98, 130, 234],
    [108, 142, 241], [119, 154, 247], [130, 165, 251], [141, 176, 254], [152, 185, 255], [163, 194, 255],
    [174, 201, 253], [184, 208, 249], [194, 213, 244], [204, 217, 238], [213, 219, 230], [221, 221, 221],
    [229, 216, 209], [236, 211, 197], [241, 204, 185], [245, 196, 173], [247, 187, 160], [247, 177, 148],
    [247, 166, 135], [244, 154, 123], [241, 141, 111], [236, 127, 99], [229, 112, 88], [222, 96, 77],
    [213, 80, 66], [203, 62, 56], [192, 40, 47], [180, 4, 38]];
  function coolwarm(t) {
    if (!(t === t)) t = 0;
    const x = (Math.max(-1, Math.min(1, t)) * 0.5 + 0.5) * 32, i = Math.min(31, Math.floor(x)), w = x - i;
    return [0, 1, 2].map(c => ((1 - w) * COOLWARM[i][c] + w * COOLWARM[i + 1][c]) / 255);
  }
  // the value the job coloured by, as the files name it
  const PROPS = { H: "mean_curvature", K: "gaussian_curvature", k1: "k1", k2: "k2", K_defect: "K_defect" };
  const NAMES = { H: "mean curvature H", K: "Gaussian curvature K", k1: "principal curvature k1",
                  k2: "principal curvature k2", K_defect: "angle-defect curvature" };

  // The scale of values v (boundary: non-zero where a vertex is on the
  // boundary): the data's real min and max over the interior, and the
  // ends [lo, hi] colours run between for the mode.
  function scaleOf(v, boundary, mode) {
    let min = Infinity, max = -Infinity;
    const mags = [];
    for (let i = 0; i < v.length; i++) {
      if ((boundary && boundary[i]) || !isFinite(v[i])) continue;
      if (v[i] < min) min = v[i];
      if (v[i] > max) max = v[i];
      mags.push(Math.abs(v[i]));
    }
    if (!mags.length) return null;
    let lo = min, hi = max;
    if (mode === "robust") {
      mags.sort((a, b) => a - b);
      const r = mags[Math.min(mags.length - 1, Math.floor(0.98 * mags.length))] || Math.max(-min, max) || 1;
      lo = -r; hi = r;
    }
    return { min, max, lo, hi, mode };
  }
  // value -> t in [-1, 1]: 0 stays the neutral middle when the scale
  // straddles it (each side stretched to its own end), else the map runs
  // from lo to hi
  function tOf(x, sc) {
    if (sc.lo < 0 && sc.hi > 0) return x < 0 ? -x / sc.lo : x / sc.hi;
    return sc.hi > sc.lo ? 2 * (x - sc.lo) / (sc.hi - sc.lo) - 1 : 0;
  }
  function fmtV(x) { return Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(3) : String(Number(x.toPrecision(4))); }

  // Colours the model from its values; returns the legend's facts or null
  // (no values in the file: its own colours stay).
  function colour(m, by, mode) {
    const prop = PROPS[by] || "mean_curvature";
    const v = m.values && m.values[prop];
    if (!v) return null;
    const bnd = m.values.boundary || null;
    const sc = scaleOf(v, bnd, mode);
    if (!sc) return null;
    const n = v.length;
    m.col = new Float32Array(3 * n);
    for (let i = 0; i < n; i++) {
      const c = (bnd && bnd[i]) || !isFinite(v[i]) ? [0.25, 0.25, 0.25] : coolwarm(tOf(v[i], sc));
      m.col[3 * i] = c[0]; m.col[3 * i + 1] = c[1]; m.col[3 * i + 2] = c[2];
    }
    return Object.assign(sc, { by, prop });
  }

  function legend(sc, file) {
    const lg = document.getElementById("viewer-legend");
    lg.replaceChildren();
    for (const k of Object.keys(lg.dataset)) delete lg.dataset[k];
    lg.hidden = !sc;
    if (!sc) return;
    const span = (text, cls) => { const e = document.createElement("span"); e.textContent = text; if (cls) e.className = cls; return e; };
    // the ramp spans the real range; each stop is the colour its value gets
    const ramp = document.createElement("div");
    ramp.className = "ramp";
    const stops = [];
    for (let k = 0; k <= 64; k++) {
      const x = sc.min + (sc.max - sc.min) * k / 64, c = coolwarm(tOf(x, sc)).map(q => Math.round(255 * q));
      stops.push("rgb(" + c.join(",") + ") " + (100 * k / 64).toFixed(2) + "%");
    }
    ramp.style.background = "linear-gradient(to right, " + stops.join(", ") + ")";
    const mark = (x, text) => {
      if (!(x > sc.min && x < sc.max)) return;
      const t = span(text, "tick");
      t.style.left = (100 * (x - sc.min) / (sc.max - sc.min)).toFixed(2) + "%";
      ramp.append(t);
    };
    mark(0, "0");
    if (sc.mode === "robust") { mark(sc.lo, fmtV(sc.lo)); mark(sc.hi, fmtV(sc.hi)); }
    const row = document.createElement("div");
    row.className = "legend-row";
    row.append(span(fmtV(sc.min), "lo"), ramp, span(fmtV(sc.max), "hi"));
    const scaleSel = document.createElement("select");
    scaleSel.id = "viewer-scale";
    for (const [val, text] of [["data", "scale: data min … max"], ["robust", "scale: ±98% of |value|"]]) {
      const o = document.createElement("option");
      o.value = val; o.textContent = text; o.selected = val === sc.mode;
      scaleSel.append(o);
    }
    scaleSel.addEventListener("change", () => { V.scale = scaleSel.value; recolour(); });
    row.append(scaleSel);
    const cap = span(NAMES[sc.by] || sc.by, "muted");
    cap.className = "muted caption";
    cap.textContent = (NAMES[sc.by] || sc.by) + " per vertex (" + file + "): min " + fmtV(sc.min) + ", max " +
      fmtV(sc.max) + (sc.mode === "robust" ? "; colours saturate beyond ±" + fmtV(sc.hi) +
      " (98% of the values lie within)" : "; blue at the minimum, red at the maximum") +
      (sc.min < 0 && sc.max > 0 ? ", neutral at 0" : "") + "; grey: boundary";
    lg.append(row, cap);
    Object.assign(lg.dataset, { by: sc.by, prop: sc.prop, min: String(sc.min), max: String(sc.max),
                                lo: String(sc.lo), hi: String(sc.hi), scale: sc.mode, file });
  }

  // the curvature model again in the scale chosen
  function recolour() {
    if (!V.model || !V.model.m) return;
    const { m, by, name } = V.model;
    const sc = colour(m, by, V.scale);
    const geo = build(m);
    geo.box = V.box || bounds(m.pos);
    V.cache.set(name, geo);
    V.geo = geo;
    legend(sc, name);
    render();
  }

  // ---- parsers -------------------------------------------------------------------
  // Each returns {pos: Float32Array (3 per vertex), col: Float32Array|null
  // (3 per vertex, 0..1), nrm: Float32Array|null, tri: Uint32Array|null,
  // points: bool}.

  function parsePLY(text) {
    const lines = text.split("\n");
    if (lines[0].trim() !== "ply") throw new Error("not a PLY file");
    const elems = [];
    let k = 1;
    for (; k < lines.length; k++) {
      const t = lines[k].trim().split(/\s+/);
      if (t[0] === "format" && t[1] !== "ascii") throw new Error("binary PLY");
      if (t[0] === "element") elems.push({ name: t[1], count: Number(t[2]), props: [] });
      else if (t[0] === "property") elems[elems.length - 1].props.push(t[1] === "list" ? { name: t[4], list: true } : { name: t[2], type: t[1] });
      else if (t[0] === "end_header") { k++; break; }
    }
    const out = { pos: null, col: null, nrm: null, tri: null, points: true, values: {} };
    const tris = [];
    for (const e of elems) {
      const idx = {};
      e.props.forEach((p, i) => { idx[p.name] = i; });
      if (e.name === "vertex") {
        const n = e.count, simple = e.props.every(p => !p.list);
        out.pos = new Float32Array(3 * n);
        const hasC = "red" in idx && "green" in idx && "blue" in idx;
        const hasN = "nx" in idx && "ny" in idx && "nz" in idx;
        const scale = hasC && /char/.test(e.props[idx.red].type) ? 1 / 255 : 1;
        if (hasC) out.col = new Float32Array(3 * n);
        if (hasN) out.nrm = new Float32Array(3 * n);
        // the per-vertex values (curvature's k1 ... K_defect, boundary), in
        // double precision: the legend states their exact range
        const skip = new Set(["x", "y", "z", "nx", "ny", "nz", "red", "green", "blue", "u", "v", "vertex_id"]);
        const vals = e.props.filter(p => !p.list && !skip.has(p.name)).map(p => [p.name, idx[p.name], new Float64Array(n)]);
        for (const [name, , a] of vals) out.values[name] = a;
        for (let i = 0; i < n; i++, k++) {
          if (!simple) throw new Error("list properties on vertices");
          const t = lines[k].trim().split(/\s+/);
          for (const [, j, a] of vals) a[i] = +t[j];
          out.pos[3 * i] = +t[idx.x]; out.pos[3 * i + 1] = +t[idx.y]; out.pos[3 * i + 2] = +t[idx.z];
          if (hasC) { out.col[3 * i] = t[idx.red] * scale; out.col[3 * i + 1] = t[idx.green] * scale; out.col[3 * i + 2] = t[idx.blue] * scale; }
          if (hasN) { out.nrm[3 * i] = +t[idx.nx]; out.nrm[3 * i + 1] = +t[idx.ny]; out.nrm[3 * i + 2] = +t[idx.nz]; }
        }
      } else {
        for (let i = 0; i < e.count; i++, k++) {
          const t = lines[k].trim().split(/\s+/).map(Number);
          if (e.name !== "face") continue;
          let pos = 0;
          for (const p of e.props) {
            if (!p.list) { pos++; continue; }
            const m = t[pos];
            if (p.name === "vertex_indices" || p.name === "vertex_index")
              for (let j = 1; j + 1 < m; j++) tris.push(t[pos + 1], t[pos + 1 + j], t[pos + 2 + j]);
            pos += 1 + m;
          }
        }
      }
    }
    if (tris.length) { out.tri = new Uint32Array(tris); out.points = false; }
    return out;
  }

  function parseOBJ(text) {
    const pos = [], col = [], tris = [];
    for (const line of text.split("\n")) {
      const t = line.trim().split(/\s+/);
      if (t[0] === "v") {
        pos.push(+t[1], +t[2], +t[3]);
        if (t.length >= 7) col.push(+t[4], +t[5], +t[6]);
      } else if (t[0] === "f") {
        const ix = t.slice(1).map(c => parseInt(c.split("/")[0], 10)).map(i => (i < 0 ? pos.length / 3 + i : i - 1));
        for (let j = 1; j + 1 < ix.length; j++) tris.push(ix[0], ix[j], ix[j + 1]);
      }
    }
    return { pos: new Float32Array(pos), col: col.length === pos.length ? new Float32Array(col) : null, nrm: null,
             tri: tris.length ? new Uint32Array(tris) : null, points: tris.length === 0 };
  }

  function parseVTK(text) {
    const lines = text.split("\n");
    if (!/^# vtk DataFile/.test(lines[0]) || lines[2].trim() !== "ASCII") throw new Error("not an ASCII VTK file");
    const tok = lines.slice(4).join(" ").split(/\s+/).filter(s => s.length);
    let i = 0, n = 0;
    const out = { pos: null, col: null, nrm: null, tri: null, points: true, values: {} };
    const tris = [];
    while (i < tok.length) {
      const kw = tok[i++];
      if (kw === "POINTS") {
        n = +tok[i]; i += 2;
        out.pos = new Float32Array(3 * n);
        for (let j = 0; j < 3 * n; j++) out.pos[j] = +tok[i++];
      } else if (kw === "POLYGONS" || kw === "VERTICES") {
        const cells = +tok[i]; i += 2;
        for (let c = 0; c < cells; c++) {
          const m = +tok[i++];
          if (kw === "POLYGONS") for (let j = 1; j + 1 < m; j++) tris.push(+tok[i], +tok[i + j], +tok[i + j + 1]);
          i += m;
        }
      } else if (kw === "POINT_DATA") { i++; }
      else if (kw === "SCALARS") { // name type ncomp LOOKUP_TABLE default v...
        const name = tok[i], c = +tok[i + 2];
        if (c === 1) out.values[name] = Float64Array.from(tok.slice(i + 5, i + 5 + n), Number);
        i += 5 + c * n;
      }
      else if (kw === "VECTORS" || kw === "NORMALS") {
        const name = kw; i += 2;
        const a = new Float32Array(3 * n);
        for (let j = 0; j < 3 * n; j++) a[j] = +tok[i++];
        if (name === "NORMALS") out.nrm = a;
      } else if (kw === "TEXTURE_COORDINATES") { const d = +tok[i + 1]; i += 3 + d * n; }
      else if (kw === "COLOR_SCALARS") {
        const d = +tok[i + 1]; i += 2;
        out.col = new Float32Array(3 * n);
        for (let j = 0; j < n; j++) { for (let q = 0; q < 3; q++) out.col[3 * j + q] = +tok[i + q]; i += d; }
      } else throw new Error("VTK keyword " + kw);
    }
    if (tris.length) { out.tri = new Uint32Array(tris); out.points = false; }
    return out;
  }

  function parseCSV(text) {
    const rows = text.split("\n").filter(l => l.trim() && !l.startsWith("#"));
    const head = rows[0].split(",").map(s => s.trim());
    const ix = head.indexOf("x"), iy = head.indexOf("y"), iz = head.indexOf("z");
    if (ix < 0) throw new Error("CSV without x, y, z");
    const pos = new Float32Array(3 * (rows.length - 1));
    for (let r = 1; r < rows.length; r++) {
      const t = rows[r].split(",");
      pos[3 * r - 3] = +t[ix]; pos[3 * r - 2] = +t[iy]; pos[3 * r - 1] = +t[iz];
    }
    return { pos, col: null, nrm: null, tri: null, points: true };
  }

  function parse(name, text) {
    const ext = name.slice(name.lastIndexOf(".") + 1).toLowerCase();
    if (ext === "ply") return parsePLY(text);
    if (ext === "obj") return parseOBJ(text);
    if (ext === "vtk") return parseVTK(text);
    if (ext === "csv") return parseCSV(text);
    throw new Error("cannot show ." + ext);
  }

  // ---- geometry for WebGL: triangles expanded (3 vertices each) ------------------

  function build(m) {
    const n = m.pos.length / 3;
    const base = [0.55, 0.65, 0.8];
    if (m.points) {
      const col = m.col || new Float32Array(3 * n).map((_, i) => base[i % 3]);
      return { pos: m.pos, col, nrm: new Float32Array(3 * n), count: n, points: true, vertices: n, prims: n };
    }
    let nrm = m.nrm;
    if (!nrm) { // area-weighted vertex normals
      nrm = new Float32Array(3 * n);
      for (let t = 0; t < m.tri.length; t += 3) {
        const a = m.tri[t], b = m.tri[t + 1], c = m.tri[t + 2], p = m.pos;
        const e1 = [p[3 * b] - p[3 * a], p[3 * b + 1] - p[3 * a + 1], p[3 * b + 2] - p[3 * a + 2]];
        const e2 = [p[3 * c] - p[3 * a], p[3 * c + 1] - p[3 * a + 1], p[3 * c + 2] - p[3 * a + 2]];
        const x = e1[1] * e2[2] - e1[2] * e2[1], y = e1[2] * e2[0] - e1[0] * e2[2], z = e1[0] * e2[1] - e1[1] * e2[0];
        for (const v of [a, b, c]) { nrm[3 * v] += x; nrm[3 * v + 1] += y; nrm[3 * v + 2] += z; }
      }
    }
    const k = m.tri.length;
    const pos = new Float32Array(3 * k), col = new Float32Array(3 * k), nn = new Float32Array(3 * k);
    for (let j = 0; j < k; j++) {
      const v = m.tri[j];
      for (let q = 0; q < 3; q++) {
        pos[3 * j + q] = m.pos[3 * v + q];
        col[3 * j + q] = m.col ? m.col[3 * v + q] : base[q];
        nn[3 * j + q] = nrm[3 * v + q];
      }
    }
    return { pos, col, nrm: nn, count: k, points: false, vertices: n, prims: k / 3 };
  }

  function bounds(pos) {
    const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
    for (let i = 0; i < pos.length; i += 3)
      for (let q = 0; q < 3; q++) { lo[q] = Math.min(lo[q], pos[i + q]); hi[q] = Math.max(hi[q], pos[i + q]); }
    const c = [0, 1, 2].map(q => (lo[q] + hi[q]) / 2);
    const r = Math.max(1e-12, Math.hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]) / 2);
    return { c, r };
  }

  // ---- WebGL ---------------------------------------------------------------------------

  const VS = "attribute vec3 aPos; attribute vec3 aCol; attribute vec3 aNrm;" +
    "uniform mat4 uMVP; uniform vec3 uLight; uniform float uPoint; uniform float uSize;" +
    "varying vec3 vCol;" +
    "void main() { gl_Position = uMVP * vec4(aPos, 1.0); gl_PointSize = uSize;" +
    "  float l = length(aNrm) > 0.0 ? abs(dot(normalize(aNrm), uLight)) : 1.0;" +
    "  vCol = uPoint > 0.5 ? aCol : aCol * (0.35 + 0.65 * l); }";
  const FS = "precision mediump float; varying vec3 vCol; void main() { gl_FragColor = vec4(vCol, 1.0); }";

  function setupGL(cv) {
    const gl = cv.getContext("webgl", { preserveDrawingBuffer: true, antialias: true }) ||
               cv.getContext("experimental-webgl", { preserveDrawingBuffer: true });
    if (!gl) throw new Error("WebGL is not available in this browser");
    const sh = (type, src) => {
      const s = gl.createShader(type);
      gl.shaderSource(s, src);
      gl.compileShader(s);
      if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
      return s;
    };
    const p = gl.createProgram();
    gl.attachShader(p, sh(gl.VERTEX_SHADER, VS));
    gl.attachShader(p, sh(gl.FRAGMENT_SHADER, FS));
    gl.linkProgram(p);
    if (!gl.getProgramParameter(p, gl.LINK_STATUS)) throw new Error(gl.getProgramInfoLog(p));
    V.gl = gl;
    V.prog = p;
    V.bufs = { pos: gl.createBuffer(), col: gl.createBuffer(), nrm: gl.createBuffer() };
  }

  function mul(a, b) { // column-major 4x4
    const o = new Float32Array(16);
    for (let c = 0; c < 4; c++)
      for (let r = 0; r < 4; r++) {
        let s = 0;
        for (let k = 0; k < 4; k++) s += a[k * 4 + r] * b[c * 4 + k];
        o[c * 4 + r] = s;
      }
    return o;
  }

  function mvp(geo, aspect) {
    const { c, r } = geo.box;
    const d = 2.6 * r * V.zoom;
    const eye = [c[0] + d * Math.cos(V.pitch) * Math.sin(V.yaw), c[1] + d * Math.sin(V.pitch),
                 c[2] + d * Math.cos(V.pitch) * Math.cos(V.yaw)];
    const f = [c[0] - eye[0], c[1] - eye[1], c[2] - eye[2]];
    const fl = Math.hypot(...f);
    f.forEach((_, i) => { f[i] /= fl; });
    const up = [0, 1, 0];
    let s = [f[1] * up[2] - f[2] * up[1], f[2] * up[0] - f[0] * up[2], f[0] * up[1] - f[1] * up[0]];
    const sl = Math.hypot(...s);
    s = s.map(x => x / sl);
    const u = [s[1] * f[2] - s[2] * f[1], s[2] * f[0] - s[0] * f[2], s[0] * f[1] - s[1] * f[0]];
    const view = new Float32Array([s[0], u[0], -f[0], 0, s[1], u[1], -f[1], 0, s[2], u[2], -f[2], 0,
      -(s[0] * eye[0] + s[1] * eye[1] + s[2] * eye[2]), -(u[0] * eye[0] + u[1] * eye[1] + u[2] * eye[2]),
      f[0] * eye[0] + f[1] * eye[1] + f[2] * eye[2], 1]);
    const near = Math.max(d - 2 * r, d * 0.01), far = d + 2 * r, t = 1 / Math.tan(0.35);
    const proj = new Float32Array([t / aspect, 0, 0, 0, 0, t, 0, 0, 0, 0, (far + near) / (near - far), -1,
      0, 0, 2 * far * near / (near - far), 0]);
    return { m: mul(proj, view), light: f.map(x => -x) };
  }

  function render() {
    const gl = V.gl, g = V.geo, cv = document.getElementById("viewer");
    if (!gl || !g) return;
    // the drawing buffer follows the canvas's size on the page (4:3)
    const w = Math.max(320, Math.round(cv.clientWidth || 640));
    if (cv.width !== w) { cv.width = w; cv.height = Math.round(w * 3 / 4); }
    gl.viewport(0, 0, cv.width, cv.height);
    gl.clearColor(BG[0], BG[1], BG[2], 1);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    gl.enable(gl.DEPTH_TEST);
    gl.useProgram(V.prog);
    const attr = (name, buf, data) => {
      const loc = gl.getAttribLocation(V.prog, name);
      gl.bindBuffer(gl.ARRAY_BUFFER, buf);
      gl.bufferData(gl.ARRAY_BUFFER, data, gl.STATIC_DRAW);
      gl.enableVertexAttribArray(loc);
      gl.vertexAttribPointer(loc, 3, gl.FLOAT, false, 0, 0);
    };
    attr("aPos", V.bufs.pos, g.pos);
    attr("aCol", V.bufs.col, g.col);
    attr("aNrm", V.bufs.nrm, g.nrm);
    const M = mvp(g, cv.width / cv.height);
    gl.uniformMatrix4fv(gl.getUniformLocation(V.prog, "uMVP"), false, M.m);
    gl.uniform3fv(gl.getUniformLocation(V.prog, "uLight"), M.light);
    gl.uniform1f(gl.getUniformLocation(V.prog, "uPoint"), g.points ? 1 : 0);
    gl.uniform1f(gl.getUniformLocation(V.prog, "uSize"), g.points ? Math.max(3, 9 - Math.log10(g.count)) : 1);
    gl.drawArrays(g.points ? gl.POINTS : gl.TRIANGLES, 0, g.count);
    // what a test can check without reading the screen: drawn, and how
    // much of a 64 x 64 sample is not the background
    const px = new Uint8Array(4), step = [cv.width / 64, cv.height / 64];
    let nonblank = 0;
    for (let y = 0; y < 64; y++)
      for (let x = 0; x < 64; x++) {
        gl.readPixels(Math.floor(x * step[0]), Math.floor(y * step[1]), 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
        if (Math.abs(px[0] - BG[0] * 255) + Math.abs(px[1] - BG[1] * 255) + Math.abs(px[2] - BG[2] * 255) > 12) nonblank++;
      }
    Object.assign(cv.dataset, { drawn: "1", nonblank: String(nonblank), vertices: String(g.vertices),
                                primitives: String(g.prims), frame: String(V.frame) });
  }

  // ---- frames ----------------------------------------------------------------------------

  async function showFrame(i) {
    if (!V.frames.length) return;
    V.frame = Math.max(0, Math.min(V.frames.length - 1, i));
    const name = V.frames[V.frame], job = V.job, gen = V.gen;
    let geo = V.cache.get(name);
    if (!geo) {
      const text = await get("/v1/jobs/" + job + "/files/" + encodeURIComponent(name), true);
      if (gen !== V.gen) return;
      const m = parse(name, text);
      if (V.model && V.model.name === name) { // curvature: coloured from its values
        V.model.m = m;
        const sc = colour(m, V.model.by, V.scale);
        legend(sc, name);
        if (!sc) message("colours: the file's own (" + name + " holds no per-vertex values)");
      }
      geo = build(m);
      geo.box = V.box || bounds(m.pos);
      V.box = geo.box; // one camera for the whole sequence
      if (V.cache.size > 200) V.cache.clear();
      V.cache.set(name, geo);
    }
    V.geo = geo;
    document.getElementById("viewer-frame").value = String(V.frame);
    document.getElementById("viewer-label").textContent =
      V.frames.length > 1 ? "frame " + (V.frame + 1) + " of " + V.frames.length + ": " + name : name;
    document.getElementById("viewer").dataset.file = name;
    render();
  }

  function setPlaying(on) {
    V.playing = on && V.frames.length > 1;
    document.getElementById("viewer-play").textContent = V.playing ? "Pause" : "Play";
    clearInterval(V.timer);
    if (V.playing)
      V.timer = setInterval(() => { showFrame((V.frame + 1) % V.frames.length).catch(err => message(String(err))); }, 120);
  }

  // The files to show, in order: frames NAME_NNNNNN.EXT by number, or the
  // one result file.
  function pick(kind, names) {
    const exts = ["ply", "vtk", "obj", "csv"];
    const base = { springs: "springs", nbody: "bodies", curvature: "curvature" }[kind];
    if (!base) return [];
    const re = new RegExp("^" + base + "_(\\d+)\\.(ply|vtk|obj|csv)$");
    const frames = names.filter(n => re.test(n)).sort((a, b) => Number(re.exec(a)[1]) - Number(re.exec(b)[1]));
    if (frames.length) return frames;
    for (const e of exts) if (names.includes(base + "." + e)) return [base + "." + e];
    return [];
  }

  async function load(job, gen) {
    const p = panel();
    const cv = document.getElementById("viewer");
    p.hidden = false;
    document.getElementById("viewer-title").textContent = job.kind + " " + job.id.slice(0, 12);
    Object.assign(cv.dataset, { job: job.id, kind: job.kind, drawn: "0" });
    // the canvas and its bar only once there is something to draw: a job
    // still running, or one without a mesh, has its line of text alone
    const bar = p.querySelector(".viewer-bar");
    cv.hidden = bar.hidden = true;
    if (job.status !== "succeeded") {
      message("the job is " + job.status + "; its result appears here when it succeeds");
      return;
    }
    const list = await get("/v1/jobs/" + job.id + "/files");
    if (gen !== V.gen) return;
    V.files = list.files.map(f => f.name);
    V.frames = pick(job.kind, V.files);
    V.cache.clear();
    V.box = null;
    V.frame = 0;
    V.model = null;
    const slider = document.getElementById("viewer-frame");
    slider.max = String(Math.max(0, V.frames.length - 1));
    document.getElementById("viewer-play").hidden = V.frames.length < 2;
    slider.hidden = V.frames.length < 2;
    cv.dataset.frames = String(V.frames.length);
    if (!V.frames.length) {
      message(job.kind === "deform" ? "a deform job writes u.mtx only: a deformed mesh needs the mesh, which clsolve deform --mesh takes"
                                    : "no mesh or bodies among the job's files (" + V.files.join(", ") + ")");
      return;
    }
    cv.hidden = bar.hidden = false;
    if (!V.gl) setupGL(cv);
    message("");
    if (job.kind === "curvature")
      V.model = { name: V.frames[0], by: job.result && job.result.color ? job.result.color.by : "H", m: null };
    await showFrame(0);
  }

  // Nothing of the previous job: app.js calls this when the selection
  // changes, before the new job's document arrives.
  function reset() {
    V.gen++;
    V.key = "";
    V.job = null;
    V.model = null;
    V.geo = null;
    V.playing = false;
    clearInterval(V.timer);
    const p = document.getElementById("viewer-panel");
    if (!p) return; // never shown yet: nothing to clear
    setPlaying(false);
    p.hidden = true;
    legend(null);
    message("");
    const cv = document.getElementById("viewer");
    Object.assign(cv.dataset, { job: "", kind: "", drawn: "0", frames: "0" });
    delete cv.dataset.error;
    if (V.gl) { V.gl.clearColor(BG[0], BG[1], BG[2], 1); V.gl.clear(V.gl.COLOR_BUFFER_BIT); }
  }

  // app.js calls this with every poll of the selected job; anything but the
  // selected job is ignored.
  async function show(job) {
    const st = window.clsolve && window.clsolve.state;
    if (!job || (st && job.id !== st.selected)) return;
    const p = panel();
    if (job.kind === "cg") { if (V.job || !p.hidden) reset(); return; }
    const key = job.id + ":" + job.status;
    if (key === V.key) return;
    if (V.job !== job.id) reset();
    V.key = key;
    V.job = job.id;
    const gen = ++V.gen;
    setPlaying(false);
    try { await load(job, gen); } catch (e) {
      if (gen !== V.gen) return;
      message(String(e && e.message ? e.message : e));
      document.getElementById("viewer").dataset.error = String(e && e.message ? e.message : e);
    }
  }

  // #view=ID (app.js selects the job); #view=ID&full shows the viewer
  // alone, filling the window (pictures, presentations); &yaw=, &pitch=
  // the first view.
  function fromHash() {
    const m = /view=([0-9a-f]{32})/.exec(location.hash);
    document.body.classList.toggle("viewer-full", !!m && /[#&]full\b/.test(location.hash));
    if (!m) return;
    const yaw = /[#&]yaw=(-?[0-9.]+)/.exec(location.hash), pitch = /[#&]pitch=(-?[0-9.]+)/.exec(location.hash);
    if (yaw) V.yaw = Number(yaw[1]);
    if (pitch) V.pitch = Number(pitch[1]);
  }

  window.clsolveViewer = { show, reset };
  // app.js calls every jobSelected hook with the selected job's document at
  // each poll, every selectionChanged hook when the selection changes
  // (window.clsolve: app.js loads first)
  if (window.clsolve && window.clsolve.hooks) {
    window.clsolve.hooks.jobSelected.push(show);
    (window.clsolve.hooks.selectionChanged || []).push(reset);
  }
  window.addEventListener("hashchange", fromHash);
  // the drawing buffer follows the canvas's new size
  window.addEventListener("resize", () => { if (V.geo) render(); });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fromHash);
  else fromHash();
})();
