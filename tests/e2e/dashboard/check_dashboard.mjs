// SPDX-License-Identifier: Apache-2.0
// Opens llmux's live dashboard in headless Chromium (playwright-core, pinned in package.json,
// driving Debian's /usr/bin/chromium) and checks what a person would look at:
//   - every expected backend has a row, in state "up", with tokens/s > 0;
//   - the tokens/s chart (uPlot) holds points > 0 for each backend and has drawn them: pixels of
//     the backends' colours and of the fleet total's on its canvas (two backends at the same
//     rate draw one line over the other, so the colours are counted together);
//   - the page is live (no "disconnected" badge) and raised no script error.
// Saves a screenshot either way.
//
//   node check_dashboard.mjs URL --backends sim1,sim2 --screenshot FILE [--timeout 20]
//
// Exit status 0 when every check passed within the timeout; 1 with a message saying which did not.
import { chromium } from 'playwright-core';

function parseArgs(argv) {
  const args = { url: null, backends: [], screenshot: 'dashboard.png', timeout: 20 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--backends') args.backends = argv[++i].split(',').filter(Boolean);
    else if (a === '--screenshot') args.screenshot = argv[++i];
    else if (a === '--timeout') args.timeout = Number(argv[++i]);
    else if (!args.url) args.url = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (!args.url || args.backends.length === 0) {
    throw new Error('usage: node check_dashboard.mjs URL --backends a,b --screenshot FILE');
  }
  return args;
}

// What the page shows now, read in the page: rows, badge, the tokens/s chart's data and the
// number of pixels of its series' colours on its canvas.
function readPage(names) {
  const out = { conn: document.getElementById('conn')?.dataset.state, backends: {}, chart: null };
  for (const name of names) {
    const tr = document.querySelector(`#backends tr[data-backend="${CSS.escape(name)}"]`);
    if (!tr) continue;
    const cell = (c) => tr.querySelector(`td.${c}`);
    out.backends[name] = {
      state: cell('state').textContent,
      tokps: Number.parseFloat(cell('tokps').dataset.value),
      tokpsText: cell('tokps').textContent,
      ttftP50: cell('ttft-p50').textContent,
      color: cell('name').dataset.color,
    };
  }
  // The tenants table: the bench's requests name no tenant or class (anonymous, default).
  const tenant = document.querySelector('#tenants tr[data-tenant="anonymous / default"]');
  out.tenant = tenant
    ? {
        requests: Number(tenant.querySelector('td.requests').dataset.value),
        tokps: Number.parseFloat(tenant.querySelector('td.tokps').dataset.value),
      }
    : null;
  const box = document.getElementById('chart-tokps');
  const canvas = box?.querySelector('canvas');
  if (canvas && canvas.width > 0 && canvas.height > 0) {
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const hex = (h) => [1, 3, 5].map((i) => Number.parseInt(h.slice(i, i + 2), 16));
    const colors = (box.dataset.colors || '').split(' ').filter(Boolean); // backends..., fleet
    const wanted = colors.map(hex);
    const counts = wanted.map(() => 0);
    let painted = 0;
    for (let p = 0; p < data.length; p += 4) {
      if (data[p + 3] < 200) continue;
      painted++;
      wanted.forEach((w, k) => {
        if (w && Math.abs(data[p] - w[0]) + Math.abs(data[p + 1] - w[1]) + Math.abs(data[p + 2] - w[2]) < 40) {
          counts[k]++;
        }
      });
    }
    // The chart's own data: per series label, how many points are > 0.
    const u = window.llmuxDashboard?.charts?.tokps;
    const positive = {};
    if (u) {
      u.series.forEach((s, k) => {
        if (k > 0) positive[s.label] = u.data[k].filter((v) => v > 0).length;
      });
    }
    const fleetPixels = counts[counts.length - 1] ?? 0;
    out.chart = { width: canvas.width, height: canvas.height, painted, points: Number(box.dataset.points),
      positive, fleetPixels, backendPixels: counts.slice(0, -1).reduce((a, b) => a + b, 0) };
  }
  return out;
}

function problems(state, names) {
  const p = [];
  if (state.conn !== 'live') p.push(`the connection badge says "${state.conn}", not live`);
  for (const n of names) {
    const b = state.backends[n];
    if (!b) {
      p.push(`no row for backend ${n}`);
      continue;
    }
    if (b.state !== 'up') p.push(`backend ${n} is "${b.state}", not up`);
    if (!(b.tokps > 0)) p.push(`backend ${n} shows tokens/s "${b.tokpsText}", not > 0`);
  }
  if (!state.tenant) p.push('no row for tenant anonymous, class default in the tenants table');
  else if (!(state.tenant.requests > 0 && state.tenant.tokps > 0)) {
    p.push(`the tenants table shows ${state.tenant.requests} requests at ${state.tenant.tokps} tokens/s`);
  }
  if (!state.chart) p.push('the tokens/s chart has no canvas');
  else {
    for (const n of names) {
      if (!(state.chart.positive[n] >= 2)) {
        p.push(`the tokens/s chart has ${state.chart.positive[n] ?? 0} points > 0 for ${n} (wants 2)`);
      }
    }
    // A 2-pixel line across a few seconds of the chart: well over 50 pixels of its colour.
    if (!(state.chart.backendPixels >= 50)) {
      p.push(`the tokens/s chart shows ${state.chart.backendPixels} pixels of the backends' colours`);
    }
    if (!(state.chart.fleetPixels >= 50)) {
      p.push(`the tokens/s chart shows ${state.chart.fleetPixels} pixels of the fleet line's colour`);
    }
  }
  return p;
}

const args = parseArgs(process.argv.slice(2));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  timeout: 30_000,
});
let failed = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    // A failed fetch shows as its response below, with its URL.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) {
      errors.push(`console error: ${m.text()}`);
    }
  });
  page.on('response', (r) => {
    if (r.status() >= 400) errors.push(`GET ${r.url()}: ${r.status()}`);
  });
  page.on('requestfailed', (r) => errors.push(`GET ${r.url()}: ${r.failure()?.errorText}`));
  const resp = await page.goto(args.url, { waitUntil: 'load', timeout: 15_000 });
  if (!resp || resp.status() !== 200) throw new Error(`GET ${args.url}: ${resp ? resp.status() : 'no response'}`);
  console.log(`loaded ${args.url} (${resp.headers()['content-type']})`);
  // The page's percentiles are Prometheus's histogram_quantile: linear within the bucket holding
  // the rank, the highest finite bound for a rank in +Inf.
  const q = await page.evaluate(() => {
    const h = { le: [0.1, 0.2, Infinity], counts: [10, 20, 25] };
    return [0.5, 0.75, 0.99].map((x) => window.llmuxDashboard.quantile(x, h));
  });
  const want = [0.125, 0.1875, 0.2]; // ranks 12.5 and 18.75 in (0.1, 0.2]; 24.75 in +Inf
  if (q.some((v, i) => Math.abs(v - want[i]) > 1e-9)) {
    throw new Error(`quantiles ${JSON.stringify(q)}, want ${JSON.stringify(want)}`);
  }

  const deadline = Date.now() + args.timeout * 1000;
  let state;
  let left;
  for (;;) { // bounded by the deadline
    state = await page.evaluate(readPage, args.backends);
    left = problems(state, args.backends);
    if (left.length === 0 || Date.now() > deadline) break;
    await page.waitForTimeout(500);
  }
  // A little longer on the page so the screenshot shows a few more seconds of history.
  if (left.length === 0) await page.waitForTimeout(Number(process.env.SCREENSHOT_DELAY_MS ?? 2000));
  await page.screenshot({ path: args.screenshot, fullPage: true });
  console.log(`screenshot: ${args.screenshot}`);
  console.log('page state:', JSON.stringify(state));
  failed = left.concat(errors);
} catch (e) {
  failed.push(String(e && e.stack ? e.stack : e));
} finally {
  await browser.close();
}
if (failed.length) {
  console.error(`FAIL: the dashboard did not show the fleet working within ${args.timeout} s:`);
  for (const f of failed) console.error(`  - ${f}`);
  process.exit(1);
}
console.log(`PASS: ${args.backends.join(', ')} up with tokens/s > 0 and drawn on the chart`);
