// The live fleet page (docs/ui.md): one canvas cell per mock CN, fed by the daemon's /feed
// websocket (a snapshot, then one delta a second with only what changed), a CN's detail from
// /api/servers/:uuid, event buttons through /api/events (the control API's POST /events).
// Plain ES module, no build step; uPlot is served by the daemon from its node_modules.
// Times are UTC ISO 8601, as the CLI and the logs print them. The selected CN and the filters
// are in the URL (?server=&q=&profile=&state=), so a link shows the same view.
import uPlot from '/vendor/uPlot.esm.js';

const COLORS = {
  running: '#2ecc71',
  late: '#f1c40f',
  offline: '#e74c3c',
  partitioned: '#9b59b6',
  rebooting: '#3498db',
  starting: '#95a5a6',
  booting: '#e67e22',
};
const $ = (id) => document.getElementById(id);
const canvas = $('grid');
const ctx = canvas.getContext('2d', { alpha: false });

/** Per slot: {slot, uuid, hostname, profile, state, vms, hbAt}; removed slots are deleted. */
const cells = new Map();
let order = [];
let states = Object.keys(COLORS);
let lateMs = 11000;
let heartbeats = true;
let layout = { size: 10, cols: 1, gap: 1 };
let filter = { text: '', profile: '', state: '' };
let selected;
let updates = 0;
let connected = false;
let totals = { cns: 0, vms: 0, states: {} };
/** Heartbeats per second over the feed's window (two heartbeat intervals), as `mockcloud status` counts them. */
let hbRate;
let hbWindow = 10;
const series = { t: [], hb: [], tasks: [], lat: [], rss: [], err: [] };
const charts = {};

// ---- the feed

function connect() {
  const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/feed`);
  ws.onopen = () => setConn(true);
  ws.onclose = () => {
    setConn(false);
    setTimeout(connect, 2000);
  };
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.t === 'snapshot') snapshot(msg);
    else if (msg.t === 'delta') delta(msg);
    updates++;
    render();
  };
}

function setConn(up) {
  connected = up;
  const el = $('conn');
  el.textContent = up ? 'live' : 'disconnected: retrying';
  el.className = `conn ${up ? 'up' : 'down'}`;
}

function cellOf(a, now) {
  const [slot, uuid, hostname, profile, state, vms, hbAge] = a;
  return { slot, uuid, hostname, profile, state: states[state], vms, hbAt: hbAge < 0 ? undefined : now - hbAge };
}

function snapshot(msg) {
  states = msg.states;
  lateMs = msg.lateMs;
  heartbeats = msg.heartbeats;
  cells.clear();
  const now = Date.now();
  for (const a of msg.cells) cells.set(a[0], cellOf(a, now));
  for (const k of Object.keys(series)) series[k] = [];
  for (const p of msg.series) pushPoint(p);
  totals = msg.totals;
  if (typeof msg.heartbeatsPerSecond === 'number') hbRate = msg.heartbeatsPerSecond;
  if (msg.windowSeconds) hbWindow = msg.windowSeconds;
  relayout();
  fillProfiles();
  selectFromUrl();
}

function delta(msg) {
  const now = Date.now();
  let membership = false;
  for (const slot of msg.removed) membership = cells.delete(slot) || membership;
  for (const a of msg.added) {
    cells.set(a[0], cellOf(a, now));
    membership = true;
  }
  for (const [slot, state, vms] of msg.changed) {
    const c = cells.get(slot);
    if (c) {
      c.state = states[state];
      c.vms = vms;
    }
  }
  for (const slot of msg.hb) {
    const c = cells.get(slot);
    if (c) c.hbAt = now;
  }
  if (msg.point) {
    pushPoint(msg.point);
    hbRate = msg.point.heartbeatsPerSecond;
  }
  totals = msg.totals;
  if (membership) {
    relayout();
    fillProfiles();
    selectFromUrl();
  }
  if (selected && msg.changed.some(([slot]) => cells.get(slot)?.uuid === selected)) refreshPanel();
}

function pushPoint(p) {
  series.t.push(p.t);
  series.hb.push(p.heartbeatsPerSecond);
  series.tasks.push(p.tasksPerSecond);
  series.lat.push(p.taskLatencyMs);
  series.rss.push(p.rssMiB);
  series.err.push(p.errorsPerSecond);
  if (series.t.length > 600) for (const k of Object.keys(series)) series[k].shift();
}

// ---- the grid

function relayout() {
  order = [...cells.values()].sort((a, b) => a.slot - b.slot);
  const width = Math.max(200, $('grid-wrap').clientWidth - 32);
  const n = Math.max(1, order.length);
  // The cells fill the grid's area above the charts (it scrolls when they cannot fit).
  const targetHeight = Math.max(120, $('grid-wrap').clientHeight - 24);
  const size = Math.max(4, Math.min(32, Math.floor(Math.sqrt((width * targetHeight) / n))));
  const cols = Math.max(1, Math.floor(width / size));
  const rows = Math.ceil(order.length / cols);
  layout = { size, cols, gap: size >= 8 ? 1 : 0 };
  const dpr = window.devicePixelRatio || 1;
  canvas.style.width = `${cols * size}px`;
  canvas.style.height = `${Math.max(1, rows) * size}px`;
  canvas.width = Math.round(cols * size * dpr);
  canvas.height = Math.round(Math.max(1, rows) * size * dpr);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
}

function matches(c) {
  if (filter.state && c.state !== filter.state) return false;
  if (filter.profile && c.profile !== filter.profile) return false;
  if (filter.text && !c.uuid.includes(filter.text) && !c.hostname.toLowerCase().includes(filter.text)) return false;
  return true;
}

function drawGrid() {
  const { size, cols, gap } = layout;
  const now = Date.now();
  ctx.fillStyle = '#14171c';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  // One path per colour: 10,000 cells are a handful of fills.
  const paths = new Map();
  const dimmed = new Map();
  const ages = new Path2D();
  let matching = 0;
  const inner = size - gap;
  const bar = Math.max(1, Math.floor(size / 5));
  for (let i = 0; i < order.length; i++) {
    const c = order[i];
    const x = (i % cols) * size;
    const y = Math.floor(i / cols) * size;
    const on = matches(c);
    if (on) matching++;
    const group = on ? paths : dimmed;
    let p = group.get(c.state);
    if (!p) group.set(c.state, (p = new Path2D()));
    p.rect(x, y, inner, inner);
    // Heartbeat age: a dark bar along the cell's foot, growing to the full width at "late".
    if (on && heartbeats && c.hbAt !== undefined && size >= 6) {
      const w = Math.min(1, (now - c.hbAt) / lateMs) * inner;
      if (w >= 1) ages.rect(x, y + inner - bar, w, bar);
    }
  }
  for (const [state, p] of paths) {
    ctx.fillStyle = COLORS[state] ?? '#888';
    ctx.fill(p);
  }
  ctx.globalAlpha = 0.15;
  for (const [state, p] of dimmed) {
    ctx.fillStyle = COLORS[state] ?? '#888';
    ctx.fill(p);
  }
  ctx.globalAlpha = 0.45;
  ctx.fillStyle = '#000';
  ctx.fill(ages);
  ctx.globalAlpha = 1;
  const sel = selected && order.findIndex((c) => c.uuid === selected);
  if (sel !== undefined && sel >= 0) {
    ctx.strokeStyle = '#fff';
    ctx.lineWidth = 2;
    ctx.strokeRect((sel % cols) * size - 1, Math.floor(sel / cols) * size - 1, inner + 2, inner + 2);
  }
  return matching;
}

function cellAt(ev) {
  const r = canvas.getBoundingClientRect();
  const col = Math.floor((ev.clientX - r.left) / layout.size);
  const row = Math.floor((ev.clientY - r.top) / layout.size);
  if (col < 0 || col >= layout.cols || row < 0) return undefined;
  return order[row * layout.cols + col];
}

function rectOf(uuid) {
  const i = order.findIndex((c) => c.uuid === uuid);
  if (i < 0) return undefined;
  const { size, cols, gap } = layout;
  return { x: (i % cols) * size, y: Math.floor(i / cols) * size, size: size - gap };
}

// ---- counters, legend, charts

function fmt(n) {
  if (n === null || n === undefined) return '–';
  return n >= 1000 ? n.toLocaleString('en-US', { maximumFractionDigits: 0 }) : String(Math.round(n * 10) / 10);
}

function renderCounters() {
  const last = series.t.length - 1;
  $('c-cns').textContent = fmt(totals.cns);
  $('c-vms').textContent = fmt(totals.vms);
  $('c-hb').textContent = hbRate !== undefined ? fmt(hbRate) : '–';
  $('c-hb').title = `over the last ${hbWindow} s`;
  $('c-tasks').textContent = last >= 0 ? fmt(series.tasks[last]) : '–';
  $('c-err').textContent = last >= 0 ? fmt(series.err[last]) : '–';
  $('legend').replaceChildren(
    ...states.map((s) => {
      const span = document.createElement('span');
      span.innerHTML = `<i class="sw" style="background:${COLORS[s]}"></i>`;
      span.append(`${s} ${fmt(totals.states?.[s] ?? 0)}`);
      return span;
    }),
  );
}

/** UTC, as the CLI and the logs: uPlot's time axis otherwise shows the browser's local time. */
const utc = (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC');

function chart(id, title, key, color, unit, dots = false, empty = undefined) {
  const el = $(id);
  const opts = {
    title,
    width: Math.max(160, el.clientWidth),
    height: 150,
    tzDate: utc,
    legend: { show: false },
    scales: { x: { time: true } },
    axes: [{ stroke: '#7b8494', grid: { stroke: '#2c323d' } }, { stroke: '#7b8494', grid: { stroke: '#2c323d' }, size: 50, label: unit }],
    // Latency has no value in a second without tasks: dots, so a lone second still shows.
    series: [{}, { stroke: color, width: 1.5, fill: `${color}22`, spanGaps: true, points: dots ? { show: true, size: 4, fill: color } : { show: false } }],
  };
  charts[key] = new uPlot(opts, [[], []], el);
  // A chart with nothing to draw says why, rather than an empty frame.
  if (empty) {
    const note = document.createElement('div');
    note.className = 'empty';
    note.textContent = empty.text;
    el.append(note);
    charts[key].empty = { note, test: empty.test };
  }
  // The charts follow their column's width (the window, the panel).
  new ResizeObserver(() => {
    const w = Math.max(160, el.clientWidth);
    if (w !== charts[key].width) charts[key].setSize({ width: w, height: 150 });
  }).observe(el);
}

function renderCharts() {
  for (const key of ['hb', 'tasks', 'lat', 'rss']) {
    const c = charts[key];
    if (!c) continue;
    c.setData([series.t, series[key]]);
    if (c.empty) c.empty.note.hidden = !c.empty.test();
  }
}

/** No task answered in the charts' 10 minutes. */
const noTasks = () => !series.lat.some((v) => v !== null && v !== undefined) && !series.tasks.some((v) => v > 0);

// ---- the side panel

const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const out = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(out.message ?? `HTTP ${res.status}`);
  return out;
}

let panelSeq = 0;
async function refreshPanel() {
  if (!selected) return;
  const seq = ++panelSeq;
  let d;
  try {
    d = await api('GET', `/api/servers/${selected}`);
  } catch (err) {
    if (seq === panelSeq) $('panel').innerHTML = `<p class="err">${esc(err.message)}</p>`;
    return;
  }
  if (seq !== panelSeq || d.uuid !== selected) return;
  renderPanel(d);
}

/** A time as the CLI and the logs print it: UTC ISO 8601, to the second. */
function iso(t) {
  if (t === null || t === undefined) return '–';
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? String(t) : d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** "12 s", "3 min 5 s", "2 h 4 min": how long ago, for a person. */
function ago(msAgo) {
  const s = Math.max(0, Math.round(msAgo / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function ms(n) {
  if (n === null || n === undefined) return '–';
  return n < 1000 ? `${n} ms` : n < 60000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n / 1000)} s`;
}

function renderPanel(d) {
  const holding = d.events.active.filter((e) => e.type === 'offline' || e.type === 'partition');
  const html = [];
  html.push(`<h2>${esc(d.hostname)} <span class="badge" style="background:${COLORS[d.state]}">${esc(d.state)}</span></h2>`);
  html.push(`<div class="mono">${esc(d.uuid)}</div>`);
  html.push('<div class="actions">');
  html.push(`<button data-act="offline" ${d.power === 'down' ? 'disabled' : ''}>Take offline (2 min)</button>`);
  html.push(`<button data-act="reboot" ${d.power === 'down' ? 'disabled' : ''}>Reboot</button>`);
  for (const e of holding) html.push(`<button data-end="${esc(e.id)}">End ${esc(e.type)}</button>`);
  html.push('</div><div class="msg" id="panel-msg"></div>');
  html.push('<table class="kv">');
  const row = (k, v) => html.push(`<tr><td>${esc(k)}</td><td>${v}</td></tr>`);
  row('profile', esc(d.profile));
  row('power', esc(d.power));
  row('registered', esc(d.registered));
  row('heartbeat age', esc(ms(d.heartbeatAgeMs)));
  const known = order.find((c) => c.uuid === d.uuid)?.hbAt;
  if (d.heartbeatAgeMs === null && known !== undefined) row('last heartbeat', esc(`${iso(known)} (${ago(Date.now() - known)} ago)`));
  row('admin IP', esc(d.adminIp ?? '–'));
  row('cn-agent', d.agentAddress ? `<span class="mono">${esc(d.agentAddress.ip)}:${esc(d.agentAddress.port)}</span>` : '–');
  row('platform', esc(d.sysinfo['Live Image']));
  row('RAM', esc(`${d.sysinfo['MiB of Memory']} MiB`));
  row('CPUs', esc(d.sysinfo['CPU Total Cores']));
  if (d.conditions) row('conditions', `<span class="mono">${esc(JSON.stringify(d.conditions))}</span>`);
  html.push('</table>');
  if (d.boot) {
    const b = d.boot;
    html.push('<h3>Last boot</h3><table class="kv" id="boot">');
    row('why, how', esc(`${b.cause}, ${b.path === 'booter' ? 'by booter' : 'direct'}: ${b.phase}`));
    if (b.path === 'booter') {
      row('DHCP', esc(`${b.dhcpPackets} packets, ${b.dhcpRetransmits} retransmits, ${b.dhcpFailedRounds} rounds unanswered`));
      row('to lease', esc(ms(b.leaseMs)));
      row('boot file', esc(b.bootFileFrom ?? '–'));
    }
    row('to running', esc(ms(b.runningMs)));
    row('platform', esc(b.platform ?? '–'));
    if (b.lastError) row('last error', esc(b.lastError));
    html.push('</table>');
  }

  html.push(`<h3>VMs (${d.vms.length})</h3>`);
  if (d.vms.length === 0) html.push('<p class="hint">none</p>');
  else {
    html.push('<table id="vms"><tr><th>alias</th><th>uuid</th><th>state</th><th>brand</th><th></th></tr>');
    for (const v of d.vms) {
      html.push(
        `<tr data-vm="${esc(v.uuid)}"><td>${esc(v.alias ?? '–')}</td><td class="mono">${esc(v.uuid.slice(0, 8))}</td>` +
          `<td class="vm-state">${esc(v.state)}</td><td>${esc(v.brand)}</td>` +
          `<td>${v.state === 'running' ? `<button data-crash="${esc(v.uuid)}">Crash</button>` : ''}</td></tr>`,
      );
    }
    html.push('</table>');
  }

  // config-agent's and firewaller's view of the CN (absent without a SAPI / FWAPI).
  const ag = d.agents ?? {};
  if ('configAgeSeconds' in ag || 'fwRules' in ag) {
    const cfg = !('configAgeSeconds' in ag) ? 'no SAPI' : ag.configAgeSeconds === null ? (ag.configStale ? 'stale: never checked' : 'not checked yet') : `${ag.configAgeSeconds}s old${ag.configStale ? ' (stale)' : ''}`;
    html.push(`<h3>Agents</h3><p id="agent-facts">config from SAPI: <span class="${ag.configStale ? 'err' : ''}">${esc(cfg)}</span>` +
      ('fwRules' in ag ? ` · firewall: ${esc(ag.fwRules)} rules, ${esc(ag.fwRvms)} remote VMs` : '') + '</p>');
  }

  html.push(`<h3>Recent tasks (${d.tasks.length})</h3>`);
  if (d.tasks.length === 0) html.push('<p class="hint">none since the CN came up</p>');
  else {
    html.push('<table><tr><th>task</th><th>status</th><th>started</th><th>took</th></tr>');
    for (const t of d.tasks) {
      html.push(
        `<tr><td>${esc(t.task)}</td><td class="${t.errorCount ? 'err' : ''}">${esc(t.status)}${t.errorCount ? ` (${t.errorCount} error${t.errorCount > 1 ? 's' : ''})` : ''}</td>` +
          `<td class="time">${esc(iso(t.startedAt))}</td><td>${esc(ms(t.durationMs))}</td></tr>`,
      );
      if (t.errors.length) html.push(`<tr><td colspan="4" class="err">${esc(t.errors.join('; '))}</td></tr>`);
    }
    html.push('</table>');
  }

  html.push(`<h3>Events</h3>`);
  if (d.events.active.length === 0 && d.events.recent.length === 0) html.push('<p class="hint">none</p>');
  else {
    html.push('<table><tr><th>when</th><th>event</th><th></th></tr>');
    // Which scenario (and step) applied it, when one did.
    const from = (e) =>
      e.source?.scenario
        ? ` <span class="hint">${esc(e.source.scenario)}${e.source.step !== undefined ? ` step ${esc(e.source.step)}` : ''}</span>`
        : e.source?.via
          ? ` <span class="hint">${esc(e.source.via)}</span>`
          : '';
    for (const e of d.events.active) html.push(`<tr><td class="time">${esc(iso(e.startedAt))}</td><td>${esc(e.type)}${from(e)}</td><td>active${e.endsAt ? ` until ${esc(iso(e.endsAt))}` : ''}</td></tr>`);
    for (const e of d.events.recent) html.push(`<tr><td class="time">${esc(iso(e.time))}</td><td>${esc(e.type ?? e.label)}${from(e)}</td><td>${esc(e.phase)}${e.reason ? ` (${esc(e.reason)})` : ''}</td></tr>`);
    html.push('</table>');
  }
  html.push(`<h3>sysinfo</h3><details><summary>${Object.keys(d.sysinfo).length} keys</summary><pre>${esc(JSON.stringify(d.sysinfo, null, 2))}</pre></details>`);
  const open = $('panel').querySelector('details')?.open;
  $('panel').innerHTML = html.join('');
  if (open) $('panel').querySelector('details').open = true;
  $('panel').dataset.server = d.uuid;
}

async function act(fn, what) {
  const msg = $('panel-msg');
  if (msg) msg.textContent = `${what}…`;
  try {
    await fn();
    if ($('panel-msg')) $('panel-msg').textContent = `${what}: done`;
  } catch (err) {
    if ($('panel-msg')) $('panel-msg').innerHTML = `<span class="err">${esc(what)}: ${esc(err.message)}</span>`;
  }
  setTimeout(refreshPanel, 300);
}

$('panel').addEventListener('click', (ev) => {
  const b = ev.target.closest('button');
  if (!b || !selected) return;
  const servers = [selected];
  if (b.dataset.act === 'offline') act(() => api('POST', '/api/events', { type: 'offline', target: { servers }, durationMs: 120000 }), 'take offline');
  else if (b.dataset.act === 'reboot') act(() => api('POST', '/api/events', { type: 'reboot', target: { servers } }), 'reboot');
  else if (b.dataset.crash) act(() => api('POST', '/api/events', { type: 'vm-crash', target: { servers }, params: { vms: [b.dataset.crash] } }), 'crash VM');
  else if (b.dataset.end) act(() => api('DELETE', `/api/events/${b.dataset.end}`), 'end event');
});

// ---- filters, selection, test hook

function fillProfiles() {
  const sel = $('f-profile');
  const have = new Set([...sel.options].map((o) => o.value));
  for (const p of [...new Set(order.map((c) => c.profile))].sort()) {
    if (!have.has(p)) sel.add(new Option(p, p));
  }
}

for (const s of Object.keys(COLORS)) $('f-state').add(new Option(s, s));

// ---- the view in the URL: ?server=UUID&q=TEXT&profile=NAME&state=STATE

/** The URL says what is shown: replaced (not pushed) at each change, so Back leaves the page. */
function saveUrl() {
  const p = new URLSearchParams();
  if (selected) p.set('server', selected);
  if (filter.text) p.set('q', filter.text);
  if (filter.profile) p.set('profile', filter.profile);
  if (filter.state) p.set('state', filter.state);
  const search = p.toString();
  history.replaceState(null, '', `${location.pathname}${search ? `?${search}` : ''}`);
}

/** The view a link asked for; the server is selected once its cell has come. */
const wanted = new URLSearchParams(location.search);
filter.text = (wanted.get('q') ?? '').trim().toLowerCase();
filter.profile = wanted.get('profile') ?? '';
filter.state = Object.keys(COLORS).includes(wanted.get('state')) ? wanted.get('state') : '';
$('search').value = filter.text;
$('f-state').value = filter.state;
let pendingServer = wanted.get('server') ?? undefined;

function selectFromUrl() {
  if (filter.profile && $('f-profile').value !== filter.profile && [...$('f-profile').options].some((o) => o.value === filter.profile)) {
    $('f-profile').value = filter.profile;
  }
  if (!pendingServer) return;
  const c = order.find((x) => x.uuid === pendingServer);
  if (!c) return;
  pendingServer = undefined;
  select(c);
}

function select(c) {
  selected = c.uuid;
  $('panel').innerHTML = `<p class="hint">loading ${esc(c.hostname)}…</p>`;
  saveUrl();
  render();
  refreshPanel();
}

$('search').addEventListener('input', (e) => {
  filter.text = e.target.value.trim().toLowerCase();
  saveUrl();
  render();
});
$('f-profile').addEventListener('change', (e) => {
  filter.profile = e.target.value;
  saveUrl();
  render();
});
$('f-state').addEventListener('change', (e) => {
  filter.state = e.target.value;
  saveUrl();
  render();
});
canvas.addEventListener('click', (ev) => {
  const c = cellAt(ev);
  if (c) select(c);
});
canvas.addEventListener('mousemove', (ev) => {
  const c = cellAt(ev);
  const tip = $('tip');
  if (!c) {
    tip.hidden = true;
    return;
  }
  tip.textContent = `${c.hostname} · ${c.state} · ${heartbeatWords(c)} · ${c.vms} VMs · ${c.profile}`;
  const r = $('grid-wrap').getBoundingClientRect();
  tip.style.left = `${ev.clientX - r.left + 12}px`;
  tip.style.top = `${ev.clientY - r.top + 12}px`;
  tip.hidden = false;
});
/** A cell's heartbeat for its tooltip: how long ago while it runs; when, for a CN that does not beat now. */
function heartbeatWords(c) {
  if (!heartbeats) return 'no CNAPI to heartbeat to';
  if (c.hbAt === undefined) return 'no heartbeat yet';
  const age = Date.now() - c.hbAt;
  if (c.state === 'running') return `heartbeat ${ms(age)} ago`;
  return `last heartbeat ${iso(c.hbAt)} (${ago(age)} ago)`;
}

canvas.addEventListener('mouseleave', () => ($('tip').hidden = true));
window.addEventListener('resize', () => {
  relayout();
  render();
});
// The panel follows its CN while open (VM states, tasks): every 3 s, one small request.
setInterval(() => {
  if (selected && document.visibilityState === 'visible') refreshPanel();
}, 3000);

// The latest boot storm's summary (docs/boot.md), when CNs have booted: every 5 s.
async function refreshBoots() {
  if (document.visibilityState !== 'visible') return;
  let s;
  try {
    s = (await (await fetch('/api/boots')).json()).summary;
  } catch {
    return;
  }
  const el = $('boots');
  el.hidden = !s;
  if (!s) return;
  const sec = (n) => (n === null ? '–' : `${(n / 1000).toFixed(1)} s`);
  el.textContent =
    `boots${s.eventId ? ` of event ${s.eventId.slice(0, 8)}` : ''}: ${s.boots}, ${s.running} running, ${s.notBack} not back · ` +
    `to lease p50 ${sec(s.leaseMs.p50)} p99 ${sec(s.leaseMs.p99)} · to running p50 ${sec(s.runningMs.p50)} p99 ${sec(s.runningMs.p99)} · ` +
    `${s.dhcpRetransmits} DHCP retransmits`;
}
refreshBoots();
setInterval(refreshBoots, 5000);

function render() {
  const matching = drawGrid();
  canvas.dataset.cells = String(order.length);
  $('matches').textContent = filter.text || filter.profile || filter.state ? `${matching} of ${order.length} match` : '';
  renderCounters();
  renderCharts();
  publish(matching);
}

/** A read-only view for tests and the console: `window.__fleet`. */
function publish(matching) {
  const byState = {};
  for (const c of order) byState[c.state] = (byState[c.state] ?? 0) + 1;
  const view = {
    connected,
    updates,
    cells: order.length,
    /** Cells the search and filters match (all of them with none set). */
    matching,
    states: byState,
    colors: { ...COLORS },
    selected: selected ?? null,
    cell: (uuid) => {
      const c = order.find((x) => x.uuid === uuid);
      if (!c) return null;
      return Object.freeze({ uuid: c.uuid, hostname: c.hostname, profile: c.profile, state: c.state, vms: c.vms, rect: Object.freeze(rectOf(uuid)) });
    },
  };
  Object.defineProperty(window, '__fleet', { value: Object.freeze(view), configurable: true, writable: false });
}

chart('ch-hb', 'heartbeats/s', 'hb', '#2ecc71', '');
chart('ch-tasks', 'tasks/s', 'tasks', '#3498db', '', false, { text: 'no tasks yet', test: noTasks });
chart('ch-lat', 'task latency (ms)', 'lat', '#f1c40f', '', true, { text: 'no tasks yet', test: noTasks });
chart('ch-rss', 'daemon RSS (MiB)', 'rss', '#9b59b6', '');
relayout();
render();
connect();
