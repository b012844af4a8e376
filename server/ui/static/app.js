// The netmgr dashboard: one page, hash-routed, no build step. It reads and
// acts through the servers' /v1 API with the session cookie that
// POST /ui/login set, and follows /ui/events (Server-Sent Events) for the
// timeline. When its server goes, it moves to another of the group.
'use strict';

const PAGE = 50;            // jobs per page
const REFRESH_MS = 800;     // a view redraws at most this often on events
const SETTLE_MS = 2000;     // and once more this long after an event's redraw
const TIMELINE_MAX = 300;   // timeline lines kept
const READ_TIMEOUT_MS = 8000;
const WRITE_TIMEOUT_MS = 20000;
const RETRY_503_MS = 15000; // how long a request retries while no leader answers
const STREAM_SILENCE_MS = 25000; // a stream quiet this long (no ping) is dead

const state = {
  base: '',                 // '' is this page's own server
  servers: [],              // the last /v1/servers answer
  user: null,
  insecure: false,
  insecureUser: sessionStorage.getItem('netmgr-user') || '',
  seen: new Set(),          // timeline keys shown
  es: null,                 // the EventSource
  streamBase: '',
  streamServer: '',
  streamFails: 0,
  leader: '',
  term: 0,
  view: null,               // the current view's name
  refreshTimer: null,
  routes: 0,                // route() calls started, numbering them
  drawn: 0,                 // the number of the route() whose answer is drawn
  routed: 0,                // route() calls that have ended (tests wait on it)
  logs: null,               // the output the job view showed last
  leaving: false,           // signInAt is taking the browser elsewhere
};

// ---------- small helpers ----------

// el builds an element: attributes (on* are listeners), then children
// (strings become text nodes; nothing here parses HTML).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}
const $ = (sel) => document.querySelector(sel);

function fmtTime(t) {
  if (!t || t.startsWith('0001-')) return '';
  const d = new Date(t);
  return isNaN(d) ? '' : d.toLocaleString();
}
function clock(t) {
  const d = t ? new Date(t) : new Date();
  return d.toLocaleTimeString([], {hour12: false});
}
function fmtBytes(n) {
  if (!n) return '0 B';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + ' ' + units[i];
}
function stateCell(s) { return el('td', {class: 'state-' + String(s || '').split(/[ (]/)[0]}, s || ''); }
function table(headers, rows, empty) {
  if (!rows.length) return el('p', {class: 'muted'}, empty || 'Nothing to show.');
  return el('div', {class: 'table-wrap'}, el('table', {},
    el('thead', {}, el('tr', {}, headers.map((h) => el('th', {scope: 'col'}, h)))),
    el('tbody', {}, rows)));
}
function toast(msg) {
  const t = $('#toast');
  t.textContent = msg;
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 6000);
}
function render(...nodes) {
  const m = $('#main');
  m.replaceChildren(...nodes);
}

// ---------- the API ----------

class ApiError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

// bases lists where to send requests: the current server first, then the
// others of the group as /v1/servers named them.
function bases(first) {
  const proto = location.protocol + '//';
  const out = [first];
  const own = location.host;
  for (const s of state.servers) {
    // A wildcard listen address names no host a browser can reach.
    if (!s.http || /^(0\.0\.0\.0|\[::\]):/.test(s.http)) continue;
    const b = s.http === own ? '' : proto + s.http;
    if (!out.includes(b)) out.push(b);
  }
  if (!out.includes('')) out.push('');
  return out;
}

// api sends one request; reads are answered by whichever server gets them
// (?stale), writes are forwarded to the leader by the server. A server
// that cannot be reached is passed over for the next. While the group
// has no leader (503: electing one) it tries again for up to
// RETRY_503_MS, as the CLI does.
async function api(method, path, body, opts = {}) {
  const deadline = Date.now() + RETRY_503_MS;
  for (let wait = 250; ; wait = Math.min(2 * wait, 1000)) {
    try {
      return await apiOnce(method, path, body, opts);
    } catch (e) {
      if (e.status !== 503 || Date.now() + wait > deadline) throw e;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

// apiOnce is api without the retries of a group that has no leader.
async function apiOnce(method, path, body, opts) {
  let lastErr;
  for (const base of bases(state.base)) {
    let url = base + path;
    if (method === 'GET' && path.startsWith('/v1/')) url += (path.includes('?') ? '&' : '?') + 'stale';
    const headers = {};
    if (method !== 'GET') headers['X-Netmgr-Dashboard'] = '1';
    if (body !== undefined) headers['Content-Type'] = opts.raw ? 'application/octet-stream' : 'application/json';
    if (state.insecure && state.insecureUser) headers['X-Netmgr-User'] = state.insecureUser;
    let resp;
    try {
      // A server that hangs (stopped, cut off) is passed over too.
      resp = await fetch(url, {method, headers, credentials: 'include', cache: 'no-store',
        signal: AbortSignal.timeout(method === 'GET' ? READ_TIMEOUT_MS : WRITE_TIMEOUT_MS),
        body: body === undefined || opts.raw ? body : JSON.stringify(body)});
    } catch (e) {
      lastErr = e;
      // A write that timed out may have been done: say so rather than
      // send it again (a submit carries an idempotency key, so the page
      // may send it again itself).
      if (method !== 'GET' && e.name === 'TimeoutError' && !opts.idempotent) {
        throw new ApiError(0, 'no answer in time; the action may or may not have been done: reload to see');
      }
      continue;
    }
    if (base !== state.base) {
      state.base = base;
      timelineNote('now reading through ' + (base || location.host));
    }
    if (resp.status === 401) {
      const msg = await errorText(resp);
      if (!opts.quiet401 && base) signInAt(base);
      else if (!opts.quiet401) showLogin(msg);
      throw new ApiError(401, msg);
    }
    if (!resp.ok) throw new ApiError(resp.status, await errorText(resp));
    if (opts.raw) return resp;
    if (resp.status === 204) return null;
    return resp.json();
  }
  throw new ApiError(0, 'no server of the group answers (' + (lastErr && lastErr.message) + ')');
}
async function errorText(resp) {
  try {
    const j = await resp.json();
    return j.error || resp.statusText;
  } catch {
    return resp.status + ' ' + resp.statusText;
  }
}

// ---------- sign-in ----------

async function whoami() {
  try {
    const me = await api('GET', '/ui/whoami', undefined, {quiet401: true});
    state.user = me.user;
    state.insecure = !!me.insecure;
    $('#user').textContent = me.user + (me.insecure ? ' (insecure)' : '');
    $('#signout').hidden = false;
    return true;
  } catch (e) {
    if (e.status === 401) return false;
    throw e;
  }
}

function showLogin(msg) {
  state.view = 'login';
  stopStream();
  $('#user').textContent = '';
  $('#signout').hidden = true;
  const token = el('textarea', {id: 'token', name: 'token', autocomplete: 'off', spellcheck: 'false', required: true,
    'aria-describedby': 'token-help'});
  const err = el('p', {class: 'error', id: 'login-error', role: 'alert'}, msg && !/no client certificate or token/.test(msg) ? msg : '');
  const form = el('form', {class: 'login', onsubmit: async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    try {
      if (state.insecure) {
        state.insecureUser = token.value.trim();
        sessionStorage.setItem('netmgr-user', state.insecureUser);
      } else {
        await api('POST', '/ui/login', {token: token.value.trim()}, {quiet401: true});
      }
      await start();
    } catch (e) {
      err.textContent = e.message;
    }
  }},
  el('h2', {}, 'Sign in'),
  el('label', {for: 'token'}, state.insecure ? 'User name (this group runs without TLS)' : 'API token'),
  token,
  el('p', {class: 'muted', id: 'token-help'},
    'An admin issues one with ', el('code', {}, 'netmgr token create --user NAME'),
    '. The page keeps it in a cookie its scripts cannot read; Sign out forgets it.'),
  err,
  el('button', {type: 'submit', id: 'signin'}, 'Sign in'));
  render(form);
  token.focus();
}

// signInAt sends the browser to another server's own page to sign in
// there, when that server refuses the page: the page's own server stopped
// answering, and the browser keeps the sign-in cookie for the host name
// the user signed in at only (doc/dashboard.md). Signing in from this
// page instead would set a cookie on another site's response, which
// browsers may refuse. The other page says why and, once signed in,
// opens the view this one showed.
function signInAt(base) {
  if (state.leaving) return;
  state.leaving = true;
  stopStream();
  const q = new URLSearchParams({from: location.host, next: location.hash.replace(/^#\/?/, '')});
  location.assign(base + '/ui/#/signin?' + q);
}

// movedHere is what the page says when signInAt brought the browser
// here, or '' when it did not.
function movedHere() {
  const [path, query] = location.hash.replace(/^#\/?/, '').split('?');
  if (path !== 'signin') return '';
  const from = new URLSearchParams(query || '').get('from') || 'another server';
  return `Signed in at ${from} only: that server stopped answering, and a browser keeps a sign-in for ` +
    `each host name (or the sign-in ended). Sign in here, at ${location.host}.`;
}

// afterSignIn opens the view the page showed before signInAt brought it
// here.
function afterSignIn() {
  const [path, query] = location.hash.replace(/^#\/?/, '').split('?');
  if (path !== 'signin') return;
  const next = new URLSearchParams(query || '').get('next') || '';
  history.replaceState(null, '', '#/' + (next.startsWith('signin') ? '' : next.replace(/^\//, '')));
}

async function signOut() {
  try { await api('POST', '/ui/logout', undefined, {quiet401: true}); } catch { /* signed out anyway */ }
  sessionStorage.removeItem('netmgr-user');
  state.insecureUser = '';
  state.user = null;
  showLogin('Signed out.');
}

// ---------- the live timeline ----------

function addTimeline(e) {
  if (e.key && state.seen.has(e.key)) return;
  if (e.key) state.seen.add(e.key);
  const li = el('li', {class: e.kind || ''},
    el('time', {datetime: e.at || ''}, clock(e.at)), e.text || e.kind);
  const ol = $('#timeline');
  ol.prepend(li);
  while (ol.children.length > TIMELINE_MAX) ol.lastChild.remove();
  if (e.kind === 'leader_elected') {
    state.leader = e.leader;
    state.term = e.term;
  } else if (e.kind === 'leader_lost') {
    state.leader = '';
  }
}
function timelineNote(text) {
  addTimeline({kind: 'note', text, at: new Date().toISOString()});
}

function setConn(ok, text) {
  const c = $('#conn');
  c.textContent = text;
  c.className = 'conn ' + (ok ? 'ok' : 'bad');
}

function stopStream() {
  if (state.es) state.es.close();
  state.es = null;
}

// connect follows /ui/events on one server; when the stream breaks it
// tries the next server at once, so a page whose server died carries on
// through another.
function connect(base) {
  stopStream();
  state.streamBase = base;
  const es = new EventSource(base + '/ui/events', {withCredentials: true});
  state.es = es;
  es.addEventListener('hello', (m) => {
    heard = Date.now();
    const h = JSON.parse(m.data);
    if (state.streamServer && state.streamServer !== h.server) timelineNote('live through ' + h.server);
    state.streamServer = h.server;
    state.streamFails = 0;
    setConn(true, 'live: ' + h.server);
  });
  // The server pings every 10 s; a stream silent for longer than
  // STREAM_SILENCE_MS (its server hangs or is cut off) is given up.
  let heard = Date.now();
  const watchdog = setInterval(() => {
    if (state.es !== es) { clearInterval(watchdog); return; }
    if (Date.now() - heard > STREAM_SILENCE_MS) { clearInterval(watchdog); es.onerror(); }
  }, 1000);
  es.addEventListener('ping', () => { heard = Date.now(); });
  es.onmessage = (m) => {
    heard = Date.now();
    const e = JSON.parse(m.data);
    addTimeline(e);
    scheduleRefresh(e);
  };
  es.onerror = () => {
    if (state.es !== es) return;
    clearInterval(watchdog);
    es.close();
    state.streamFails++;
    setConn(false, 'reconnecting');
    if (state.streamServer) timelineNote('lost the stream from ' + state.streamServer);
    state.streamServer = '';
    const all = bases(base);
    const next = all[state.streamFails % all.length];
    const wait = state.streamFails <= all.length ? 100 : 1000;
    setTimeout(async () => {
      if (state.es !== es) return;
      if (state.streamFails % all.length === 0) {
        // Every server refused or failed: maybe the sign-in ended.
        try { await api('GET', '/ui/whoami', undefined); } catch (e) { if (e.status === 401) return; }
      }
      connect(next);
    }, wait);
  };
}

// scheduleRefresh redraws the current view soon after events that change
// what it shows (at most every REFRESH_MS).
function scheduleRefresh(e) {
  const v = state.view;
  if (!v || v === 'login' || v === 'submit') return;
  const k = e.kind || '';
  const relevant = {
    servers: k.startsWith('leader') || k === 'server-removed',
    machines: k.startsWith('machine') || k.startsWith('instance') || k.startsWith('reservation'),
    jobs: k.startsWith('job') || k.startsWith('instance'),
    job: k.startsWith('job') || k.startsWith('instance'),
    queues: k.startsWith('queue') || k.startsWith('job') || k.startsWith('instance'),
    reservations: k.startsWith('reserv'),
  }[v];
  if (!relevant || state.refreshTimer) return;
  const later = () => {
    // Not while the user types in a field of the view: the redraw would
    // lose what they typed.
    const a = document.activeElement;
    if (a && $('#main').contains(a) && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName)) {
      state.refreshTimer = setTimeout(later, REFRESH_MS);
      return;
    }
    state.refreshTimer = null;
    route(true);
    // The redraw starts after the event came, so when the page reads
    // from the server it streams from (which publishes an event once it
    // has applied it) it reads the event's change, and route draws no
    // older answer over it. Once more a little later for the rest: reads
    // answered by another server than the stream's (after a move), which
    // may not have applied the event's entry yet, and a redraw whose
    // reads failed.
    if (!e.settle) setTimeout(() => scheduleRefresh({...e, settle: true}), SETTLE_MS);
  };
  state.refreshTimer = setTimeout(later, REFRESH_MS);
}

// ---------- views ----------

async function viewServers() {
  const list = await api('GET', '/v1/servers');
  state.servers = list;
  const rows = list.map((s) => el('tr', {},
    el('td', {}, s.name), stateCell(s.role), el('td', {}, s.term || ''), el('td', {}, s.last_index || ''),
    el('td', {}, s.commit_index || ''), el('td', {}, s.last_contact || ''),
    el('td', {class: s.healthy ? 'healthy' : 'unhealthy wrap'}, s.healthy ? 'healthy' : (s.problem || s.error || 'unhealthy')),
    el('td', {}, s.version || ''), el('td', {}, s.http || '')));
  const leader = list.find((s) => s.role === 'leader');
  return [el('h2', {}, 'Server group'),
    el('p', {}, leader ? `Leader ${leader.name}, term ${leader.term}.` : 'No leader answers.'),
    table(['name', 'role', 'term', 'last index', 'commit', 'last contact', 'health', 'version', 'address'], rows)];
}

function machineState(m) {
  let s = m.state;
  if (m.asleep) s += ' (' + m.asleep + ')';
  if (m.problem) s += ': ' + m.problem;
  return s;
}

async function viewMachines() {
  const list = await api('GET', '/v1/machines');
  const rows = list.map((m) => el('tr', {},
    el('td', {}, m.name), stateCell(machineState(m)), el('td', {}, m.arch), el('td', {}, (m.load ?? 0).toFixed(2)),
    el('td', {}, `${m.running}/${m.slots}`), el('td', {}, m.cpus), el('td', {}, m.memory_mb),
    el('td', {}, m.reserved_by ? m.reserved_by + (m.reserved_until ? ' until ' + fmtTime(m.reserved_until) : '') : ''),
    el('td', {class: 'wrap'}, (m.keys || []).join(', '))));
  const up = list.filter((m) => m.state === 'up').length;
  return [el('h2', {}, 'Machines'), el('p', {class: 'muted'}, `${list.length} machines, ${up} up.`),
    table(['name', 'state', 'arch', 'load', 'running/slots', 'cpus', 'mem MB', 'reserved', 'keys'], rows, 'No machines have joined.')];
}

function instSummary(j) {
  const n = {};
  for (const i of j.instances || []) n[i.state] = (n[i.state] || 0) + 1;
  return Object.entries(n).map(([k, v]) => `${v} ${k}`).join(', ');
}

async function viewJobs(params) {
  const f = {owner: params.get('owner') || '', state: params.get('state') || '', queue: params.get('queue') || '',
    name: params.get('name') || ''};
  const offset = Math.max(0, parseInt(params.get('offset') || '0', 10) || 0);
  const q = new URLSearchParams({...f, offset: String(offset), limit: String(PAGE)});
  const resp = await api('GET', '/v1/jobs?' + q, undefined, {raw: true});
  const list = await resp.json();
  const total = parseInt(resp.headers.get('X-Netmgr-Total-Count') || String(list.length), 10);
  const input = (name, label) => el('label', {}, label, el('input', {name, value: f[name], type: 'search'}));
  const form = el('form', {class: 'filters', onsubmit: (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const [k, v] of new FormData(ev.target)) if (v) p.set(k, v);
    location.hash = '#/jobs?' + p;
  }},
  input('owner', 'Owner'),
  el('label', {}, 'State', el('select', {name: 'state'},
    ['', 'queued', 'held', 'running', 'scheduled', 'done', 'failed', 'killed', 'cancelled'].map((s) =>
      el('option', {value: s, selected: s === f.state}, s || 'any')))),
  input('queue', 'Queue'), input('name', 'Name'),
  el('button', {type: 'submit'}, 'Filter'));
  const rows = list.map((j) => el('tr', {},
    el('td', {}, el('a', {href: '#/job/' + j.id}, String(j.id))), el('td', {}, j.name, gangBadge(j)), el('td', {}, j.owner),
    stateCell(j.state), el('td', {}, j.spec.queue || 'default'), el('td', {}, instSummary(j)),
    el('td', {}, fmtTime(j.submitted_at))));
  const page = (off) => {
    const p = new URLSearchParams(f);
    for (const k of [...p.keys()]) if (!p.get(k)) p.delete(k);
    if (off) p.set('offset', String(off));
    return '#/jobs?' + p;
  };
  const pager = el('div', {class: 'pager'},
    offset > 0 ? el('a', {href: page(Math.max(0, offset - PAGE)), rel: 'prev'}, '← newer') : null,
    el('span', {class: 'muted'}, total ? `${offset + 1}–${offset + list.length} of ${total}` : ''),
    offset + PAGE < total ? el('a', {href: page(offset + PAGE), rel: 'next'}, 'older →') : null);
  return [el('h2', {}, 'Jobs'), form,
    table(['id', 'name', 'owner', 'state', 'queue', 'instances', 'submitted'], rows, 'No jobs match.'), pager];
}

async function act(ref, action) {
  if (action === 'kill' && !confirm(`Kill job ${ref}?`)) return;
  try {
    await api('POST', `/v1/jobs/${encodeURIComponent(ref)}/${action}`, {});
    toast(`${action}: job ${ref} done`);
    route(true);
  } catch (e) {
    toast(`${action} job ${ref}: ${e.message}`);
  }
}

// historyTable is the accounting of a job's ended attempts, from the
// server's history (GET /v1/history?job=ID), which outlives the job.
async function historyTable(id) {
  try {
    const list = await api('GET', '/v1/history?job=' + encodeURIComponent(id));
    const rows = (list || []).map((a) => el('tr', {},
      el('td', {}, a.instance), el('td', {}, a.attempt), stateCell(a.state), el('td', {}, a.machine || ''),
      el('td', {}, fmtTime(a.ended_at)), el('td', {}, ((a.user_ms || 0) + (a.sys_ms || 0)) / 1000 + ' s'),
      el('td', {}, a.max_rss_kb ? Math.round(a.max_rss_kb / 1024) + ' MB' : ''),
      el('td', {class: 'wrap'}, a.reason || a.error || '')));
    return [el('h3', {}, 'History'),
      table(['#', 'attempt', 'state', 'machine', 'ended', 'cpu', 'max rss', 'reason'], rows, 'No attempt has ended yet.')];
  } catch (e) {
    return [el('h3', {}, 'History'), el('p', {class: 'muted'}, e.message)];
  }
}

async function viewJob(ref) {
  let j;
  try {
    j = await api('GET', '/v1/jobs/' + encodeURIComponent(ref));
  } catch (e) {
    // A job the retention removed lives on in the history.
    if (e.status !== 404 || !/^[0-9]+$/.test(ref)) throw e;
    return [el('h2', {}, `Job ${ref}`), el('p', {class: 'muted'}, e.message), ...(await historyTable(ref))];
  }
  const live = ['queued', 'held', 'running', 'scheduled'].includes(j.state);
  const has = (s) => (j.instances || []).some((i) => i.state === s);
  const actions = el('div', {class: 'actions'},
    el('button', {type: 'button', id: 'suspend', disabled: !has('running'), onclick: () => act(j.id, 'suspend')}, 'Suspend'),
    el('button', {type: 'button', id: 'resume', disabled: !has('suspended'), onclick: () => act(j.id, 'resume')}, 'Resume'),
    el('button', {type: 'button', id: 'restart', disabled: !live, onclick: () => act(j.id, 'restart')}, 'Restart'),
    el('button', {type: 'button', class: 'danger', id: 'kill', disabled: !live, onclick: () => act(j.id, 'kill')}, 'Kill'));
  const inst = (j.instances || []).map((i) => el('tr', {},
    el('td', {}, i.index), el('td', {}, i.attempt), stateCell(i.state), el('td', {}, i.machine || ''),
    el('td', {}, fmtTime(i.started_at)), el('td', {}, fmtTime(i.ended_at)),
    el('td', {}, i.ended_at && !i.ended_at.startsWith('0001-') ? (i.signal || String(i.exit_code)) : ''),
    el('td', {class: 'wrap'}, i.reason || i.error || '')));
  const hist = [];
  for (const i of j.instances || []) {
    for (const a of i.history || []) {
      hist.push(el('tr', {}, el('td', {}, i.index), el('td', {}, a.attempt), stateCell(a.state), el('td', {}, a.machine || ''),
        el('td', {}, fmtTime(a.started_at)), el('td', {}, fmtTime(a.ended_at)),
        el('td', {class: 'wrap'}, a.reason || a.error || '')));
    }
  }
  const out = [el('h2', {}, `Job ${j.id} ${j.name}.${j.owner}`),
    el('dl', {class: 'kv'},
      el('dt', {}, 'state'), el('dd', {class: 'state-' + j.state}, j.state),
      el('dt', {}, 'queue'), el('dd', {}, j.spec.queue || 'default'),
      el('dt', {}, 'submitted'), el('dd', {}, fmtTime(j.submitted_at)),
      el('dt', {}, 'binaries'), el('dd', {}, Object.entries(j.spec.binaries || {}).map(([k, v]) => k + '=' + v).join(', ')),
      el('dt', {}, 'args'), el('dd', {}, (j.spec.args || []).join(' ')),
      gangFacts(j)),
    actions,
    el('h3', {}, 'Instances'),
    table([gangSize(j) ? 'rank' : '#', 'attempt', 'state', 'machine', 'started', 'ended', 'exit', 'reason'], inst)];
  if ((j.instances || []).some((i) => i.state === 'queued') || j.state === 'held') {
    try {
      const why = await api('GET', `/v1/jobs/${j.id}/why`);
      out.push(el('h3', {}, 'Why it waits'),
        el('ul', {}, (why || []).map((w) => el('li', {}, `instance ${w.instance}: ${w.reason}`))));
    } catch (e) {
      out.push(el('p', {class: 'error'}, 'why: ' + e.message));
    }
  }
  if (hist.length) {
    out.push(el('h3', {}, 'Earlier attempts'),
      table(['#', 'attempt', 'state', 'machine', 'started', 'ended', 'reason'], hist));
  }
  out.push(...filesPanel(j));
  out.push(logsPanel(j));
  out.push(...(await historyTable(j.id)));
  return out;
}

// gangSize is the number of instances of a gang job (spec option gang,
// netexec --gang), 0 for another job.
function gangSize(j) {
  return j.spec && j.spec.gang ? (j.instances || []).length || j.spec.min || 1 : 0;
}
function gangBadge(j) {
  const n = gangSize(j);
  return n ? [' ', el('span', {class: 'badge', title: 'placed, stopped and restarted together'}, 'gang of ' + n)] : null;
}

// gangFacts are the job view's lines about a gang: its size and the
// machine of each rank (an instance's rank is its index), as the
// instances are told in NETMGR_GANG_HOSTS.
function gangFacts(j) {
  const n = gangSize(j);
  if (!n) return null;
  const hosts = (j.instances || []).map((i) => `${i.index}: ${i.machine || 'not placed'}`).join(', ');
  return [el('dt', {}, 'gang'), el('dd', {id: 'gang'}, `gang of ${n}, placed together; rank ${hosts}`)];
}

// filesPanel shows a job's files (doc/files.md): the copy_in archive, the
// copy_out paths, and per instance what its latest attempt kept and
// what it asked for and did not keep; `netmgr fetch` writes them out.
function filesPanel(j) {
  const sp = j.spec || {};
  const outs = j.outputs || [];
  if (!(sp.copy_in || []).length && !(sp.copy_out || []).length && !outs.length) return [];
  const facts = el('dl', {class: 'kv'});
  if ((sp.copy_in || []).length) {
    facts.append(el('dt', {}, 'copy in'), el('dd', {}, sp.copy_in.join(', '),
      sp.copy_in_blob ? el('span', {class: 'muted', title: 'sha256 ' + sp.copy_in_blob},
        ` (archive ${sp.copy_in_blob.slice(0, 12)}…, ${fmtBytes(sp.copy_in_size)})`) : null));
  }
  if ((sp.copy_out || []).length) facts.append(el('dt', {}, 'copy out'), el('dd', {}, sp.copy_out.join(', ')));
  const section = el('section', {id: 'files'}, el('h3', {}, 'Files'), facts);
  if (!(sp.copy_out || []).length && !outs.length) return [section];
  const byInst = new Map(outs.map((o) => [o.instance, o]));
  const rows = (j.instances || []).filter((i) => byInst.has(i.index) || (sp.copy_out || []).length).map((i) => {
    const o = byInst.get(i.index);
    if (!o) return el('tr', {}, el('td', {}, i.index), el('td', {}, ''), el('td', {}, ''),
      el('td', {class: 'muted'}, 'nothing yet: kept when an attempt ends'), el('td', {}, ''), el('td', {}, ''));
    return el('tr', {}, el('td', {}, o.instance), el('td', {}, o.attempt), el('td', {}, o.machine || ''),
      el('td', {class: 'wrap'}, (o.files || []).join(', ') || (o.blob ? '' : 'nothing')),
      el('td', {}, o.blob ? fmtBytes(o.size) : ''),
      el('td', {class: 'wrap error'}, (o.lost || []).join('; ')));
  });
  section.append(table(['#', 'attempt', 'machine', 'kept', 'size', 'not kept'], rows, 'No outputs kept.'),
    el('p', {class: 'muted'}, el('code', {}, `netmgr fetch ${j.id} [DIR]`),
      ' writes the kept files out (one directory per instance) and lists what was not kept.'));
  return [section];
}

// logsPanel shows an instance's output on request. What it showed last
// survives the view's live redraws (state.logs).
function logsPanel(j) {
  const kept = state.logs && state.logs.job === j.id ? state.logs : null;
  const pre = el('pre', {id: 'logs', tabindex: '0', 'aria-label': 'output'}, kept ? kept.text : '');
  const inst = el('select', {name: 'instance'}, (j.instances || []).map((i) =>
    el('option', {value: i.index, selected: kept && String(kept.instance) === String(i.index)}, 'instance ' + i.index)));
  const stream = el('select', {name: 'stream'},
    el('option', {value: 'stdout'}, 'stdout'), el('option', {value: 'stderr', selected: kept && kept.stream === 'stderr'}, 'stderr'));
  const load = async () => {
    pre.textContent = 'loading…';
    let text;
    try {
      const q = new URLSearchParams({instance: inst.value, stream: stream.value});
      const resp = await api('GET', `/v1/jobs/${j.id}/logs?${q}`, undefined, {raw: true});
      text = await resp.text();
      text = text.length > 65536 ? '…' + text.slice(-65536) : (text || '(empty)');
    } catch (e) {
      text = e.message;
    }
    state.logs = {job: j.id, instance: inst.value, stream: stream.value, text};
    const now = document.getElementById('logs');
    if (now) now.textContent = text;
  };
  return el('section', {}, el('h3', {}, 'Output'),
    el('form', {class: 'filters', onsubmit: (ev) => { ev.preventDefault(); load(); }},
      el('label', {}, 'Instance', inst), el('label', {}, 'Stream', stream),
      el('button', {type: 'submit', class: 'secondary'}, 'Show output')), pre);
}

async function viewQueues() {
  const list = await api('GET', '/v1/queues');
  const remove = async (name) => {
    if (!confirm(`Remove queue ${name}?`)) return;
    try { await api('DELETE', '/v1/queues/' + encodeURIComponent(name)); toast('queue ' + name + ' removed'); route(true); } catch (e) { toast(e.message); }
  };
  const rows = list.map((q) => el('tr', {},
    el('td', {}, el('a', {href: '#/jobs?queue=' + encodeURIComponent(q.name)}, q.name)), el('td', {}, q.priority),
    el('td', {}, q.max_size || '∞'), el('td', {}, q.max_active || '∞'), el('td', {}, q.max_run_seconds || '∞'),
    el('td', {}, q.max_mem_mb || '∞'), el('td', {}, q.jobs), el('td', {}, q.waiting), el('td', {}, q.running),
    el('td', {}, el('button', {type: 'button', class: 'secondary', onclick: () => remove(q.name)}, 'Remove'))));
  const num = (name, label) => el('label', {}, label, el('input', {name, type: 'number', min: '0', inputmode: 'numeric'}));
  const form = el('form', {class: 'grid', id: 'queue-form', onsubmit: async (ev) => {
    ev.preventDefault();
    const d = Object.fromEntries(new FormData(ev.target));
    const body = {name: d.name};
    for (const k of ['priority', 'max_size', 'max_active', 'max_run_seconds', 'max_mem_mb']) body[k] = parseInt(d[k] || '0', 10) || 0;
    try {
      await api('PUT', '/v1/queues/' + encodeURIComponent(d.name), body);
      toast('queue ' + d.name + ' set');
      route(true);
    } catch (e) { toast('set queue: ' + e.message); }
  }},
  el('label', {}, 'Name', el('input', {name: 'name', required: true, pattern: '[A-Za-z0-9_.\\-]+'})),
  num('priority', 'Priority'), num('max_size', 'Max jobs'), num('max_active', 'Max running'),
  num('max_run_seconds', 'Max run (s)'), num('max_mem_mb', 'Max memory (MB)'),
  el('button', {type: 'submit'}, 'Create or change'));
  return [el('h2', {}, 'Queues'),
    table(['name', 'priority', 'max jobs', 'max running', 'max run s', 'max MB', 'jobs', 'waiting', 'running', ''], rows, 'No queues.'),
    el('h3', {}, 'Create or change a queue (admins)'), form];
}

async function viewReservations() {
  const list = await api('GET', '/v1/reservations');
  const end = async (id) => {
    try { await api('POST', '/v1/reservations/end', {id}); toast('reservation ' + id + ' ended'); route(true); } catch (e) { toast(e.message); }
  };
  const rows = list.map((r) => el('tr', {},
    el('td', {}, r.id), el('td', {}, r.owner), el('td', {class: 'wrap'}, (r.machines || []).join(', ')),
    el('td', {}, fmtTime(r.from)), el('td', {}, r.until ? fmtTime(r.until) : 'until unreserved'),
    el('td', {}, el('button', {type: 'button', class: 'secondary', onclick: () => end(r.id)}, 'Unreserve'))));
  const form = el('form', {class: 'grid', id: 'reserve-form', onsubmit: async (ev) => {
    ev.preventDefault();
    const d = Object.fromEntries(new FormData(ev.target));
    const body = {};
    const ms = (d.machines || '').split(',').map((s) => s.trim()).filter(Boolean);
    if (ms.length) body.machines = ms; else body.n = parseInt(d.n || '1', 10) || 1;
    const mins = parseFloat(d.minutes || '0');
    if (mins > 0) body.for = Math.round(mins * 60e9);
    try { await api('POST', '/v1/reservations', body); toast('reserved'); route(true); } catch (e) { toast('reserve: ' + e.message); }
  }},
  el('label', {}, 'Machines (comma-separated)', el('input', {name: 'machines'})),
  el('label', {}, 'or how many', el('input', {name: 'n', type: 'number', min: '1'})),
  el('label', {}, 'For minutes (empty: until unreserved)', el('input', {name: 'minutes', type: 'number', min: '0', step: 'any'})),
  el('button', {type: 'submit'}, 'Reserve'));
  return [el('h2', {}, 'Reservations'), table(['id', 'owner', 'machines', 'from', 'until', ''], rows, 'No reservations.'),
    el('h3', {}, 'Reserve machines'), form];
}

// ---------- the submit form: xnmgr's fields ----------

const list = (s) => (s || '').split(',').map((x) => x.trim()).filter(Boolean);
const words = (s) => (s || '').match(/"[^"]*"|\S+/g)?.map((w) => w.replace(/^"(.*)"$/, '$1')) || [];

function specFromForm(form) {
  const d = Object.fromEntries(new FormData(form));
  const spec = {binaries: {}};
  for (const line of (d.binaries || '').split('\n')) {
    const t = line.trim();
    if (!t) continue;
    const i = t.indexOf('=');
    if (i > 0) spec.binaries[t.slice(0, i).trim()] = t.slice(i + 1).trim();
    else spec.binaries['*'] = t;
  }
  const n = parseInt(d.min || '', 10);
  if (n > 0) spec.min = n;
  if (d.name) spec.name = d.name.trim();
  const args = words(d.args);
  if (args.length) spec.args = args;
  const env = list(d.env);
  if (env.length) spec.env = env;
  const keys = list(d.keys);
  if (keys.length) spec.keys = keys;
  const reqs = [];
  for (const r of list(d.require)) {
    const m = r.match(/^([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|==|!=|>|<)\s*(-?[0-9.]+)$/);
    if (m) reqs.push({attr: m[1], op: m[2], value: parseFloat(m[3])});
  }
  if (reqs.length) spec.requirements = reqs;
  const machines = list(d.machines);
  if (machines.length) spec.machines = machines;
  if (d.unique) spec.unique = true;
  if (d.gang) spec.gang = true;
  if (d.queue) spec.queue = d.queue.trim();
  if (d.restart) spec.restart = d.restart;
  if (d.mail) spec.mail = d.mail.trim() === 'owner' ? 'owner' : d.mail.trim();
  if (d.cron) spec.cron = d.cron.trim();
  const ci = [...(form.elements.copy_in_files.files || [])].map((f) => f.name), co = list(d.copy_out);
  if (ci.length) spec.copy_in = ci;
  if (co.length) spec.copy_out = co;
  return spec;
}

// tarArchive packs the chosen files into one tar archive, each under its
// own name at the top, as netexec packs copy_in (client/files.Pack); the
// servers keep it before the submit names it by its sha256.
async function tarArchive(chosen) {
  const enc = new TextEncoder();
  const parts = [];
  const seen = new Set();
  for (const f of chosen) {
    const name = enc.encode(f.name);
    if (name.length > 100) throw new Error(`copy_in ${f.name}: a name longer than 100 bytes`);
    if (seen.has(f.name)) throw new Error(`copy_in ${f.name}: two files of that name`);
    seen.add(f.name);
    const data = new Uint8Array(await f.arrayBuffer());
    const h = new Uint8Array(512);
    const octal = (off, len, n) => h.set(enc.encode(n.toString(8).padStart(len - 1, '0') + '\0'), off);
    h.set(name, 0);
    octal(100, 8, 0o644);
    octal(108, 8, 0);
    octal(116, 8, 0);
    octal(124, 12, data.length);
    octal(136, 12, Math.floor(f.lastModified / 1000));
    h.fill(32, 148, 156);
    h[156] = 48; // '0': a regular file
    h.set(enc.encode('ustar\x0000'), 257);
    const sum = h.reduce((a, b) => a + b, 0);
    h.set(enc.encode(sum.toString(8).padStart(6, '0') + '\0 '), 148);
    parts.push(h, data, new Uint8Array((512 - (data.length % 512)) % 512));
  }
  parts.push(new Uint8Array(1024));
  return new Uint8Array(await new Blob(parts).arrayBuffer());
}

// sendCopyIn has the servers keep the archive of the chosen files (PUT
// /v1/blobs/SHA256 answers once a majority hold it) and names it in spec.
async function sendCopyIn(form, spec) {
  const chosen = [...(form.elements.copy_in_files.files || [])];
  if (!chosen.length) return;
  const archive = await tarArchive(chosen);
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', archive));
  const sum = [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
  await api('PUT', '/v1/blobs/' + sum, archive, {raw: true, idempotent: true});
  spec.copy_in_blob = sum;
  spec.copy_in_size = archive.length;
}

function viewSubmit() {
  const specOut = el('pre', {class: 'spec', id: 'spec', 'aria-live': 'polite'}, '');
  const verdict = el('p', {id: 'verdict', role: 'status'}, '');
  const field = (name, label, attrs = {}) => el('label', {}, label, el('input', {name, ...attrs}));
  let timer = null;
  // One key per job: a submit the page sends again to another server
  // (its first server died) makes no second job.
  let submitKey = crypto.randomUUID();
  const check = async () => {
    const spec = specFromForm(form);
    if (!Object.keys(spec.binaries).length) {
      specOut.textContent = '';
      verdict.textContent = 'Give a binary.';
      verdict.className = 'muted';
      return;
    }
    try {
      const r = await api('POST', '/v1/jobs/check', {spec});
      specOut.textContent = r.spec;
      if (r.error) { verdict.textContent = 'Refused: ' + r.error; verdict.className = 'error'; }
      else if (r.unrunnable) { verdict.textContent = 'Would wait: ' + r.unrunnable; verdict.className = 'state-queued'; }
      else { verdict.textContent = "Runnable: a machine of the pool can run it now."; verdict.className = 'healthy'; }
    } catch (e) {
      verdict.textContent = e.message;
      verdict.className = 'error';
    }
  };
  const form = el('form', {class: 'grid', id: 'submit-form',
    oninput: () => { clearTimeout(timer); timer = setTimeout(check, 250); submitKey = crypto.randomUUID(); },
    onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const spec = specFromForm(form);
        await sendCopyIn(form, spec);
        const r = await api('POST', '/v1/jobs', {spec, idempotency_key: submitKey}, {idempotent: true});
        submitKey = crypto.randomUUID();
        toast(`submitted job ${r.id}` + (r.unrunnable ? ' (waits: ' + r.unrunnable + ')' : ''));
        location.hash = '#/job/' + r.id;
      } catch (e) { toast('submit: ' + e.message); }
    }},
  el('label', {}, 'Binary per architecture (KEY=PATH per line, or a path for any)',
    el('textarea', {name: 'binaries', rows: '2', required: true, placeholder: '/bin/sleep\nlinux-x86_64=/opt/app/bin/run'})),
  field('min', 'Number of machines', {type: 'number', min: '1', value: '1'}),
  field('args', 'Arguments', {placeholder: '300'}),
  field('env', 'Environment (K=V, comma-separated)'),
  field('name', 'Symbolic name'),
  el('label', {title: 'sent with the job and unpacked into its directory before it starts'},
    'Copy in (files from this computer)', el('input', {name: 'copy_in_files', type: 'file', multiple: true})),
  field('copy_out', 'Copy out (files, comma-separated)'),
  field('machines', 'Machine names (comma-separated)'),
  field('keys', 'Keys the machine must have'),
  field('require', 'Other attributes (mem>10, rating>=8)'),
  field('mail', 'Mail (owner or an address)'),
  el('label', {}, 'Auto-restart', el('select', {name: 'restart'},
    el('option', {value: ''}, 'default'), el('option', {value: 'no'}, 'no'),
    el('option', {value: 'on-failure'}, 'on-failure'), el('option', {value: 'always'}, 'always'))),
  el('label', {}, el('span', {}, 'Unique machines'), el('input', {name: 'unique', type: 'checkbox', value: '1'})),
  el('label', {title: 'all instances placed at once or none, stopped and restarted together'},
    el('span', {}, 'Gang (all at once)'), el('input', {name: 'gang', type: 'checkbox', value: '1'})),
  field('queue', 'Queue'),
  field('cron', 'Schedule (cron: MIN HOUR DAY MONTH WEEKDAY)'),
  el('button', {type: 'submit', id: 'submit'}, 'Submit'));
  return [el('h2', {}, 'Submit a job'), form, el('h3', {}, 'Spec'), specOut, verdict];
}

// ---------- routing ----------

const views = {
  servers: viewServers, machines: viewMachines, jobs: viewJobs, job: viewJob,
  queues: viewQueues, reservations: viewReservations, submit: viewSubmit,
};

// route draws the view the hash names; quiet keeps focus and scroll (a
// live refresh). Routes overlap (a redraw on an event starts while the
// view's first load still waits for its answers), and their answers may
// come back in any order: one is drawn only when no route started after
// it has been drawn already, so an answer read before an event never
// replaces one read after it.
async function route(quiet) {
  if (!state.user && !state.insecureUser) return;
  const hash = location.hash.replace(/^#\/?/, '') || 'servers';
  const [path, query] = hash.split('?');
  const [name, arg] = path.split('/');
  const view = views[name] ? name : 'servers';
  if (quiet && view === 'submit') return;
  const seq = ++state.routes;
  state.view = view;
  for (const a of document.querySelectorAll('nav a')) {
    a.toggleAttribute('aria-current', a.getAttribute('href') === '#/' + (view === 'job' ? 'jobs' : view));
    if (a.hasAttribute('aria-current')) a.setAttribute('aria-current', 'page');
  }
  try {
    const params = new URLSearchParams(query || '');
    const nodes = await views[view](view === 'job' ? arg : params);
    if (state.view !== view || seq < state.drawn) return;
    state.drawn = seq;
    const active = document.activeElement && document.activeElement.name;
    render(...[nodes].flat());
    if (quiet) {
      if (active) { const a = $('#main').querySelector(`[name="${CSS.escape(active)}"]`); if (a) a.focus(); }
    } else {
      $('#main').focus({preventScroll: true});
    }
    document.title = 'netmgr: ' + view;
  } catch (e) {
    if (e.status === 401) return;
    if (quiet || state.view !== view || seq < state.drawn) return;
    state.drawn = seq;
    render(el('h2', {}, view), el('p', {class: 'error', role: 'alert'}, e.message));
  } finally {
    state.routed++;
  }
}

async function start() {
  const signedIn = await whoami();
  if (state.insecure && !state.insecureUser) {
    // Without TLS nothing is proved: the page names its user, as the
    // CLI's X-Netmgr-User does.
    showLogin('');
    return;
  }
  if (!signedIn) {
    showLogin(movedHere());
    return;
  }
  afterSignIn();
  try { state.servers = await api('GET', '/v1/servers'); } catch { /* the view says so */ }
  connect(state.base);
  await route(false);
}

document.addEventListener('DOMContentLoaded', () => {
  $('#signout').addEventListener('click', signOut);
  window.addEventListener('hashchange', () => route(false));
  start().catch((e) => render(el('p', {class: 'error', role: 'alert'}, e.message)));
});
