// strata's self-contained HTML report: renders the report JSON (embedded in
// the page as #strata-data) into tables and SVG charts. No network, no library:
// every chart is plain SVG built here, with native tooltips (<title>).
(function () {
  "use strict";
  const R = JSON.parse(document.getElementById("strata-data").textContent);
  const COLORS = ["var(--c1)", "var(--c2)", "var(--c3)", "var(--c4)", "var(--c5)", "var(--c6)", "var(--c7)", "var(--c8)"];
  const SVGNS = "http://www.w3.org/2000/svg";
  const main = document.getElementById("strata-main");

  // ---- formatting -----------------------------------------------------------
  function dur(ns) {
    if (ns === null || ns === undefined || isNaN(ns)) return "-";
    const a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + " ns";
    if (a < 1e6) return (ns / 1e3).toFixed(2) + " us";
    if (a < 1e9) return (ns / 1e6).toFixed(2) + " ms";
    return (ns / 1e9).toFixed(3) + " s";
  }
  function bytes(b) {
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(2) : b.toFixed(0)) + " " + u[i];
  }
  function num(v, d) { return v === undefined || v === null ? "-" : Number(v).toLocaleString(undefined, { maximumFractionDigits: d === undefined ? 2 : d }); }
  function pct(v) { return v === undefined || v === null ? "-" : Number(v).toFixed(1) + "%"; }
  function esc(s) { return String(s).replace(/[&<>"]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c])); }
  function trunc(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  // ---- DOM helpers ------------------------------------------------------------
  function el(tag, attrs, parent) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k]; else if (k === "html") e.innerHTML = attrs[k]; else e.setAttribute(k, attrs[k]);
    }
    if (parent) parent.appendChild(e);
    return e;
  }
  function svgEl(tag, attrs, parent) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function tip(node, text) { svgEl("title", {}, node).textContent = text; }
  function section(id, title, note) {
    const s = el("section", { id: id }, main);
    el("h2", { text: title }, s);
    if (note) el("div", { class: "note", text: note }, s);
    return s;
  }
  function table(parent, cols, rows) {
    const t = el("table", {}, parent);
    const h = el("tr", {}, el("thead", {}, t));
    cols.forEach(c => el("th", { text: c.title, class: c.num ? "num" : "" }, h));
    const b = el("tbody", {}, t);
    rows.forEach(r => {
      const tr = el("tr", {}, b);
      cols.forEach(c => el("td", { text: c.fmt ? c.fmt(r[c.key], r) : (r[c.key] === undefined ? "" : r[c.key]), class: c.num ? "num" : "" }, tr));
    });
    return t;
  }
  function legend(parent, names) {
    const l = el("div", { class: "legend" }, parent);
    names.forEach((n, i) => el("span", { text: n, style: "--sw:" + COLORS[i % COLORS.length] }, l));
  }

  // ---- charts -------------------------------------------------------------------
  function scaleLin(d0, d1, r0, r1) {
    const span = d1 - d0 || 1;
    const f = v => r0 + (v - d0) / span * (r1 - r0);
    f.ticks = n => { const out = []; const step = niceStep(span / n); for (let v = Math.ceil(d0 / step) * step; v <= d1 + 1e-9 * span; v += step) out.push(v); return out; };
    return f;
  }
  function scaleLog(d0, d1, r0, r1) {
    const l0 = Math.log10(Math.max(d0, 1e-300)), l1 = Math.log10(Math.max(d1, 1e-300));
    const span = l1 - l0 || 1;
    const f = v => r0 + (Math.log10(Math.max(v, 1e-300)) - l0) / span * (r1 - r0);
    f.ticks = () => { const out = []; for (let e = Math.floor(l0); e <= Math.ceil(l1); e++) out.push(Math.pow(10, e)); return out.filter(v => v >= d0 * 0.999 && v <= d1 * 1.001); };
    return f;
  }
  function niceStep(x) {
    const p = Math.pow(10, Math.floor(Math.log10(x || 1)));
    const m = x / p;
    return (m < 1.5 ? 1 : m < 3 ? 2 : m < 7 ? 5 : 10) * p;
  }
  function frame(parent, id, w, h) {
    return svgEl("svg", { class: "chart", id: id, viewBox: `0 0 ${w} ${h}`, preserveAspectRatio: "xMinYMin meet", role: "img" }, parent);
  }
  function axes(svg, x, y, m, w, h, xf, yf, xl, yl) {
    const g = svgEl("g", { class: "axis" }, svg);
    const grid = svgEl("g", { class: "grid" }, svg);
    y.ticks(5).forEach(v => {
      const py = y(v);
      svgEl("line", { x1: m.l, x2: w - m.r, y1: py, y2: py }, grid);
      svgEl("text", { x: m.l - 6, y: py + 4, "text-anchor": "end" }, g).textContent = yf(v);
    });
    x.ticks(6).forEach(v => {
      const px = x(v);
      svgEl("line", { x1: px, x2: px, y1: h - m.b, y2: h - m.b + 4 }, g);
      svgEl("text", { x: px, y: h - m.b + 16, "text-anchor": "middle" }, g).textContent = xf(v);
    });
    svgEl("line", { x1: m.l, x2: w - m.r, y1: h - m.b, y2: h - m.b }, g);
    svgEl("line", { x1: m.l, x2: m.l, y1: m.t, y2: h - m.b }, g);
    if (xl) svgEl("text", { x: (m.l + w - m.r) / 2, y: h - 4, "text-anchor": "middle" }, g).textContent = xl;
    if (yl) svgEl("text", { x: 12, y: (m.t + h - m.b) / 2, transform: `rotate(-90 12 ${(m.t + h - m.b) / 2})`, "text-anchor": "middle" }, g).textContent = yl;
  }

  // series: [{name, points: [[x, y], ...]}]
  function lineChart(parent, id, series, o) {
    const w = 900, h = o.height || 260, m = { l: 70, r: 16, t: 12, b: 36 };
    const xs = [], ys = [];
    series.forEach(s => s.points.forEach(p => { xs.push(p[0]); ys.push(p[1]); }));
    if (!xs.length) return null;
    const svg = frame(parent, id, w, h);
    const x0 = Math.min(...xs), x1 = Math.max(...xs);
    const y0 = o.yZero === false ? Math.min(...ys) : Math.min(0, ...ys), y1 = Math.max(...ys) * 1.05 || 1;
    const x = o.xLog ? scaleLog(x0, x1, m.l, w - m.r) : scaleLin(x0, x1, m.l, w - m.r);
    const y = scaleLin(y0, y1, h - m.b, m.t);
    axes(svg, x, y, m, w, h, o.xFmt || (v => num(v)), o.yFmt || (v => num(v)), o.xLabel, o.yLabel);
    series.forEach((s, i) => {
      const c = s.color || COLORS[i % COLORS.length];
      const d = s.points.map((p, k) => (k ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join("");
      svgEl("path", { d: d, fill: "none", stroke: c, "stroke-width": o.step ? 1.5 : 2 }, svg);
      if (s.points.length <= 200)
        s.points.forEach(p => tip(svgEl("circle", { cx: x(p[0]), cy: y(p[1]), r: 3, fill: c }, svg),
          (s.name ? s.name + ": " : "") + (o.xFmt || num)(p[0]) + " → " + (o.yFmt || num)(p[1])));
    });
    if (series.length > 1) legend(parent, series.map(s => s.name));
    return svg;
  }

  // series: [{name, color, points: [[ms, bytes], ...], peak: [ms, bytes]}]: levels as
  // steps (an allocation holds until the next event), filled, with the peak marked.
  function memoryChart(parent, id, series) {
    const w = 900, h = 280, m = { l: 80, r: 16, t: 14, b: 36 };
    const xs = [], ys = [];
    series.forEach(s => s.points.forEach(p => { xs.push(p[0]); ys.push(p[1]); }));
    if (!xs.length) return null;
    const svg = frame(parent, id, w, h);
    const x = scaleLin(Math.min(...xs), Math.max(...xs), m.l, w - m.r);
    const y = scaleLin(0, Math.max(...ys) * 1.08 || 1, h - m.b, m.t);
    axes(svg, x, y, m, w, h, v => num(v, 1), bytes, "ms", "allocated");
    series.forEach(s => {
      let d = "";
      s.points.forEach((p, k) => {
        const px = x(p[0]).toFixed(1), py = y(p[1]).toFixed(1);
        d += k ? "H" + px + "V" + py : "M" + px + "," + py;
      });
      const first = s.points[0];
      svgEl("path", { class: "mem-area", d: d + "V" + y(0).toFixed(1) + "H" + x(first[0]).toFixed(1) + "Z", fill: s.color }, svg);
      svgEl("path", { class: "mem-line", d: d, fill: "none", stroke: s.color, "stroke-width": 1.5 }, svg);
      const px = x(s.peak[0]), py = y(s.peak[1]);
      const g = svgEl("g", { class: "mem-peak" }, svg);
      svgEl("line", { x1: px, x2: px, y1: py, y2: h - m.b, stroke: s.color, "stroke-dasharray": "3 3" }, g);
      tip(svgEl("circle", { cx: px, cy: py, r: 4.5, fill: s.color, stroke: "#fff", "stroke-width": 1.5 }, g), s.name + ": peak " + bytes(s.peak[1]) + " at " + num(s.peak[0], 2) + " ms");
      svgEl("text", { x: Math.min(px + 6, w - m.r - 120), y: Math.max(py - 6, m.t + 10) }, g).textContent = "peak " + bytes(s.peak[1]);
    });
    legend(parent, series.map(s => s.name));
    return svg;
  }

  // rows: [{label, value, detail}] horizontal bars
  function barChart(parent, id, rows, o) {
    if (!rows.length) return null;
    const bh = 20, w = 900, lw = 330, m = { t: 6, b: 6 };
    const h = m.t + m.b + rows.length * bh;
    const svg = frame(parent, id, w, h);
    const max = Math.max(...rows.map(r => r.value)) || 1;
    rows.forEach((r, i) => {
      const y0 = m.t + i * bh;
      svgEl("text", { x: lw - 8, y: y0 + 14, "text-anchor": "end" }, svg).textContent = trunc(r.label, 52);
      const bw = Math.max(1, (w - lw - 110) * r.value / max);
      const rect = svgEl("rect", { x: lw, y: y0 + 3, width: bw, height: bh - 6, fill: r.color || COLORS[0], rx: 2 }, svg);
      tip(rect, r.label + ": " + (o.fmt ? o.fmt(r.value) : r.value) + (r.detail ? "\n" + r.detail : ""));
      svgEl("text", { x: lw + bw + 6, y: y0 + 14 }, svg).textContent = o.fmt ? o.fmt(r.value) : r.value;
    });
    return svg;
  }

  // rows: [{label, parts: [{name, value}]}], parts in the same order in every row
  function stackedBars(parent, id, rows, names, o) {
    if (!rows.length) return null;
    const bh = 26, w = 900, lw = 200, m = { t: 6, b: 6 };
    const h = m.t + m.b + rows.length * bh;
    const svg = frame(parent, id, w, h);
    rows.forEach((r, i) => {
      const y0 = m.t + i * bh;
      svgEl("text", { x: lw - 8, y: y0 + 17, "text-anchor": "end" }, svg).textContent = trunc(r.label, 30);
      const total = r.parts.reduce((a, p) => a + p.value, 0) || 1;
      let x = lw;
      r.parts.forEach((p, k) => {
        const pw = (w - lw - 10) * p.value / total;
        if (pw <= 0) return;
        const rect = svgEl("rect", { x: x, y: y0 + 3, width: pw, height: bh - 6, fill: COLORS[k % COLORS.length] }, svg);
        tip(rect, r.label + " — " + p.name + ": " + (o.fmt ? o.fmt(p.value) : p.value));
        if (pw > 46) svgEl("text", { x: x + 4, y: y0 + 17, fill: "#fff", style: "fill:#fff" }, svg).textContent = o.fmt ? o.fmt(p.value) : p.value;
        x += pw;
      });
    });
    legend(parent, names);
    return svg;
  }

  // points: [{x, y, label, color, shape}], roofs: [{name, peak, bw}] (log-log).
  // Each roof is drawn as its bandwidth slope up to the ridge, then flat at the peak.
  function roofline(parent, id, points, roofs) {
    points = points.filter(p => p.x > 0 && p.y > 0);
    if (!points.length) return null;
    const w = 900, h = 400, m = { l: 80, r: 20, t: 12, b: 40 };
    const svg = frame(parent, id, w, h);
    const xs = points.map(p => p.x), ys = points.map(p => p.y);
    const ridges = roofs.filter(r => r.peak > 0 && r.bw > 0).map(r => r.peak / r.bw);
    const x0 = Math.min(...xs, ...ridges, 0.1) / 2, x1 = Math.max(...xs, ...ridges, 100) * 2;
    const y0 = Math.min(...ys) / 2, y1 = Math.max(...ys, ...roofs.map(r => r.peak)) * 2;
    const x = scaleLog(x0, x1, m.l, w - m.r), y = scaleLog(y0, y1, h - m.b, m.t);
    axes(svg, x, y, m, w, h, v => num(v, 3), v => (v >= 1e12 ? (v / 1e12) + " T" : v >= 1e9 ? (v / 1e9) + " G" : v >= 1e6 ? (v / 1e6) + " M" : num(v)),
      "arithmetic intensity (FLOP/byte)", "FLOP/s");
    roofs.forEach((r, i) => {
      if (!(r.peak > 0 && r.bw > 0)) return;
      const ridge = r.peak / r.bw;
      const c = COLORS[(i + 4) % COLORS.length];
      const pts = [[x0, r.bw * x0], [ridge, r.peak], [x1, r.peak]].map(p => [p[0], Math.max(p[1], y0)]);
      const path = svgEl("path", { d: pts.map((p, k) => (k ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(""), fill: "none", stroke: c, "stroke-dasharray": r.primary ? "" : "6 3", "stroke-width": r.primary ? 2 : 1.2, class: "roof" }, svg);
      tip(path, r.name + ": " + num(r.peak / 1e12) + " TFLOP/s, " + num(r.bw / 1e9) + " GB/s, ridge " + num(ridge) + " FLOP/byte");
      svgEl("text", { x: Math.min(x(ridge) + 4, w - m.r - 160), y: y(r.peak) - 4, fill: c }, svg).textContent = r.name + " (ridge " + num(ridge, 1) + ")";
    });
    points.forEach(p => {
      const cx = x(p.x), cy = y(p.y), sz = p.r || 4;
      const node = p.shape === "square"
        ? svgEl("rect", { x: cx - sz, y: cy - sz, width: 2 * sz, height: 2 * sz, fill: p.color, "fill-opacity": 0.75 }, svg)
        : p.shape === "diamond"
          ? svgEl("path", { d: `M${cx},${cy - sz * 1.6}L${cx + sz * 1.6},${cy}L${cx},${cy + sz * 1.6}L${cx - sz * 1.6},${cy}Z`, fill: p.color, stroke: "var(--fg)", "fill-opacity": 0.9 }, svg)
          : svgEl("circle", { cx: cx, cy: cy, r: sz, fill: p.color, "fill-opacity": 0.6 }, svg);
      tip(node, p.label);
    });
    return svg;
  }

  // ---- sections -------------------------------------------------------------------
  const T = R.trace || {};
  const hdr = document.getElementById("strata-header");
  el("h1", { text: "strata report" }, hdr);
  el("div", { class: "meta", text: (T.path || "") + (T.source ? "  ·  " + T.source : "") }, hdr);
  if (R.manifest && R.manifest.command) el("div", { class: "meta", text: "$ " + R.manifest.command.join(" ") + (R.manifest.exit_status !== undefined ? "   (exit status " + JSON.stringify(R.manifest.exit_status) + ")" : "") }, hdr);

  {
    const s = section("overview", "Overview");
    const k = el("div", { class: "kpis" }, s);
    const kpi = (v, label) => { const d = el("div", { class: "kpi" }, k); el("div", { class: "v", text: v }, d); el("div", { class: "k", text: label }, d); };
    kpi(dur(T.duration_ns), "duration");
    if (R.steps && R.steps.count) { kpi(String(R.steps.count), "steps"); kpi(dur(R.steps.p50_ns), "step p50"); }
    if (R.steps && R.steps.throughput_per_s) kpi(num(R.steps.throughput_per_s) + "/s", "throughput");
    kpi(num(T.events, 0), "events");
    kpi(num(T.lost_events, 0), "lost events");
    kpi(String(T.processes || 0) + " / " + String(T.threads || 0), "processes / threads");
  }

  {
    const f = R.findings || [];
    const s = section("findings", "Findings", f.length ? "Most important first; each with its evidence and the step time it could save." : null);
    if (!f.length) el("div", { class: "empty", text: "No finding: no rule fired on this trace." }, s);
    f.forEach(x => {
      const d = el("div", { class: "finding" }, s);
      el("span", { class: "gain", text: "≈ " + pct(x.estimated_gain_pct) + " of step time" }, d);
      el("div", { class: "cat", text: x.category }, d);
      el("div", { class: "title", text: x.title }, d);
      const ev = x.evidence || {};
      el("pre", { text: typeof ev === "string" ? ev : (ev.summary || "") + (ev.involved && ev.involved.length ? "\ninvolved: " + ev.involved.slice(0, 8).join(", ") : "") + (ev.where && ev.where.length ? "\nwhere: " + ev.where.slice(0, 4).join("\n       ") : "") }, d);
      el("div", { text: "Suggestion: " + x.suggestion }, d);
      const w = x.what_if || {};
      if (w.change) el("div", { class: "note", text: "What-if: " + w.change + "; step " + dur(w.step_ns) + " → " + dur(w.step_after_ns) }, d);
    });
  }

  {
    // Where each step's time goes: the step thread's parts (they sum to the
    // step), the mean first, then each step, stacked.
    const FS = (R.framework && R.framework.steps) || {};
    const B = FS.breakdown || {};
    const mean = B.host_ns || {};
    const names = Object.keys(mean).filter(k => mean[k] > 0).sort((a, b) => mean[b] - mean[a]);
    if (names.length && B.counted_steps) {
      const s = section("step-breakdown", "Where the step's time goes",
        `the step's thread (${B.thread || "?"}), mean of ${B.counted_steps} counted steps, then the steps in the report's order (slowest first, up to 40); the parts sum to the step` +
        (B.device_busy_ns !== undefined && B.counted_ns ? ` · device busy ${pct(100 * B.device_busy_ns / B.counted_ns)}` : ""));
      const rows = [{ label: "mean step", parts: names.map(n => ({ name: n, value: mean[n] / B.counted_steps })) }];
      (FS.steps || []).filter(x => x.breakdown && x.breakdown.host_ns && !x.skipped).slice(0, 40).forEach(x => {
        rows.push({ label: "step " + x.number, parts: names.map(n => ({ name: n, value: x.breakdown.host_ns[n] || 0 })) });
      });
      stackedBars(s, "chart-step-breakdown", rows, names, { fmt: dur });
    }
  }

  if (R.steps && R.steps.durations_ns && R.steps.durations_ns.length) {
    const s = section("steps", "Step time", `${R.steps.count} steps · mean ${dur(R.steps.mean_ns)} · p50 ${dur(R.steps.p50_ns)} · p90 ${dur(R.steps.p90_ns)} · p99 ${dur(R.steps.p99_ns)}`);
    lineChart(s, "chart-steps", [{ name: "step", points: R.steps.durations_ns.map((v, i) => [i, v]) }],
      { xLabel: "step", yLabel: "duration", yFmt: dur, xFmt: v => num(v, 0) });
  }

  {
    // Where device time went, per device; without a device, where host time went
    // (self time) by kind of work when there are several kinds, else by the
    // largest items. Nothing to break down (a plain program): no section.
    const devs = (R.gpu && R.gpu.devices) || [];
    if (devs.length) {
      const s = section("breakdown", "Time breakdown");
      const names = ["compute", "communication", "memory", "idle"];
      stackedBars(s, "chart-breakdown", devs.map(d => ({
        label: (d.rank !== undefined && d.rank >= 0 ? "rank " + d.rank + " " : "") + "device " + d.device,
        parts: names.map(n => ({ name: n, value: (d.breakdown_pct || {})[n] || 0 })),
      })), names, { fmt: v => v.toFixed(1) + "%" });
      el("div", { class: "note", text: "Idle split (host wait / kernel wait / other): " + devs.map(d => { const b = d.idle_breakdown_pct || {}; return "device " + d.device + ": " + pct(b.host_wait) + " / " + pct(b.kernel_wait) + " / " + pct(b.other); }).join("; ") }, s);
    } else {
      const spans = ((R.ops && R.ops.length ? R.ops : R.spans) || []).slice().sort((a, b) => (b.self_ns || 0) - (a.self_ns || 0));
      const byKind = {};
      spans.forEach(x => { byKind[x.kind || "op"] = (byKind[x.kind || "op"] || 0) + (x.self_ns || 0); });
      let parts = Object.keys(byKind).map(n => ({ name: n, value: byKind[n] }));
      if (parts.length < 2) {
        parts = spans.slice(0, 6).map(x => ({ name: x.name, value: x.self_ns || 0 }));
        const rest = spans.slice(6).reduce((a, x) => a + (x.self_ns || 0), 0);
        if (rest > 0) parts.push({ name: "other", value: rest });
      }
      parts = parts.filter(p => p.value > 0);
      if (parts.length) {
        const s = section("breakdown", "Time breakdown");
        stackedBars(s, "chart-breakdown", [{ label: "host self time", parts: parts }], parts.map(p => p.name), { fmt: dur });
      }
    }
  }

  if (R.critical_path && R.critical_path.items && R.critical_path.items.length) {
    const cp = R.critical_path;
    const s = section("critical-path", "Critical path", "Mean time per step on the chain of work that set the step's length.");
    barChart(s, "chart-critical-path", cp.items.slice(0, 15).map(it => ({ label: it.name + " (" + it.kind + ")", value: it.on_path_ns, color: it.kind === "wait" ? "var(--c8)" : "var(--c4)", detail: pct(100 * it.share) + " of the step" })), { fmt: dur });
    if (cp.slack && cp.slack.length)
      table(s, [{ key: "name", title: "off the path" }, { key: "kind", title: "kind" }, { key: "slack_ns", title: "slack", num: true, fmt: dur }], cp.slack.slice(0, 8));
  }

  {
    const rows = R.ops && R.ops.length ? R.ops : (R.spans || []);
    if (rows.length) {
      const title = R.ops && R.ops.length ? "Top ops" : "Top spans";
      const s = section("top-ops", title, "By total time; self time and device time in the tooltips and table.");
      barChart(s, "chart-top-ops", rows.slice(0, 15).map(o => ({ label: o.name, value: o.total_ns, detail: "count " + o.count + ", self " + dur(o.self_ns) + (o.gpu_ns ? ", GPU " + dur(o.gpu_ns) : "") })), { fmt: dur });
      table(s, [{ key: "name", title: "name" }, { key: "count", title: "count", num: true, fmt: v => num(v, 0) },
      { key: "total_ns", title: "total", num: true, fmt: dur }, { key: "self_ns", title: "self", num: true, fmt: dur },
      { key: "gpu_ns", title: "device", num: true, fmt: v => v ? dur(v) : "" }], rows.slice(0, 20));
    }
  }

  if (R.kernels && R.kernels.length) {
    const s = section("top-kernels", "Top kernels", "By total device time.");
    barChart(s, "chart-top-kernels", R.kernels.slice(0, 15).map(k => ({ label: k.name, value: k.total_ns, color: "var(--c2)", detail: "count " + k.count + ", " + pct(k.pct_gpu_time) + " of GPU time" })), { fmt: dur });
  }

  if (R.roofline && R.roofline.points && R.roofline.points.length) {
    const rf = R.roofline;
    const note = rf.device ? "Device: " + rf.device + (rf.source ? " · peaks from " + rf.source : "") +
      (rf.ridge ? " · ridge " + num(rf.ridge, 1) + " FLOP/byte (" + rf.roof + ")" : "") : "No device peaks known: intensities only.";
    const s = section("roofline", "Roofline", note);
    const COL = { compute: "var(--c4)", memory: "var(--c1)", "": "var(--c8)" };
    const SHAPE = { kernel: "circle", op: "square", step: "diamond" };
    const pts = rf.points.filter(p => p.intensity > 0 && p.flops_per_s > 0);
    const maxT = Math.max(...pts.map(p => p.time_ns || 0), 1);
    roofline(s, "chart-roofline", pts.map(p => ({
      x: p.intensity, y: p.flops_per_s, color: COL[p.bound || ""], shape: SHAPE[p.level],
      r: p.level === "step" ? 6 : 3 + 5 * Math.sqrt((p.time_ns || 0) / maxT),
      label: `${p.name} [${p.level}, ${p.count}x]: ${num(p.intensity)} FLOP/byte, ${num(p.flops_per_s / 1e9)} GFLOP/s, ${dur(p.time_ns)}, ` +
        `${pct(p.pct_of_roof)} of the ${p.roof || "?"} roof (${p.bound || "unclassified"}-bound)${p.measured ? ", hardware counters" : ", estimated"}`
    })), (rf.roofs || []).map(r => ({ name: r.name, peak: r.peak_flops, bw: r.bandwidth_bytes_per_s, primary: r.name === rf.roof })));
    const lg = el("div", { class: "legend" }, s);
    [["memory-bound", COL.memory], ["compute-bound", COL.compute]].forEach(([n, c]) => el("span", { text: n, style: "--sw:" + c }, lg));
    el("span", { class: "shapes", text: "● kernel  ■ op  ◆ step (size: time)" }, lg);
    table(s, [
      { title: "name", key: "name", fmt: v => trunc(v, 70) }, { title: "level", key: "level" },
      { title: "count", key: "count", num: true, fmt: v => num(v, 0) }, { title: "time", key: "time_ns", num: true, fmt: dur },
      { title: "FLOP/byte", key: "intensity", num: true, fmt: v => num(v, 2) }, { title: "GFLOP/s", key: "flops_per_s", num: true, fmt: v => num(v / 1e9, 1) },
      { title: "% of roof", key: "pct_of_roof", num: true, fmt: pct }, { title: "bound", key: "bound" }, { title: "roof", key: "roof" }],
      rf.points.filter(p => p.level === "step").concat(rf.points.filter(p => p.level !== "step").sort((a, b) => b.time_ns - a.time_ns).slice(0, 15)));
  }

  if (R.memory && R.memory.devices && R.memory.devices.length) {
    const devs = R.memory.devices.filter(d => d.timeline && d.timeline.length);
    const s = section("memory", "Memory", "Allocated bytes per device over time (thinned keeping each stretch's low and high, so the peak stays); the peak is marked.");
    const label = d => d.process + " · " + (d.device === "host" ? "host" : "device " + d.device) + (d.layer === "runtime" ? " (runtime allocations)" : "");
    const t0 = Math.min(...devs.map(d => d.timeline[0][0]));
    if (devs.length) memoryChart(s, "chart-memory", devs.map((d, i) => ({ name: label(d), color: COLORS[i % COLORS.length], points: d.timeline.map(p => [(p[0] - t0) / 1e6, p[1]]), peak: [(d.peak_ts_ns - t0) / 1e6, d.peak_bytes] })));
    R.memory.devices.forEach(d => {
      const c = d.churn || {};
      const m = (k, f) => c[k] ? (f || (v => num(v, 1)))(c[k].mean) + " (max " + (f || (v => num(v, 0)))(c[k].max) + ")" : "-";
      el("h3", { text: label(d) + ": peak " + bytes(d.peak_bytes) + (d.peak_step !== null && d.peak_step !== undefined ? " in step " + d.peak_step : "") +
        (d.reserved_at_peak ? " · reserved " + bytes(d.reserved_at_peak) + " · fragmentation " + pct(100 * d.fragmentation) : "") }, s);
      if (c.steps)
        el("div", { class: "note", text: "Per step (" + c.steps + " steps, mean): " + m("allocs_per_step") + " allocations, " + m("bytes_allocated_per_step", bytes) + " allocated, " +
          m("temporaries_per_step") + " temporaries of " + m("temporary_bytes_per_step", bytes) + " freed within their step." }, s);
      if (d.live_at_peak && d.live_at_peak.length)
        table(s, [{ key: "name", title: "live at the peak, allocated by" }, { key: "bytes", title: "bytes", num: true, fmt: bytes },
        { key: "count", title: "blocks", num: true, fmt: v => v ? num(v, 0) : "-" }], d.live_at_peak.slice(0, 12));
      else el("div", { class: "empty", text: "Live allocations at the peak unknown: the allocator events carry no addresses." }, s);
    });
  }

  if (R.sweep && R.sweep.points && R.sweep.points.length) {
    const sw = R.sweep;
    const pts = sw.points.filter(p => !p.error && p.numeric !== null);
    const s = section("sweep", "Throughput across " + sw.param, sw.saturation ? "Saturates at " + sw.param + "=" + sw.saturation : null);
    lineChart(s, "chart-sweep", [{ name: sw.throughput_unit, points: pts.map(p => [p.numeric, p.throughput]) }],
      { xLabel: sw.param, yLabel: sw.throughput_unit, xLog: pts.every(p => p.numeric > 0), xFmt: v => num(v) });
    table(s, [{ key: "value", title: sw.param }, { key: "step_p50_ns", title: "step p50", num: true, fmt: dur },
    { key: "throughput", title: sw.throughput_unit, num: true, fmt: v => num(v) }], sw.points);
  }

  // ---- training: throughput and data wait ---------------------------------------
  const FW = R.framework || {};
  const FS = FW.steps || {};
  if (FS.count) {
    const perStep = Array.isArray(FS.steps) ? FS.steps : [];
    const note = [FS.count + " steps" + (FS.skipped ? " (" + FS.skipped + " warm-up skipped)" : ""),
    FS.samples_per_s > 0 ? num(FS.samples_per_s, 1) + " samples/s" + (FS.batch_size ? " (batch " + FS.batch_size + ")" : "") : "throughput unknown (no batch size)",
    pct(FS.data_wait_pct) + " of step time waiting for data (DataLoader __next__)"].join(" · ");
    const s = section("throughput", "Throughput and data wait", note);
    const k = el("div", { class: "kpis" }, s);
    const kpi = (v, label) => { const d = el("div", { class: "kpi" }, k); el("div", { class: "v", text: v }, d); el("div", { class: "k", text: label }, d); };
    kpi(FS.samples_per_s > 0 ? num(FS.samples_per_s, 1) + "/s" : "-", "samples per second");
    kpi(pct(FS.data_wait_pct), "data wait");
    kpi(dur(FS.p50_ns), "step p50");
    kpi(dur(FS.p90_ns), "step p90");
    const counted = perStep.filter(x => !x.skipped);
    if (counted.length)
      lineChart(s, "chart-data-wait", [
        { name: "step time", points: counted.map(x => [x.number, x.duration_ns]) },
        { name: "data wait", points: counted.map(x => [x.number, x.data_wait_ns || 0]) }],
        { xLabel: "step", yLabel: "time", yFmt: dur, xFmt: v => num(v, 0) });
  }

  // ---- modules ---------------------------------------------------------------------
  if (Array.isArray(FW.modules) && FW.modules.length) {
    const s = section("modules", "Modules", "nn.Module forwards by total time (self: outside nested modules).");
    barChart(s, "chart-modules", FW.modules.slice(0, 15).map(m => ({ label: m.name, value: m.total_ns, color: "var(--c5)", detail: "count " + m.count + ", self " + dur(m.self_ns) })), { fmt: dur });
    table(s, [{ key: "name", title: "module" }, { key: "count", title: "count", num: true, fmt: v => num(v, 0) },
    { key: "total_ns", title: "total", num: true, fmt: dur }, { key: "self_ns", title: "self", num: true, fmt: dur }], FW.modules.slice(0, 20));
  }

  // ---- layers ----------------------------------------------------------------------
  if (R.layers && Array.isArray(R.layers.layers) && R.layers.layers.length) {
    const L = R.layers;
    const s = section("layers", "Layers", "PyTorch modules (inclusive: a module holds its submodules) and TensorFlow name scopes, by total time; % of " +
      (L.step_basis === "steps" ? "step" : "trace") + " time." + (L.cost_skipped ? " FLOPs: " + L.cost_skipped + "." : ""));
    const cols = [{ key: "name", title: "layer", fmt: v => trunc(v, 70) },
    { key: "depth", title: "depth", num: true, fmt: (v, r) => v + (r.leaf && r.framework === "pytorch" ? " leaf" : "") },
    { key: "occurrences", title: "calls", num: true, fmt: v => num(v, 0) }, { key: "total_ns", title: "total", num: true, fmt: dur },
    { key: "mean_ns", title: "mean", num: true, fmt: dur }, { key: "step_pct", title: "% step", num: true, fmt: pct },
    { key: "cpu_ns", title: "CPU ops", num: true, fmt: dur }];
    if (L.has_device) cols.push({ key: "device_ns", title: "device", num: true, fmt: dur });
    if (L.has_memory) cols.push({ key: "alloc_bytes", title: "allocated", num: true, fmt: bytes }, { key: "peak_bytes", title: "peak", num: true, fmt: bytes });
    if (L.has_cost) cols.push({ key: "flops", title: "GFLOP", num: true, fmt: (v, r) => r.estimated_ops ? num(v / 1e9, 3) : "-" },
      { key: "intensity", title: "FLOP/byte", num: true, fmt: (v, r) => r.estimated_ops ? num(v, 2) : "-" }, { key: "bound", title: "bound" });
    table(s, cols, L.layers.slice(0, 30));
  }

  // ---- the OS level ------------------------------------------------------------------
  const OS = R.os || {};
  if (Array.isArray(OS.threads) && OS.threads.length) {
    const th = OS.threads;
    const s = section("os-threads", "Threads on and off CPU", "Each thread's time on CPU, waiting for a CPU (preempted or just woken) and blocked; the main off-CPU cause in the table.");
    const names = ["on CPU", "preempted / runnable", "blocked", "unknown"];
    stackedBars(s, "chart-os-threads", th.slice(0, 15).map(x => ({
      label: x.thread + (x.process ? " · " + x.process : ""),
      parts: [x.on_cpu_ns, x.runnable_ns, x.blocked_ns, x.unknown_ns].map((v, i) => ({ name: names[i], value: v || 0 })),
    })), names, { fmt: dur });
    const cause = x => { const c = (x.off_cpu_causes || []).find(c => c.category !== "preempted"); return c ? c.cause + " " + dur(c.total_ns) : ""; };
    table(s, [{ key: "thread", title: "thread" }, { key: "process", title: "process" },
    { key: "on_cpu_ns", title: "on CPU", num: true, fmt: dur }, { key: "off_cpu_ns", title: "off CPU", num: true, fmt: dur },
    { key: "runnable_ns", title: "preempted", num: true, fmt: dur }, { key: "blocked_ns", title: "blocked", num: true, fmt: dur },
    { key: "switches", title: "switches", num: true, fmt: v => num(v, 0) }, { key: "syscalls", title: "syscalls", num: true, fmt: v => num(v, 0) },
    { key: "samples", title: "samples", num: true, fmt: v => num(v, 0) }, { key: "cause", title: "top off-CPU cause", fmt: (v, r) => cause(r) }], th.slice(0, 30));
    if (Array.isArray(OS.off_cpu) && OS.off_cpu.length) {
      el("h3", { text: "Off-CPU time by cause" }, s);
      table(s, [{ key: "cause", title: "cause" }, { key: "category", title: "category" }, { key: "count", title: "count", num: true, fmt: v => num(v, 0) },
      { key: "total_ns", title: "total", num: true, fmt: dur }, { key: "max_ns", title: "max", num: true, fmt: dur }], OS.off_cpu.slice(0, 20));
    }
  }
  const SMP = OS.samples || {};
  if (SMP.total) {
    const funcs = (SMP.functions || []).filter(f => f.self > 0);
    const s = section("os-samples", "CPU samples", num(SMP.total, 0) + " samples; the functions they landed in (self), with the samples that had the function anywhere on the stack (total).");
    barChart(s, "chart-os-samples", funcs.slice(0, 15).map(f => ({ label: f.function + (f.module ? " [" + f.module + "]" : ""), value: f.self, color: "var(--c3)", detail: "total " + f.total + " · " + f.kind })), { fmt: v => num(v, 0) });
    const share = v => pct(100 * v / SMP.total);
    table(s, [{ key: "function", title: "function (innermost)" }, { key: "module", title: "module" }, { key: "kind", title: "kind" },
    { key: "self", title: "self", num: true, fmt: v => num(v, 0) }, { key: "self_share", title: "", num: true, fmt: (v, r) => share(r.self) },
    { key: "total", title: "total", num: true, fmt: v => num(v, 0) }], (SMP.functions || []).slice(0, 20));
    const py = (SMP.python_functions || []).filter(f => f.self > 0);
    if (py.length) {
      el("h3", { text: "Python functions (innermost Python frame of " + num(SMP.python_samples, 0) + " samples)" }, s);
      table(s, [{ key: "function", title: "function" }, { key: "file", title: "file" }, { key: "self", title: "self", num: true, fmt: v => num(v, 0) },
      { key: "total", title: "total", num: true, fmt: v => num(v, 0) }], py.slice(0, 20));
    }
    const ops = (SMP.ops || []).filter(o => o.name !== "(no span)");
    if (ops.length) {
      el("h3", { text: "By innermost span or op" }, s);
      table(s, [{ key: "name", title: "span / op" }, { key: "samples", title: "samples", num: true, fmt: v => num(v, 0) },
      { key: "top_function", title: "top function" }], ops.slice(0, 20));
    }
  }
  if (Array.isArray(OS.syscalls) && OS.syscalls.length) {
    const s = section("os-syscalls", "System calls", "By total time inside the call (blocked time included).");
    table(s, [{ key: "name", title: "name" }, { key: "count", title: "count", num: true, fmt: v => num(v, 0) },
    { key: "errors", title: "errors", num: true, fmt: v => num(v, 0) }, { key: "total_ns", title: "total", num: true, fmt: dur },
    { key: "mean_ns", title: "mean", num: true, fmt: dur }, { key: "p99_ns", title: "p99", num: true, fmt: dur },
    { key: "max_ns", title: "max", num: true, fmt: dur }], OS.syscalls.slice(0, 25));
  }

  if (R.counters && R.counters.length) {
    const s = section("counters", "Counters");
    table(s, [{ key: "name", title: "name" }, { key: "process", title: "process" }, { key: "samples", title: "samples", num: true },
    { key: "min", title: "min", num: true, fmt: v => num(v) }, { key: "mean", title: "mean", num: true, fmt: v => num(v) },
    { key: "max", title: "max", num: true, fmt: v => num(v) }], R.counters.slice(0, 30));
  }

  if (T.streams && T.streams.length) {
    const s = section("streams", "Streams", "Events and lost events per stream.");
    table(s, [{ key: "process", title: "process" }, { key: "kind", title: "kind" }, { key: "tid", title: "tid", num: true },
    { key: "name", title: "name" }, { key: "events", title: "events", num: true, fmt: v => num(v, 0) },
    { key: "lost_events", title: "lost", num: true, fmt: v => num(v, 0) }], T.streams.slice(0, 40));
  }

  {
    const missing = (R.collectors || []).filter(c => c.state !== "ok");
    if (missing.length) {
      const s = section("not-recorded", "Not recorded", "What each collector could not record, or was not asked to, and why.");
      table(s, [{ key: "collector", title: "collector" }, { key: "state", title: "state" }, { key: "process", title: "process" },
      { key: "detail", title: "why" }], missing);
    }
  }

  if (R.warnings && R.warnings.length) {
    const s = section("warnings", "Warnings");
    const ul = el("ul", {}, s);
    R.warnings.forEach(w => el("li", { text: w }, ul));
  }
  document.body.setAttribute("data-rendered", "1");
})();
