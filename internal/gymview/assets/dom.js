// DOM and formatting helpers. Every string from a span or a capture reaches
// the page through textContent, a text node or setAttribute (never as markup).

export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  setAttrs(e, attrs);
  for (const c of children.flat()) {
    if (c != null && c !== false) e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

const SVG = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  setAttrs(e, attrs);
  for (const c of children.flat()) {
    if (c != null && c !== false) e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function setAttrs(e, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'text') e.textContent = String(v);
    else if (k === 'class') e.setAttribute('class', v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'data') for (const [dk, dv] of Object.entries(v)) e.dataset[dk] = String(dv);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
}

// href builds an in-page link: only ever "#/<page>?<query>".
export function href(page, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v != null && v !== '' && v !== false) q.set(k, String(v));
  }
  const s = q.toString();
  return '#/' + page + (s ? '?' + s : '');
}

// safeURL returns u when it is an absolute http(s) URL, else null.
export function safeURL(u) {
  try {
    const p = new URL(u);
    return p.protocol === 'http:' || p.protocol === 'https:' ? p.href : null;
  } catch {
    return null;
  }
}

// api fetches /api/<path>; the answer carries its ETag, so a poll that
// brings nothing new can skip the redraw.
export async function api(path, params) {
  const q = new URLSearchParams(params || {}).toString();
  const resp = await fetch('/api/' + path + (q ? '?' + q : ''), { cache: 'no-cache', headers: { Accept: 'application/json' } });
  let body = null;
  try {
    body = await resp.json();
  } catch {
    body = null;
  }
  if (!resp.ok) {
    throw new Error((body && body.error) || ('HTTP ' + resp.status));
  }
  return { data: body, etag: resp.headers.get('ETag') || '' };
}

export function errorBox(err) {
  return el('div', { class: 'error-box', role: 'alert', text: String(err && err.message ? err.message : err) });
}

export function fmtMS(ms) {
  if (ms == null || !isFinite(ms)) return '–';
  const a = Math.abs(ms);
  if (a >= 60000) return (ms / 60000).toFixed(1) + ' min';
  if (a >= 1000) return (ms / 1000).toFixed(a >= 10000 ? 1 : 2) + ' s';
  if (a >= 1) return ms.toFixed(a >= 100 ? 0 : 1) + ' ms';
  if (a === 0) return '0';
  return (ms * 1000).toFixed(0) + ' µs';
}

export const fmtNS = (ns) => fmtMS(ns / 1e6);

// fmtTime shows an RFC 3339 UTC time to the millisecond.
export function fmtTime(iso) {
  if (!iso) return '–';
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d{1,3})?\d*Z$/.exec(iso);
  return m ? m[1] + ' ' + m[2] + (m[3] || '') + 'Z' : iso;
}

export const fmtInt = (n) => (n == null || n < 0 ? '–' : Number(n).toLocaleString('en-US'));

const COLOURS = 12;

function hash(name) {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

// palette gives each service a colour class: by a hash of its name, the
// next free colour on a collision, the names taken in sorted order, so a
// run's services get the same colours on the waterfall and the map.
export function palette(names) {
  const out = new Map();
  const used = new Set();
  for (const n of [...new Set(names)].sort()) {
    let c = hash(n) % COLOURS;
    while (used.has(c) && used.size < COLOURS) c = (c + 1) % COLOURS;
    used.add(c);
    out.set(n, 'svc-' + c);
  }
  return (name) => out.get(name) || 'svc-' + (hash(name) % COLOURS);
}

// valueText shows an attribute value: strings as they are, the rest as JSON.
export function valueText(v) {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

export function kvTable(obj) {
  const keys = Object.keys(obj || {}).sort();
  if (!keys.length) return el('div', { class: 'muted', text: 'none' });
  return el('table', null, keys.map((k) => el('tr', null, el('td', { class: 'k', text: k }), el('td', { class: 'mono', text: valueText(obj[k]) }))));
}

// moveSelection returns the index after a j/k step in a list of n.
export function step(i, n, d) {
  if (n === 0) return -1;
  if (i < 0) return d > 0 ? 0 : n - 1;
  return Math.max(0, Math.min(n - 1, i + d));
}

// fill replaces parent's children; null and false are left out, arrays flattened.
export function fill(parent, ...children) {
  parent.replaceChildren(...children.flat(Infinity).filter((c) => c != null && c !== false));
  return parent;
}

// loaded counts a page's draws in main.dataset.loaded, so a test (or a
// person with devtools) can tell a redraw happened.
export function loaded() {
  const main = document.getElementById('main');
  main.dataset.loaded = String((Number(main.dataset.loaded) || 0) + 1);
}
