// strata view: the analysis views that have a chart or a choice of their own
// (the roofline, the diff of two traces) and the live run's panel. Loaded
// before app.js, whose helpers (api, el, table, fmtNs, human, load, S) they
// use once the page runs.
'use strict';

// Ops and kernels against the device's roofs (log-log: FLOP/byte, FLOP/s),
// from the summary's roofline; a point's area is its time.
function renderRoofline() {
  const c = $('roofline-chart'), g = c.getContext('2d'), notes = $('roofline-notes');
  g.clearRect(0, 0, c.width, c.height);
  notes.replaceChildren();
  const r = S.summary.roofline || {};
  const pts = (r.points || []).filter(p => p.intensity > 0 && p.flops_per_s > 0);
  S.drawnRoofline = 0;
  if (!pts.length || !(r.peak_flops > 0)) {
    notes.appendChild(el('div', r.skipped ? 'No roofline: ' + r.skipped : 'No roofline in this trace.'));
    return;
  }
  const roofs = (r.roofs && r.roofs.length ? r.roofs : [{ name: r.roof, peak_flops: r.peak_flops,
                                                         bandwidth_bytes_per_s: r.bandwidth_bytes_per_s }])
    .filter(x => x.peak_flops > 0 && x.bandwidth_bytes_per_s > 0);
  const L = Math.log10, pad = 28;
  let x0 = Math.min(...pts.map(p => p.intensity), r.ridge || Infinity) / 4, x1 = Math.max(...pts.map(p => p.intensity), r.ridge || 0) * 4;
  let y0 = Math.min(...pts.map(p => p.flops_per_s)) / 4, y1 = Math.max(r.peak_flops, ...roofs.map(x => x.peak_flops)) * 2;
  const X = v => pad + (L(v) - L(x0)) / (L(x1) - L(x0)) * (c.width - pad - 4);
  const Y = v => c.height - pad - (L(v) - L(y0)) / (L(y1) - L(y0)) * (c.height - pad - 4);
  g.strokeStyle = '#999';
  g.strokeRect(pad, 4, c.width - pad - 4, c.height - pad - 4);
  g.fillStyle = '#333';
  g.fillText('FLOP/byte', c.width - 60, c.height - 8);
  g.fillText(human(y1, 'FLOP/s'), pad + 2, 14);
  roofs.forEach((roof, k) => {
    g.strokeStyle = k ? 'rgba(120,120,120,0.7)' : '#263238';
    g.beginPath();
    const ridge = roof.peak_flops / roof.bandwidth_bytes_per_s;
    g.moveTo(X(x0), Y(Math.max(y0, roof.bandwidth_bytes_per_s * x0)));
    if (ridge > x0 && ridge < x1) g.lineTo(X(ridge), Y(roof.peak_flops));
    g.lineTo(X(x1), Y(Math.min(roof.peak_flops, roof.bandwidth_bytes_per_s * x1)));
    g.stroke();
  });
  const tmax = Math.max(...pts.map(p => p.time_ns));
  for (const p of pts) {
    g.fillStyle = p.level === 'kernel' ? 'rgba(30,136,229,0.6)' : 'rgba(67,160,71,0.6)';
    g.beginPath();
    g.arc(X(p.intensity), Y(p.flops_per_s), 2 + 8 * Math.sqrt(p.time_ns / tmax), 0, 2 * Math.PI);
    g.fill();
    S.drawnRoofline++;
  }
  notes.appendChild(el('div', `${r.device || 'device'}: roof ${r.roof || ''}, peak ${human(r.peak_flops, 'FLOP/s')}, ` +
                              `${human(r.bandwidth_bytes_per_s, 'B/s')}, ridge ${(r.ridge || 0).toFixed(1)} FLOP/byte (${r.source || ''})`));
  notes.appendChild(table(pts.slice(0, 50), [['name', 'name'], ['level', 'level'], ['FLOP/byte', p => p.intensity.toFixed(2), 1],
                                             ['FLOP/s', p => human(p.flops_per_s, ''), 1], ['% of roof', p => (p.pct_of_roof || 0).toFixed(1), 1],
                                             ['bound', 'bound'], ['time', p => fmtNs(p.time_ns), 1]]));
}

// This trace (after) against another served one (before): GET /api/v1/diff.
function renderDiffChoices() {
  const sel = $('diff-before'), out = $('diff-out');
  sel.replaceChildren();
  out.replaceChildren();
  const others = S.traces.filter(t => t.id !== S.trace);
  if (!others.length) { out.appendChild(el('div', 'One trace served: name two to `strata view` to compare them.')); return; }
  sel.appendChild(el('option', '(choose the trace before the change)'));
  for (const t of others) {
    const o = el('option', t.path);
    o.value = t.id;
    sel.appendChild(o);
  }
  sel.onchange = () => { if (sel.value !== '') showDiff(Number(sel.value)); };
}

async function showDiff(before) {
  const out = $('diff-out');
  out.replaceChildren(el('div', 'comparing…'));
  try {
    const d = await api('diff', { before, after: S.trace });
    S.diff = d;
    out.replaceChildren();
    const pct = d.step_delta_pct || 0;
    out.appendChild(el('div', `${d.per === 'step' ? 'mean step' : 'trace'}: ${fmtNs(d.a.step_mean_ns)} before, ` +
                              `${fmtNs(d.b.step_mean_ns)} after (${pct >= 0 ? '+' : ''}${pct.toFixed(1)}%); ` +
                              `the top 3 rows explain ${(100 * (d.top3_explained || 0)).toFixed(0)}% of the change`));
    const cols = [['name', 'name'], ['kind', 'kind'], ['before', r => fmtNs(r.a_ns), 1], ['after', r => fmtNs(r.b_ns), 1],
                  ['change', r => (r.delta_ns >= 0 ? '+' : '') + fmtNs(r.delta_ns), 1],
                  ['share', r => (100 * (r.share_of_change || 0)).toFixed(0) + '%', 1]];
    for (const [title, rows] of [['On the critical path', d.critical_path], ['Scopes', d.scopes], ['Self time', d.self_time]]) {
      if (!rows || !rows.length) continue;
      out.appendChild(el('h2', title));
      out.appendChild(table(rows, cols));
    }
  } catch (e) {
    out.replaceChildren(el('div', String(e)));
  }
}

// --- live run (strata record --serve) ---------------------------------------------
// Steps appear as they finish (GET /api/v1/live, polled); the form asks for
// detail over the next N steps (POST /api/v1/record). When the program ends,
// its trace opens in the views above.

function renderLive() {
  const L = S.live;
  $('live-state').textContent = L.state === 'running' ? '(running)' : `(ended, exit ${L.exit_code})`;
  const w = L.window ? ` · window: steps ${L.window.first}–${L.window.last} (${L.window.detail.join(', ')})` : '';
  const recent = L.steps.slice(-20).map(s => s.period_ns).filter(x => x > 0).sort((a, b) => a - b);
  const med = recent.length ? fmtNs(recent[recent.length >> 1]) : '–';
  $('live-info').textContent = `${L.command} · step now ${L.current_step < 0 ? '–' : L.current_step} · ` +
    `${L.steps_finished} finished, median ${med} (last 20) · cuda activity ${L.cuda_activity}${w}`;
  const c = $('live-chart'), g = c.getContext('2d');
  g.clearRect(0, 0, c.width, c.height);
  const shown = L.steps.slice(-Math.floor(c.width / 3));
  const top = Math.max(1, ...shown.map(s => s.period_ns || s.dur_ns));
  shown.forEach((s, i) => {
    const v = s.period_ns || s.dur_ns, h = Math.max(1, v / top * (c.height - 4));
    g.fillStyle = s.detail.length ? '#0d47a1' : '#90caf9';
    g.fillRect(i * 3, c.height - h, 2, h);
  });
  $('live-record').disabled = L.state !== 'running';
}

async function pollLive() {
  try {
    const j = await api('live', { since: S.live.next });
    const steps = S.live.steps.concat(j.steps);
    Object.assign(S.live, j, { steps: steps.slice(-100000) });
    renderLive();
    if (j.state === 'finished' && j.trace !== undefined && S.live.opened !== j.trace) {
      S.live.opened = j.trace;
      const t = await api('traces');
      S.traces = t.traces;
      $('trace').textContent = '';
      for (const x of t.traces) {
        const o = el('option', x.path);
        o.value = x.id;
        $('trace').appendChild(o);
      }
      $('trace').value = j.trace;
      await load(j.trace);
      return;  // nothing more will change
    }
  } catch (e) {
    status('live: ' + e);
  }
  setTimeout(pollLive, 500);
}

function startLive() {
  S.live = { state: 'running', steps: [], next: 0, requests: [], opened: null };
  $('live').hidden = false;
  $('live-form').onsubmit = async e => {
    e.preventDefault();
    const detail = [...document.querySelectorAll('#live-form input[name=detail]:checked')].map(x => x.value);
    try {
      const r = await api('record', {}, { steps: Number($('live-steps').value), detail });
      $('live-answer').textContent = `steps ${r.window.first}–${r.window.last} will record ${r.window.detail.join(', ')}`;
    } catch (err) {
      $('live-answer').textContent = String(err);
    }
  };
  status('live run');
  pollLive();
}
