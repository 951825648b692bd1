// strata view: the main view (summary, findings, steps) and the timeline.
// Every number comes from the REST API (/api/v1, docs/api/openapi.yaml); the
// timeline asks the server for the visible range only (levels of detail when
// zoomed out, slices when zoomed in) and never holds the whole trace.
'use strict';

const LABEL_W = 200, COUNTER_H = 30, STATE_H = 6, ROW_H = 14, LANE_PAD = 4, DETAIL_NS_PER_PX = 20000, MAX_ROWS = 12;
const query = new URLSearchParams(location.search);
const token = query.get('token');
const S = window.strataState = {
  traces: [], trace: 0, info: null, summary: null, steps: [], lanes: [], view: { start: 0, end: 1 },
  tiles: {}, slices: {}, counters: {}, states: {}, syscalls: {}, level: 0, detail: false, selected: null, search: '', fetches: 0, draws: 0,
  drawnTiles: 0, drawnSlices: 0, error: null,
};

function api(path, params, body) {
  const q = new URLSearchParams(params || {});
  if (token) q.set('token', token);
  const qs = q.toString();
  const init = body === undefined ? {} :
    { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) };
  return fetch('/api/v1/' + path + (qs ? '?' + qs : ''), init).then(async r => {
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status));
    return body;
  });
}

const $ = id => document.getElementById(id);
function status(text) { $('status').textContent = text; }
function fmtNs(ns) {
  const a = Math.abs(ns);
  if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
  if (a >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
  if (a >= 1e3) return (ns / 1e3).toFixed(2) + ' µs';
  return Math.round(ns) + ' ns';
}
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}
// The step breakdown's parts keep their colours from one trace to the next.
const PART_COLORS = { compute: '#43a047', dispatch: '#8e24aa', python: '#fb8c00', copy: '#1e88e5', input: '#e53935',
  allocation: '#6d4c41', sync: '#fdd835', io: '#00acc1', idle: '#bdbdbd', other: '#757575' };
function partColor(k) { return PART_COLORS[k] || `hsl(${hue(k)},55%,60%)`; }
function hue(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return h % 360;
}

// --- main view ------------------------------------------------------------

function renderSummary() {
  const j = S.summary, head = $('headline');
  head.replaceChildren();
  const st = (j.framework && j.framework.steps) || {};
  const steps = j.steps || {};
  const rows = [];
  if (st.count) {
    rows.push(`${st.count} steps, mean ${fmtNs(st.mean_ns)}, p50 ${fmtNs(st.p50_ns)}, p90 ${fmtNs(st.p90_ns)}`);
    if (st.samples_per_s) rows.push(`throughput ${st.samples_per_s.toFixed(1)} samples/s` +
                                    (st.batch_size ? ` (batch ${st.batch_size})` : ''));
  } else if (steps.count) {
    rows.push(`${steps.count} steps`);
  }
  const devs = (j.gpu && j.gpu.devices) || [];
  for (const d of devs) {
    const total = (d.busy_ns || 0) + (d.idle_ns || 0);
    if (total > 0) rows.push(`${d.label || 'device ' + d.device}: busy ${(100 * d.busy_ns / total).toFixed(1)}%`);
  }
  if (j.trace) rows.push(`${j.trace.events} events over ${fmtNs(j.trace.duration_ns || 0)}`);
  for (const r of rows) head.appendChild(el('div', r));
  const list = $('findings');
  list.replaceChildren();
  for (const f of (j.findings || []).slice(0, 5)) {
    const li = el('li');
    li.appendChild(el('span', f.title + ' '));
    if (f.estimated_gain_pct !== undefined) li.appendChild(el('span', `(est. gain ${f.estimated_gain_pct.toFixed(1)}%)`, 'gain'));
    if (f.suggestion) li.appendChild(el('div', f.suggestion));
    list.appendChild(li);
  }
  if (!list.children.length) list.appendChild(el('li', 'none'));
  const bd = $('breakdown');
  bd.replaceChildren();
  const pct = (st.breakdown && st.breakdown.host_pct) || {};
  const old = $('legend');
  if (old) old.remove();
  const legend = el('div');
  legend.id = 'legend';
  for (const [k, v] of Object.entries(pct).sort((a, b) => b[1] - a[1])) {
    if (v <= 0) continue;
    const part = el('div');
    part.style.width = v + '%';
    part.style.background = partColor(k);
    part.title = `${k} ${v.toFixed(1)}%`;
    bd.appendChild(part);
    const tag = el('span', `${k} ${v.toFixed(1)}%`);
    tag.style.borderLeft = `10px solid ${partColor(k)}`;
    legend.appendChild(tag);
  }
  bd.after(legend);
}

// A table of `rows` with `cols` [[title, key or function, number?]]; at most 200 rows.
function table(rows, cols) {
  const t = el('table', undefined, 'rows'), head = el('tr');
  for (const [title] of cols) head.appendChild(el('th', title));
  t.appendChild(head);
  for (const r of (rows || []).slice(0, 200)) {
    const tr = el('tr');
    for (const [, key, num] of cols) {
      const v = typeof key === 'function' ? key(r) : r[key];
      const td = el('td', v === undefined || v === null ? '' : String(v), num ? 'num' : undefined);
      td.title = td.textContent;
      tr.appendChild(td);
    }
    t.appendChild(tr);
  }
  return t;
}

function renderAnalyses() {
  const j = S.summary;
  // Findings: evidence, the what-if that gives the gain, the fix.
  const fd = $('findings-tab');
  fd.replaceChildren();
  for (const f of j.findings || []) {
    const d = el('div', undefined, 'finding');
    d.appendChild(el('b', `[${f.category}] ${f.title}`));
    if (f.estimated_gain_pct !== undefined) d.appendChild(el('div', `estimated gain ${f.estimated_gain_pct.toFixed(1)}% of step time`, 'gain'));
    if (f.evidence && f.evidence.summary) d.appendChild(el('div', 'evidence: ' + f.evidence.summary, 'evidence'));
    if (f.evidence && f.evidence.involved && f.evidence.involved.length)
      d.appendChild(el('div', 'involved: ' + f.evidence.involved.slice(0, 8).join(', '), 'evidence'));
    if (f.what_if && f.what_if.change)
      d.appendChild(el('div', `what-if: ${f.what_if.change}: step ${fmtNs(f.what_if.step_ns)} -> ${fmtNs(f.what_if.step_after_ns)}`, 'whatif'));
    if (f.suggestion) d.appendChild(el('div', 'fix: ' + f.suggestion));
    fd.appendChild(d);
  }
  if (!fd.children.length) fd.appendChild(el('div', 'No findings.'));
  // Framework ops and modules, then host ops with their device time.
  const ops = $('ops-tab'), fw = j.framework || {};
  ops.replaceChildren();
  if (fw.ops && fw.ops.length) {
    ops.appendChild(el('h2', 'Framework ops'));
    ops.appendChild(table(fw.ops, [['op', 'name'], ['count', 'count', 1], ['total', r => fmtNs(r.total_ns), 1],
                                   ['self', r => fmtNs(r.self_ns), 1], ['self %', r => (r.self_pct || 0).toFixed(1), 1]]));
  }
  if (fw.modules && fw.modules.length) {
    ops.appendChild(el('h2', 'Modules'));
    ops.appendChild(table(fw.modules, [['module', 'name'], ['count', 'count', 1], ['total', r => fmtNs(r.total_ns), 1],
                                       ['self', r => fmtNs(r.self_ns), 1]]));
  }
  if (j.ops && j.ops.length) {
    ops.appendChild(el('h2', 'Ops and their device time'));
    ops.appendChild(table(j.ops, [['op', 'name'], ['count', 'count', 1], ['total', r => fmtNs(r.total_ns), 1],
                                  ['kernels', 'kernels', 1], ['device', r => fmtNs(r.gpu_ns || 0), 1]]));
  }
  if (!ops.children.length) ops.appendChild(el('div', 'No ops recorded.'));
  const kt = $('kernels-tab');
  kt.replaceChildren();
  if (j.kernels && j.kernels.length) {
    kt.appendChild(table(j.kernels, [['kernel', 'name'], ['type', 'type'], ['count', 'count', 1],
                                     ['total', r => fmtNs(r.total_ns), 1], ['mean', r => fmtNs(r.mean_ns), 1],
                                     ['% device', r => (r.pct_gpu_time || 0).toFixed(1), 1]]));
  } else {
    kt.appendChild(el('div', 'No device kernels in this trace.'));
  }
  renderMemory();
  renderRoofline();
  const cp = $('path-tab'), path = j.critical_path || {};
  cp.replaceChildren();
  if (path.items && path.items.length) {
    cp.appendChild(el('div', `what bounds the step: ${path.steps_analysed || path.analysed_steps.length || 0} steps walked`));
    cp.appendChild(table(path.items, [['kind', 'kind'], ['name', 'name'], ['on path', r => fmtNs(r.on_path_ns), 1],
                                      ['share', r => (100 * r.share).toFixed(1) + '%', 1]]));
  } else {
    cp.appendChild(el('div', 'No critical path (no steps).'));
  }
}

// Host and device memory over time, from the summary's framework memory.
function renderMemory() {
  const c = $('memory-chart'), g = c.getContext('2d'), notes = $('memory-notes');
  g.clearRect(0, 0, c.width, c.height);
  notes.replaceChildren();
  const devs = ((S.summary.framework || {}).memory || {}).devices || [];
  const series = devs.filter(d => d.timeline && d.timeline.length > 1);
  if (!series.length) { notes.appendChild(el('div', 'No memory timeline in this trace.')); return; }
  let t0 = Infinity, t1 = -Infinity, top = 1;
  for (const d of series) for (const [t, b] of d.timeline) { t0 = Math.min(t0, t); t1 = Math.max(t1, t); top = Math.max(top, b); }
  series.forEach((d, i) => {
    g.strokeStyle = `hsl(${(i * 97) % 360},60%,45%)`;
    g.beginPath();
    d.timeline.forEach(([t, b], k) => {
      const x = (t - t0) / Math.max(1, t1 - t0) * (c.width - 4) + 2, y = c.height - 2 - b / top * (c.height - 14);
      if (k) g.lineTo(x, y); else g.moveTo(x, y);
    });
    g.stroke();
    notes.appendChild(el('div', `${d.device} ${d.process || ''}: peak ${(d.peak_bytes / 2 ** 20).toFixed(1)} MiB, ` +
                               `${d.allocs} allocations`));
  });
  g.fillStyle = '#333';
  g.fillText(`${(top / 2 ** 20).toFixed(1)} MiB`, 4, 10);
}

let stepSort = { key: 'number', desc: false };
function renderSteps() {
  const body = $('steps').tBodies[0];
  body.replaceChildren();
  const min = parseFloat($('step-filter').value) * 1e6 || 0;
  const rows = S.steps.filter(s => s.dur >= min).sort((a, b) =>
    (stepSort.desc ? -1 : 1) * ((a[stepSort.key] || 0) - (b[stepSort.key] || 0)));
  for (const s of rows.slice(0, 5000)) {
    const tr = el('tr');
    tr.dataset.step = s.number;
    for (const v of [s.number + (s.partial ? '*' : ''), fmtNs(s.dur), fmtNs(s.data_wait_ns), s.samples || ''])
      tr.appendChild(el('td', String(v)));
    tr.onclick = () => { const pad = s.dur * 0.02; setView(s.ts - pad, s.ts + s.dur + pad); };
    body.appendChild(tr);
  }
}

// --- timeline ---------------------------------------------------------------

function buildLanes() {
  const info = S.info, procs = info.processes;
  const order = { thread: 0, device_queue: 1, cpu: 2 };
  const lanes = info.tracks.filter(t => t.slices > 0 || t.states > 0 || t.syscalls > 0).map(t => {
    const p = t.process !== null ? procs[t.process] : null;
    const owner = p ? `${(p.name || 'pid').split('/').pop()} ${p.pid}` : 'CPUs';
    const what = t.kind === 'device_queue' ? `dev ${t.device} stream ${t.tid}` :
                 t.kind === 'cpu' ? `cpu ${t.tid}` : `${t.name || 'tid'} ${t.tid}`;
    return { track: t.id, label: `${owner} · ${what}`, kind: t.kind, process: t.process, states: t.states > 0,
             syscalls: t.syscalls > 0, slices: t.slices > 0, y: 0, h: ROW_H + LANE_PAD };
  });
  lanes.sort((a, b) => ((a.process ?? 1e9) - (b.process ?? 1e9)) || (order[a.kind] - order[b.kind]) || (a.track - b.track));
  S.lanes = lanes;
}

function layout() {
  let y = 0;
  for (const l of S.lanes) {
    l.y = y;
    if (l.counter !== undefined) {
      l.h = COUNTER_H + LANE_PAD;
    } else {
      const sl = S.detail && S.slices[l.track];
      const rows = sl && !sl.truncated ? Math.min(MAX_ROWS, 1 + sl.slices.reduce((m, s) => Math.max(m, s.depth), 0)) : 1;
      l.rows = l.slices ? rows : 0;
      l.h = Math.max(l.slices ? 0 : ROW_H,
                     l.rows * ROW_H + (l.states ? STATE_H + 1 : 0) + (l.syscalls ? STATE_H + 1 : 0)) + LANE_PAD;
    }
    y += l.h;
  }
  const c = $('canvas'), wrap = $('lanes');
  c.width = Math.max(300, wrap.clientWidth);
  c.height = Math.max(wrap.clientHeight, y);
}

// A counter lane: the range of values in each pixel (min to max) and the
// last value's line, scaled to the lane's highest value in view.
function drawCounter(g, l) {
  const c = S.counters[l.counter];
  if (!c) return;
  let top = 0;
  for (const [, , hi] of c.buckets) top = Math.max(top, Math.abs(hi));
  if (c.before !== null) top = Math.max(top, Math.abs(c.before));
  const flat = !(top > 0);
  if (flat) top = 1;
  const yOf = v => l.y + COUNTER_H - 1 - (v / top) * (COUNTER_H - 4);
  g.fillStyle = 'rgba(0,137,123,0.35)';
  g.strokeStyle = 'rgba(0,105,92,0.9)';
  g.beginPath();
  let prev = c.before, px = LABEL_W;
  if (prev !== null) g.moveTo(LABEL_W, yOf(prev));
  for (const [t, lo, hi, last] of c.buckets) {
    const x = Math.max(LABEL_W, xOf(t));
    g.fillRect(x, yOf(hi), Math.max(1, plotWidth() / 1500), Math.max(1, yOf(lo) - yOf(hi)));
    if (prev !== null) g.lineTo(x, yOf(prev));
    else g.moveTo(x, yOf(last));
    g.lineTo(x, yOf(last));
    prev = last;
    px = x;
  }
  if (prev !== null) g.lineTo(LABEL_W + plotWidth(), yOf(prev));
  g.stroke();
  S.drawnCounterPoints = (S.drawnCounterPoints || 0) + c.buckets.length;
  g.fillStyle = '#555';
  g.fillText(flat ? '0' : human(top, l.unit), LABEL_W + 4, l.y + 8);
}

// A thread's scheduling state under its slices: on CPU, waiting for one, or
// blocked (sleeping, in disk I/O), a pixel's dominant state when zoomed out.
const STATE_COLORS = { running: '#2e7d32', runnable: '#ff9800', sleeping: '#cfd8dc', disk_sleep: '#c62828',
  blocked: '#90a4ae', stopped: '#6a1b9a' };
// A thread's system calls: a strip under its scheduling states (one shade per
// call name; pooled pixels take the name that took most of them).
function drawSyscalls(g, l) {
  const sc = S.syscalls[l.track];
  if (!sc) return;
  const y = l.y + l.rows * ROW_H + 1 + (l.states ? STATE_H + 1 : 0);
  for (const [a, b, name] of sc.syscalls) {
    const x0 = Math.max(LABEL_W, xOf(a)), x1 = Math.min(LABEL_W + plotWidth(), xOf(b));
    g.fillStyle = `hsl(${260 + hue(name) % 60},55%,${45 + hue(name) % 20}%)`;
    g.fillRect(x0, y, Math.max(1, x1 - x0), STATE_H);
    S.drawnSyscalls = (S.drawnSyscalls || 0) + 1;
  }
}
function drawStates(g, l) {
  const st = S.states[l.track];
  if (!st) return;
  const y = l.y + l.rows * ROW_H + 1;
  for (const [a, b, state] of st.states) {
    const color = STATE_COLORS[state];
    if (!color) continue;
    const x0 = Math.max(LABEL_W, xOf(a)), x1 = Math.min(LABEL_W + plotWidth(), xOf(b));
    g.fillStyle = color;
    g.fillRect(x0, y, Math.max(1, x1 - x0), STATE_H);
    S.drawnStates = (S.drawnStates || 0) + 1;
  }
}

function human(v, unit) {
  if (unit === 'bytes' || unit === 'bytes/s') {
    const k = Math.min(4, Math.floor(Math.log(Math.max(1, Math.abs(v))) / Math.log(1024)));
    return (v / 1024 ** k).toPrecision(3) + ' ' + ['B', 'KiB', 'MiB', 'GiB', 'TiB'][k] + (unit === 'bytes/s' ? '/s' : '');
  }
  const k = Math.min(4, Math.max(0, Math.floor(Math.log10(Math.max(1, Math.abs(v))) / 3)));
  return (v / 1000 ** k).toPrecision(3) + ['', 'k', 'M', 'G', 'T'][k] + (unit ? ' ' + unit : '');
}

function plotWidth() { return Math.max(1, $('canvas').width - LABEL_W); }
function xOf(ns) { return LABEL_W + (ns - S.view.start) / (S.view.end - S.view.start) * plotWidth(); }
function nsOf(x) { return S.view.start + (x - LABEL_W) / plotWidth() * (S.view.end - S.view.start); }

function draw() {
  layout();
  const c = $('canvas'), g = c.getContext('2d');
  g.clearRect(0, 0, c.width, c.height);
  g.font = '11px system-ui, sans-serif';
  g.textBaseline = 'middle';
  const q = S.search.toLowerCase();
  let tiles = 0, slices = 0;
  for (const l of S.lanes) {
    g.fillStyle = (l.track ?? l.counter) % 2 ? '#fafafa' : '#f0f0f0';
    g.fillRect(LABEL_W, l.y, plotWidth(), l.h);
    const sl = l.counter === undefined && S.detail && S.slices[l.track];
    if (l.counter !== undefined) {
      drawCounter(g, l);
    } else if (sl && !sl.truncated) {
      for (const s of sl.slices) {
        if (s.depth >= MAX_ROWS) continue;
        const x0 = Math.max(LABEL_W, xOf(s.ts)), x1 = Math.min(c.width, xOf(s.ts + s.dur));
        const w = Math.max(1, x1 - x0), y = l.y + s.depth * ROW_H;
        const hit = !q || s.name.toLowerCase().includes(q);
        g.fillStyle = `hsla(${hue(s.name)},55%,${hit ? 62 : 88}%,1)`;
        if (S.selected && S.selected.id === s.id) g.fillStyle = '#ff7043';
        g.fillRect(x0, y + 1, w, ROW_H - 2);
        if (w > 40) {
          g.fillStyle = '#111';
          g.save();
          g.beginPath();
          g.rect(x0, y, w, ROW_H);
          g.clip();
          g.fillText(s.name, x0 + 2, y + ROW_H / 2);
          g.restore();
        }
        slices++;
      }
    } else {
      const ts = S.tiles[l.track] || [];
      for (const [a, b, n, busy] of ts) {
        const x0 = Math.max(LABEL_W, xOf(a)), x1 = Math.min(c.width, xOf(b));
        const density = b > a ? busy / (b - a) : 1;
        g.fillStyle = `rgba(33,150,243,${0.25 + 0.75 * density})`;
        g.fillRect(x0, l.y + 1, Math.max(1, x1 - x0), ROW_H - 2);
        tiles++;
      }
    }
    if (l.states) drawStates(g, l);
    if (l.syscalls) drawSyscalls(g, l);
    g.fillStyle = '#fff';
    g.fillRect(0, l.y, LABEL_W, l.h);
    g.fillStyle = '#333';
    g.fillText(l.label.slice(0, 34), 4, l.y + ROW_H / 2);
  }
  // Flow arrows (a launch to its kernel, a send to its receive) from the
  // slices drawn, to the other end wherever it is (off screen: clipped).
  let arrows = 0;
  if (S.detail) {
    g.strokeStyle = 'rgba(0,0,0,0.55)';
    g.fillStyle = 'rgba(0,0,0,0.55)';
    const laneOf = new Map(S.lanes.map(l => [l.track, l]));
    const seen = new Set();
    const point = (track, ts, depth) => {
      const l = laneOf.get(track);
      if (!l) return null;
      const rows = Math.max(1, Math.round((l.h - LANE_PAD) / ROW_H));
      return { x: xOf(ts), y: l.y + Math.min(depth, rows - 1) * ROW_H + ROW_H / 2 };
    };
    g.save();
    g.beginPath();
    g.rect(LABEL_W, 0, plotWidth(), c.height);
    g.clip();
    for (const sl of Object.values(S.slices)) {
      for (const [from, to, ft, fts, fd, tt, tts, td] of sl.flows || []) {
        const key = from + ':' + to;
        if (seen.has(key)) continue;
        seen.add(key);
        const a = point(ft, fts, fd), b = point(tt, tts, td);
        if (!a || !b) continue;
        // Those of the selected slice always (off screen: clipped); others
        // only when both ends are in view, lightly (a GPU runs behind its
        // launches: every arrow of a busy range would be a smear).
        const sel = S.selected && (S.selected.id === from || S.selected.id === to);
        const inView = p => p.x >= LABEL_W && p.x <= c.width;
        if (!sel && !(inView(a) && inView(b))) continue;
        g.strokeStyle = g.fillStyle = sel ? 'rgba(183,28,28,0.9)' : 'rgba(0,0,0,0.3)';
        g.lineWidth = sel ? 2 : 1;
        g.beginPath();
        g.moveTo(a.x, a.y);
        g.lineTo(b.x, b.y);
        g.stroke();
        const ang = Math.atan2(b.y - a.y, b.x - a.x);
        g.beginPath();
        g.moveTo(b.x, b.y);
        g.lineTo(b.x - 6 * Math.cos(ang - 0.4), b.y - 6 * Math.sin(ang - 0.4));
        g.lineTo(b.x - 6 * Math.cos(ang + 0.4), b.y - 6 * Math.sin(ang + 0.4));
        g.fill();
        arrows++;
      }
    }
    g.restore();
    g.lineWidth = 1;
  }
  S.drawnArrows = arrows;
  // The critical path of the selected slice's step: a bar under each lane's piece of it.
  let pathDrawn = 0;
  if (S.path) {
    const laneOf = {};
    for (const l of S.lanes) if (l.counter === undefined) laneOf[l.track] = l;
    g.fillStyle = 'rgba(255,111,0,0.85)';
    for (const [a, b, track] of S.path.segments) {
      const l = laneOf[track];
      if (!l || b < S.view.start || a > S.view.end) continue;
      const x0 = Math.max(LABEL_W, xOf(a)), x1 = Math.min(c.width, xOf(b));
      g.fillRect(x0, l.y + l.h - 3, Math.max(1, x1 - x0), 3);
      pathDrawn++;
    }
  }
  S.drawnPath = pathDrawn;
  // Step markers.
  g.strokeStyle = 'rgba(183,28,28,0.6)';
  g.setLineDash([3, 3]);
  for (const s of S.steps) {
    if (s.ts < S.view.start || s.ts > S.view.end) continue;
    const x = Math.round(xOf(s.ts)) + 0.5;
    g.beginPath();
    g.moveTo(x, 0);
    g.lineTo(x, c.height);
    g.stroke();
  }
  g.setLineDash([]);
  S.draws++;
  // When the timeline first showed the trace (ms since navigation began), for benchmarks.
  if (tiles > 0 && S.firstPaintMs === undefined) S.firstPaintMs = performance.now();
  S.drawnTiles = tiles;
  S.drawnSlices = slices;
  $('range').textContent = `${fmtNs(S.view.end - S.view.start)} shown` + (S.detail ? '' : ` (level ${S.level})`);
}

let fetchTimer = null, fetchSeq = 0;
function scheduleFetch() {
  clearTimeout(fetchTimer);
  fetchTimer = setTimeout(fetchView, 40);
}

async function fetchView() {
  const seq = ++fetchSeq, v = { ...S.view }, px = Math.round(plotWidth());
  try {
    // Every lane's part of the view at once (one round trip, however many lanes).
    const range = { start: Math.floor(v.start), end: Math.ceil(v.end) };
    const detail = (v.end - v.start) / px <= DETAIL_NS_PER_PX;
    const wrap = $('lanes'), top = wrap.scrollTop, bottom = top + wrap.clientHeight;
    const shown = l => l.y + l.h >= top && l.y <= bottom + 200;
    const slices = {}, counters = {}, states = {}, syscalls = {};
    const jobs = [api(`traces/${S.trace}/viewport`, { ...range, pixels: px })];
    if (detail)
      for (const l of S.lanes.filter(l => l.counter === undefined && shown(l)).slice(0, 64))
        jobs.push(api(`traces/${S.trace}/slices`, { track: l.track, ...range, limit: 4000, flows: 1 })
          .then(j => { slices[l.track] = j; }));
    for (const l of S.lanes.filter(l => l.syscalls && shown(l)).slice(0, 64))
      jobs.push(api(`traces/${S.trace}/threads/${l.track}/syscalls`, { ...range, pixels: px }).then(j => { syscalls[l.track] = j; }));
    for (const l of S.lanes.filter(l => l.states && shown(l)).slice(0, 64))
      jobs.push(api(`traces/${S.trace}/threads/${l.track}/states`, { ...range, pixels: px }).then(j => { states[l.track] = j; }));
    for (const l of S.lanes.filter(l => l.counter !== undefined && shown(l)).slice(0, 64))
      jobs.push(api(`traces/${S.trace}/counters/${l.counter}`, { ...range, pixels: px }).then(j => { counters[l.counter] = j; }));
    const [vp] = await Promise.all(jobs);
    if (seq !== fetchSeq) return;
    S.tiles = {};
    for (const l of vp.tracks) S.tiles[l.track] = l.tiles;
    S.level = vp.level;
    S.counters = counters;
    S.states = states;
    S.syscalls = syscalls;
    S.drawnCounterPoints = 0;
    S.drawnStates = 0;
    S.drawnSyscalls = 0;
    S.detail = detail;
    S.slices = slices;
    S.fetches++;
    draw();
  } catch (e) {
    S.error = String(e);
    status(String(e));
  }
}

function setView(a, b) {
  const lo = S.info.start_ns, hi = S.info.end_ns;
  const span = Math.max(1000, Math.min(b - a, (hi - lo) * 1.1 || 1000));
  a = Math.max(lo - span * 0.05, Math.min(a, hi - span * 0.5));
  S.view = { start: a, end: a + span };
  draw();
  scheduleFetch();
}

function zoom(factor, atX) {
  const at = atX === undefined ? (S.view.start + S.view.end) / 2 : nsOf(atX);
  setView(at - (at - S.view.start) * factor, at + (S.view.end - at) * factor);
}

function hitSlice(x, y) {
  const l = S.lanes.find(l => y >= l.y && y < l.y + l.h);
  if (!l) return null;
  const sl = S.detail && S.slices[l.track];
  if (sl && !sl.truncated) {
    const depth = Math.floor((y - l.y) / ROW_H), t = nsOf(x);
    const px = (S.view.end - S.view.start) / plotWidth();
    return { lane: l, slice: sl.slices.find(s => s.depth === depth && s.ts - px <= t && t <= s.ts + s.dur + px) };
  }
  const t = nsOf(x), px = (S.view.end - S.view.start) / plotWidth();
  return { lane: l, tile: (S.tiles[l.track] || []).find(([a, b]) => a - px <= t && t <= b + px) };
}

async function select(hit) {
  const d = $('details');
  if (!hit) return;
  if (hit.slice) {
    S.selected = { id: hit.slice.id };
    draw();
    try {
      const j = await api(`traces/${S.trace}/slices/${hit.slice.id}`);
      S.selected = j;
      d.textContent = `${j.name}\n  start ${fmtNs(j.ts - S.info.start_ns)} after the trace began, duration ${fmtNs(j.dur)}` +
        `\n  track ${hit.lane.label}, depth ${j.depth}` +
        (Object.keys(j.args).length ? '\n  args ' + JSON.stringify(j.args) : '') +
        (j.device ? '\n  device ' + JSON.stringify(j.device) : '') +
        (j.flows_in.length ? `\n  flows in from slices ${j.flows_in.join(', ')}` : '') +
        (j.flows_out.length ? `\n  flows out to slices ${j.flows_out.join(', ')}` : '');
      // Its place on the critical path of its step (walked by the server for that step).
      const p = await api(`traces/${S.trace}/slices/${j.id}/path`);
      if (!S.selected || S.selected.id !== j.id) return;
      S.path = p.step ? p : null;
      d.textContent += !p.step ? `\n  critical path: ${p.note}` :
        p.on_path_ns > 0
          ? `\n  critical path of step ${p.step.number}: ${fmtNs(p.on_path_ns)} of it on the path ` +
            `(${(100 * p.share).toFixed(1)}% of the step; the path is drawn in orange)`
          : `\n  critical path of step ${p.step.number}: not on it (off the path: it did not set the step's length)`;
      draw();
    } catch (e) { d.textContent = String(e); }
  } else if (hit.tile) {
    const [a, b, n, busy] = hit.tile;
    S.selected = { tile: hit.tile };
    S.path = null;
    d.textContent = `${hit.lane.label}\n  ${n} slices merged from ${fmtNs(a - S.info.start_ns)} to ${fmtNs(b - S.info.start_ns)}` +
      `, busy ${fmtNs(busy)} of ${fmtNs(b - a)}\n  (zoom in for the slices)`;
  }
}

// Every slice of the trace whose name has the text: the earliest, each a link
// that opens it in the timeline.
async function searchAll(text) {
  const d = $('details');
  if (!text) return;
  try {
    const j = await api(`traces/${S.trace}/search`, { q: text, limit: 200 });
    S.searchResults = j;
    d.replaceChildren(el('div', `${j.matches} slices named like "${text}" (${j.names} names)` +
                                (j.matches > j.slices.length ? `; the first ${j.slices.length}:` : ':')));
    for (const s of j.slices) {
      const lane = S.lanes.find(l => l.track === s.track);
      const a = el('div', `${fmtNs(s.ts - S.info.start_ns)}  ${fmtNs(s.dur)}  ${s.name}  (${lane ? lane.label : 'track ' + s.track})`,
                   'result');
      a.onclick = () => {
        const pad = Math.max(s.dur, 1000) * 0.5;
        setView(s.ts - pad, s.ts + s.dur + pad);
        select({ lane: lane || { label: 'track ' + s.track }, slice: s });
      };
      d.appendChild(a);
    }
  } catch (e) { d.textContent = String(e); }
}

function wire() {
  const c = $('canvas');
  c.addEventListener('wheel', e => { e.preventDefault(); zoom(e.deltaY > 0 ? 1.25 : 0.8, e.offsetX); }, { passive: false });
  let drag = null;
  c.addEventListener('mousedown', e => { drag = { x: e.offsetX, start: S.view.start, end: S.view.end, moved: false }; });
  window.addEventListener('mousemove', e => {
    if (!drag) return;
    const dx = e.offsetX - drag.x;
    if (Math.abs(dx) > 2) drag.moved = true;
    const dt = dx / plotWidth() * (drag.end - drag.start);
    S.view = { start: drag.start - dt, end: drag.end - dt };
    draw();
  });
  window.addEventListener('mouseup', e => {
    if (!drag) return;
    const moved = drag.moved;
    drag = null;
    if (moved) scheduleFetch();
    else if (e.target === c) select(hitSlice(e.offsetX, e.offsetY));
  });
  $('zoom-in').onclick = () => zoom(0.5);
  $('zoom-out').onclick = () => zoom(2);
  $('zoom-all').onclick = () => setView(S.info.start_ns, S.info.end_ns);
  $('search').oninput = e => { S.search = e.target.value; draw(); };
  $('search').onkeydown = e => { if (e.key === 'Enter') searchAll(e.target.value); };
  $('lanes').addEventListener('scroll', scheduleFetch);
  window.addEventListener('resize', () => { draw(); scheduleFetch(); });
  $('step-filter').oninput = renderSteps;
  for (const th of document.querySelectorAll('#steps th'))
    th.onclick = () => {
      stepSort = { key: th.dataset.key, desc: stepSort.key === th.dataset.key ? !stepSort.desc : th.dataset.key === 'dur' };
      renderSteps();
    };
  $('trace').onchange = e => load(Number(e.target.value));
  for (const b of document.querySelectorAll('#tabs button'))
    b.onclick = () => {
      for (const x of document.querySelectorAll('#tabs button, .tab')) x.classList.remove('on');
      b.classList.add('on');
      $(b.dataset.tab).classList.add('on');
      S.tab = b.dataset.tab;
    };
}

async function load(id) {
  S.trace = id;
  S.summary = null;
  S.path = null;
  status('opening…');
  try {
    S.info = await api(`traces/${id}`);
    buildLanes();
    const cs = await api(`traces/${id}/counters`);
    for (const c of cs.counters) {
      const p = c.process !== null ? S.info.processes[c.process] : null;
      S.lanes.push({ counter: c.id, unit: c.unit,
                     label: `${c.name}${c.unit ? ' (' + c.unit + ')' : ''}${p ? ' · ' + p.pid : ''}`, y: 0, h: COUNTER_H });
    }
    S.view = { start: S.info.start_ns, end: Math.max(S.info.end_ns, S.info.start_ns + 1000) };
    draw();
    await fetchView();
    status('analysing…');
    S.stepsLoaded = false;
    const steps = api(`traces/${id}/steps`).then(j => { S.steps = j.steps; S.stepsLoaded = true; renderSteps(); draw(); });
    const summary = api(`traces/${id}/summary`).then(j => { S.summary = j; renderSummary(); renderAnalyses(); });
    renderDiffChoices();
    await Promise.all([steps, summary]);
    status(`${S.info.path} (${S.info.source})`);
  } catch (e) {
    S.error = String(e);
    status(String(e));
  }
}

async function main() {
  wire();
  const j = await api('traces');
  S.traces = j.traces;
  for (const t of j.traces) {
    const o = el('option', t.path);
    o.value = t.id;
    $('trace').appendChild(o);
  }
  const first = Math.min(Math.max(0, Number(query.get('trace')) || 0), j.traces.length - 1);
  if (j.live) {
    startLive();
    if (j.traces.length) S.live.opened = first;  // (the run had ended before the page loaded)
  }
  $('trace').value = first;
  if (j.traces.length) await load(first);
}
main();
