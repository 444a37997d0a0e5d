// SPDX-License-Identifier: Apache-2.0
// llmux's live dashboard: polls dashboard/data (the gateway's cumulative counters and histograms,
// relative so it works behind a path prefix) every second and computes here what it shows:
// rates from counter deltas over time, recent percentiles from the difference of cumulative
// histogram buckets over the last 60 s (interpolated within a bucket as Prometheus's
// histogram_quantile does), charts of the last 5 minutes with uPlot. No build step, no framework.
'use strict';

(function () {
  const POLL_MS = 1000;
  const FETCH_TIMEOUT_MS = 3000;
  const HISTORY_S = 300; // the charts' window
  const RECENT_S = 60; // percentiles and error rates
  const RATE_S = 5; // tokens/s "now" and each chart point: the rate over the last 5 s
  const CHART_HEIGHT = 240;
  const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2',
    '#17becf', '#bcbd22', '#7f7f7f'];

  const $ = (id) => document.getElementById(id);
  const BASE = window.LLMUX_DASHBOARD_BASE || ''; // index.html: "" or "dashboard/"

  // Every snapshot of the last RECENT_S + a few seconds: {t (the gateway's clock), d (the data)}.
  let snaps = [];
  // Chart history: times and, per backend name, values aligned with them (null: no value).
  const hist = { t: [], tokps: new Map(), inflight: new Map(), fleet: [] };
  const colors = new Map(); // backend name → colour, stable for the page's life
  const charts = { key: '', tokps: null, inflight: null };

  // Colours of the page's theme (style.css, light or dark).
  const css = (name, fallback) =>
    getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
  let FLEET_COLOR = '#1d2330'; // the theme's text colour, read at start

  function colorOf(name) {
    if (!colors.has(name)) colors.set(name, PALETTE[colors.size % PALETTE.length]);
    return colors.get(name);
  }

  // ---- histograms -------------------------------------------------------------------------

  // {le: [numbers..., Infinity], counts: cumulative} from the JSON shape ("+Inf" as a string).
  function readHist(h) {
    if (!h || !Array.isArray(h.le) || !Array.isArray(h.counts) || h.le.length !== h.counts.length) {
      return null;
    }
    return { le: h.le.map((x) => (x === '+Inf' ? Infinity : Number(x))), counts: h.counts.map(Number) };
  }

  // The observations made between `base` and `cur` (both cumulative); `cur` alone when there is
  // no comparable base (none yet, other bounds, or counts that went down: a restart).
  function histDelta(cur, base) {
    const c = readHist(cur);
    if (!c) return null;
    const b = readHist(base);
    if (!b || b.le.length !== c.le.length || b.le.some((x, i) => x !== c.le[i])) return c;
    const counts = c.counts.map((x, i) => x - b.counts[i]);
    if (counts.some((x) => x < 0)) return c;
    return { le: c.le, counts };
  }

  // Prometheus's histogram_quantile: the bucket holding rank q·total, linear within it (the first
  // bucket starts at 0); a rank in the +Inf bucket gives the highest finite bound. NaN: no data.
  function quantile(q, h) {
    if (!h || h.counts.length < 2) return NaN;
    const n = h.counts.length;
    const total = h.counts[n - 1];
    if (!(total > 0)) return NaN;
    const rank = q * total;
    let i = 0;
    while (i < n - 1 && h.counts[i] < rank) i++;
    if (i === n - 1) return h.le[n - 2];
    if (i === 0 && h.le[0] <= 0) return h.le[0];
    const start = i === 0 ? 0 : h.le[i - 1];
    const below = i === 0 ? 0 : h.counts[i - 1];
    const inBucket = h.counts[i] - below;
    if (!(inBucket > 0)) return h.le[i];
    return start + (h.le[i] - start) * ((rank - below) / inBucket);
  }

  // ---- snapshots --------------------------------------------------------------------------

  // The newest snapshot at least `age` seconds older than the newest one, else the oldest other
  // one; null when there is only one.
  function baseline(age) {
    if (snaps.length < 2) return null;
    const now = snaps[snaps.length - 1].t;
    for (let i = snaps.length - 2; i >= 0; i--) {
      if (now - snaps[i].t >= age) return snaps[i];
    }
    return snaps[0];
  }

  const backendOf = (snap, name) => (snap ? (snap.d.backends || []).find((b) => b.name === name) : null);

  // Counter delta per second between two snapshots of one backend; null when not comparable.
  function rate(cur, base, field, dt) {
    if (!cur || !base || !(dt > 0)) return null;
    const d = Number(cur[field]) - Number(base[field]);
    return d >= 0 ? d / dt : null;
  }

  function ingest(d) {
    const t = Number(d.time);
    if (!Number.isFinite(t)) throw new Error('no time in the data');
    const last = snaps[snaps.length - 1];
    if (last && (Number(d.uptime_s) < Number(last.d.uptime_s) || t <= last.t)) {
      if (t <= last.t && Number(d.uptime_s) >= Number(last.d.uptime_s)) return; // a repeat
      snaps = []; // the gateway restarted: counters start again
    }
    snaps.push({ t, d });
    while (snaps.length > 2 && t - snaps[1].t > RECENT_S + 5) snaps.shift();

    const backends = d.backends || [];
    const rateBase = baseline(RATE_S);
    const recentBase = baseline(RECENT_S);
    const view = backends.map((b) => {
      const rb = backendOf(rateBase, b.name);
      const pb = backendOf(recentBase, b.name);
      const ttft = histDelta(b.ttft, pb && pb.ttft);
      const requests = pb ? Number(b.requests) - Number(pb.requests) : Number(b.requests);
      const errors = pb ? Number(b.errors) - Number(pb.errors) : Number(b.errors);
      return {
        b,
        tokps: rate(b, rb, 'generation_tokens', rateBase ? t - rateBase.t : 0),
        ttft50: quantile(0.5, ttft),
        ttft99: quantile(0.99, ttft),
        errorRate: requests > 0 && errors >= 0 ? errors / requests : errors > 0 ? 1 : null,
      };
    });
    record(t, view);
    render(d, view);
  }

  // ---- history and charts -----------------------------------------------------------------

  function record(t, view) {
    if (hist.t.length && t <= hist.t[hist.t.length - 1]) { // the gateway's clock went back
      hist.t.length = 0;
      hist.fleet.length = 0;
      hist.tokps.clear();
      hist.inflight.clear();
    }
    hist.t.push(t);
    const names = new Set(view.map((v) => v.b.name));
    for (const v of view) {
      for (const [m, value] of [[hist.tokps, v.tokps], [hist.inflight, Number(v.b.inflight)]]) {
        if (!m.has(v.b.name)) m.set(v.b.name, new Array(hist.t.length - 1).fill(null));
        m.get(v.b.name).push(value);
      }
    }
    for (const m of [hist.tokps, hist.inflight]) {
      for (const [name, arr] of m) if (!names.has(name)) arr.push(null);
    }
    const known = view.filter((v) => v.tokps !== null);
    hist.fleet.push(known.length ? known.reduce((s, v) => s + v.tokps, 0) : null);
    let drop = 0;
    while (drop < hist.t.length && t - hist.t[drop] > HISTORY_S) drop++;
    if (drop) {
      hist.t.splice(0, drop);
      hist.fleet.splice(0, drop);
      for (const m of [hist.tokps, hist.inflight]) for (const arr of m.values()) arr.splice(0, drop);
    }
    // Names with nothing left in the window leave the charts.
    for (const m of [hist.tokps, hist.inflight]) {
      for (const [name, arr] of m) if (!names.has(name) && arr.every((x) => x === null)) m.delete(name);
    }
    drawCharts([...hist.tokps.keys()]);
  }

  // Time ticks: whole seconds at least, as the local time of day.
  const TIME_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600];
  function fmtAxisTime(u, vals) {
    return vals.map((v) => new Date(v * 1000).toLocaleTimeString([], { hour12: false }));
  }

  function fmtAxisRate(u, vals) {
    return vals.map((v) => (v == null ? '' : v >= 1000 ? (v / 1000).toFixed(1) + 'k' : String(+v.toFixed(1))));
  }

  function axis(opts) {
    const line = css('--line', '#e3e6eb');
    return Object.assign({ stroke: css('--muted', '#6b7280'), grid: { stroke: line }, ticks: { stroke: line } },
      opts);
  }

  // Dots on the lines only while there are few points.
  const POINTS = { show: (u) => u.data[0].length < 12 };

  function makeChart(el, names, withFleet, valueFmt, data) {
    const series = [{ label: 'time', value: (u, v) => (v == null ? '–' : fmtAxisTime(u, [v])[0]) }];
    for (const n of names) {
      series.push({ label: n, stroke: colorOf(n), width: 2, points: POINTS, value: (u, v) => (v == null ? '–' : valueFmt(v)) });
    }
    if (withFleet) {
      series.push({ label: 'fleet', stroke: FLEET_COLOR, width: 2, dash: [8, 4], points: POINTS,
        value: (u, v) => (v == null ? '–' : valueFmt(v)) });
    }
    const opts = {
      width: Math.max(300, el.clientWidth),
      height: CHART_HEIGHT,
      series,
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, (max || 0) * 1.1)] } },
      axes: [axis({ incrs: TIME_INCRS, values: fmtAxisTime }), axis({ size: 55, values: fmtAxisRate })],
      legend: { live: true },
    };
    el.textContent = '';
    return new uPlot(opts, data, el);
  }

  function drawCharts(names) {
    const key = names.join('\u0000');
    const tokData = [hist.t, ...names.map((n) => hist.tokps.get(n)), hist.fleet];
    const inData = [hist.t, ...names.map((n) => hist.inflight.get(n) || [])];
    if (key !== charts.key || !charts.tokps) {
      charts.key = key;
      if (charts.tokps) charts.tokps.destroy();
      if (charts.inflight) charts.inflight.destroy();
      charts.tokps = makeChart($('chart-tokps'), names, true, (v) => v.toFixed(1), tokData);
      charts.inflight = makeChart($('chart-inflight'), names, false, (v) => String(v), inData);
      const colorList = names.map((n) => colorOf(n)).concat([FLEET_COLOR]);
      $('chart-tokps').dataset.colors = colorList.join(' ');
      $('chart-inflight').dataset.colors = colorList.slice(0, -1).join(' ');
    } else {
      charts.tokps.setData(tokData);
      charts.inflight.setData(inData);
    }
    // The legends show the latest values unless the pointer is on a chart.
    for (const c of [charts.tokps, charts.inflight]) {
      if (!(c.cursor.left >= 0) && hist.t.length) c.setLegend({ idx: hist.t.length - 1 });
    }
    $('chart-tokps').dataset.points = String(hist.t.length);
  }

  let resizeTimer = null;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      for (const [c, id] of [[charts.tokps, 'chart-tokps'], [charts.inflight, 'chart-inflight']]) {
        if (c) c.setSize({ width: Math.max(300, $(id).clientWidth), height: CHART_HEIGHT });
      }
    }, 100);
  });

  // ---- rendering --------------------------------------------------------------------------

  function fmtSeconds(s) {
    if (s == null || !Number.isFinite(s)) return '–';
    if (s < 1e-3) return (s * 1e6).toFixed(0) + ' µs';
    if (s < 1) return (s * 1e3).toFixed(s < 0.01 ? 2 : 1) + ' ms';
    return s.toFixed(2) + ' s';
  }
  function fmtRate(v) {
    if (v == null || !Number.isFinite(v)) return '–';
    return v >= 100 ? String(Math.round(v)) : v.toFixed(1);
  }
  function fmtUptime(s) {
    s = Math.floor(Number(s) || 0);
    const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600);
    const m = Math.floor((s % 3600) / 60), sec = s % 60;
    const pad = (x) => String(x).padStart(2, '0');
    if (d || h) return (d ? d + 'd ' : '') + h + 'h ' + pad(m) + 'm ' + pad(sec) + 's';
    return m ? m + 'm ' + pad(sec) + 's' : sec + 's';
  }
  const fmtPair = (a, b) => fmtSeconds(a) + ' / ' + fmtSeconds(b);

  // The row of `key` in `tbody` (created with one cell per class), rows of other keys removed.
  function syncRows(tbody, attr, keys, classes) {
    const rows = new Map();
    for (const tr of [...tbody.rows]) {
      if (keys.includes(tr.dataset[attr])) rows.set(tr.dataset[attr], tr);
      else tr.remove();
    }
    keys.forEach((k, i) => {
      let tr = rows.get(k);
      if (!tr) {
        tr = document.createElement('tr');
        tr.dataset[attr] = k;
        for (const c of classes) {
          const td = document.createElement('td');
          td.className = c;
          tr.appendChild(td);
        }
        rows.set(k, tr);
      }
      if (tbody.rows[i] !== tr) tbody.insertBefore(tr, tbody.rows[i] || null);
    });
    return rows;
  }

  function setCell(tr, cls, text, value) {
    const td = tr.querySelector('td.' + cls);
    if (td.textContent !== text) td.textContent = text;
    if (value !== undefined) td.dataset.value = value == null || !Number.isFinite(value) ? '' : String(value);
    return td;
  }

  const BACKEND_CELLS = ['name', 'url', 'state', 'inflight', 'reported', 'kv', 'tokps', 'ttft-p50',
    'ttft-p99', 'errors', 'migrated'];
  const ROUTE_CELLS = ['name', 'match', 'model', 'policy', 'backends', 'queued'];
  const TENANT_CELLS = ['tenant', 'class', 'queued', 'running', 'requests', 'tokps', 'wait'];

  function render(d, view) {
    $('version').textContent = d.version ? 'v' + d.version : '';
    $('uptime').textContent = fmtUptime(d.uptime_s);
    const g = d.gateway || {};
    $('connections').textContent = g.connections ?? '–';
    $('active').textContent = g.active_requests ?? '–';
    const st = g.state || {};
    $('state').textContent = st.kind === 'redis'
      ? (st.up ? 'redis up' : 'redis DOWN (local)') + (st.pending ? ` · ${st.pending} to write back` : '')
      : (st.kind || '–');
    $('state').classList.toggle('bad', st.kind === 'redis' && !st.up);
    const base = baseline(RECENT_S);
    const gBase = base && base.d.gateway && base.d.gateway.overhead;
    const ov = g.overhead || {};
    for (const k of ['request', 'relay']) {
      const h = histDelta(ov[k], gBase && gBase[k]);
      $('overhead-' + k).textContent = fmtPair(quantile(0.5, h), quantile(0.99, h));
    }
    const fleet = hist.fleet[hist.fleet.length - 1];
    $('fleet-tokps').textContent = fmtRate(fleet);
    $('fleet-tokps').dataset.value = fleet == null ? '' : String(fleet);

    const rows = syncRows($('backends').tBodies[0], 'backend', view.map((v) => v.b.name), BACKEND_CELLS);
    for (const v of view) {
      const b = v.b;
      const tr = rows.get(b.name);
      const nameTd = setCell(tr, 'name', b.name);
      nameTd.style.setProperty('--swatch', colorOf(b.name));
      nameTd.dataset.color = colorOf(b.name);
      setCell(tr, 'url', b.url || '');
      const state = String(b.state || 'unknown');
      const st = tr.querySelector('td.state');
      if (st.textContent !== state) {
        const badge = document.createElement('span');
        badge.className = 'badge state-' + state;
        badge.textContent = state;
        st.replaceChildren(badge);
      }
      const maxIn = Number(b.max_inflight) > 0 ? ' / ' + b.max_inflight : '';
      setCell(tr, 'inflight', String(b.inflight ?? '–') + maxIn, Number(b.inflight));
      const r = b.reported;
      setCell(tr, 'reported', r ? `${r.running ?? '–'} / ${r.waiting ?? '–'}` : '–');
      setCell(tr, 'kv', r && r.kv_usage != null ? (Number(r.kv_usage) * 100).toFixed(1) + '%' : '–',
        r ? Number(r.kv_usage) : null);
      setCell(tr, 'tokps', fmtRate(v.tokps), v.tokps);
      setCell(tr, 'ttft-p50', fmtSeconds(v.ttft50), v.ttft50);
      setCell(tr, 'ttft-p99', fmtSeconds(v.ttft99), v.ttft99);
      const er = setCell(tr, 'errors', v.errorRate == null ? '–' : (v.errorRate * 100).toFixed(1) + '%',
        v.errorRate);
      er.classList.toggle('bad', v.errorRate > 0);
      setCell(tr, 'migrated', `${b.migrated_out ?? 0} / ${b.migrated_in ?? 0}`,
        Number(b.migrated_out ?? 0));
      tr.dataset.state = state;
    }

    const routes = d.routes || [];
    const rrows = syncRows($('routes').tBodies[0], 'route', routes.map((r) => r.name), ROUTE_CELLS);
    for (const r of routes) {
      const tr = rrows.get(r.name);
      setCell(tr, 'name', r.name);
      setCell(tr, 'match', r.match || '(everything)');
      setCell(tr, 'model', r.model || '*');
      setCell(tr, 'policy', r.policy || '');
      setCell(tr, 'backends', (r.backends || []).join(', '));
      setCell(tr, 'queued', String(r.queued ?? 0), Number(r.queued));
    }

    // Tenants by class: generated tokens/s over the rate window, from the cumulative counts.
    const tenants = d.tenants || [];
    const keyOf = (row) => row.tenant + ' / ' + row.priority;
    const rateBase = baseline(RATE_S);
    const trows = syncRows($('tenants').tBodies[0], 'tenant', tenants.map(keyOf), TENANT_CELLS);
    for (const row of tenants) {
      const tr = trows.get(keyOf(row));
      const before = rateBase ? (rateBase.d.tenants || []).find((o) => keyOf(o) === keyOf(row)) : null;
      const tokps = rate(row, before, 'completion_tokens', rateBase ? Number(d.time) - rateBase.t : 0);
      setCell(tr, 'tenant', row.tenant);
      setCell(tr, 'class', row.priority);
      setCell(tr, 'queued', String(row.queued ?? 0), Number(row.queued));
      setCell(tr, 'running', String(row.running ?? 0), Number(row.running));
      setCell(tr, 'requests', String(row.requests ?? 0), Number(row.requests));
      setCell(tr, 'tokps', fmtRate(tokps), tokps);
      setCell(tr, 'wait', fmtPair(row.queue_wait_p50_s, row.queue_wait_p99_s),
        Number(row.queue_wait_p99_s));
    }
  }

  // ---- polling ----------------------------------------------------------------------------

  function setConn(state, detail) {
    const el = $('conn');
    const text = { live: 'live', disconnected: 'disconnected — retrying', error: 'bad data' }[state];
    el.textContent = text;
    el.className = 'badge conn-' + state;
    el.dataset.state = state;
    document.body.classList.toggle('stale', state !== 'live');
    el.title = detail || '';
  }

  async function poll() {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT_MS);
    let data = null;
    try {
      const r = await fetch(BASE + 'data', { cache: 'no-store', signal: ctl.signal });
      if (!r.ok) throw new Error('HTTP ' + r.status);
      data = await r.json();
    } catch (e) {
      setConn('disconnected', String(e && e.message ? e.message : e));
    } finally {
      clearTimeout(timer);
    }
    if (data) {
      try {
        ingest(data);
        setConn('live', '');
      } catch (e) {
        console.error(e);
        setConn('error', String(e && e.message ? e.message : e));
      }
    }
    setTimeout(poll, POLL_MS);
  }

  // Started once the page and its stylesheets have loaded (index.html adds this script early).
  function start() {
    FLEET_COLOR = css('--fg', FLEET_COLOR);
    $('uplot-license').href = BASE + 'vendor/uPlot.LICENSE.txt';
    poll();
  }
  window.llmuxDashboard = { quantile, histDelta, hist, charts };
  if (document.readyState === 'complete') start();
  else window.addEventListener('load', start, { once: true });
})();
