// A run's service map (service_map.json) drawn as a graph: one node per
// service, one arrow per edge with its calls, errors and p50/p99.
import { el, svg, href, api, errorBox, fmtMS, fmtInt, palette, step, fill, loaded } from './dom.js';
import { setCrumbs, go, runLabel } from './nav.js';

const NODE_H = 30;
const COL_GAP = 240; // room for an edge's two labels
const ROW_GAP = 60;
const PAD = 24;
const MAX_LABEL = 40;

// layers puts each service in a column: the longest path from a service
// nobody calls (edges that close a cycle are ignored).
function layers(nodes, edges) {
  const out = new Map(nodes.map((n) => [n, []]));
  for (const e of edges) if (e.client !== e.server) out.get(e.client).push(e.server);
  const depth = new Map();
  const state = new Map(); // 1 visiting, 2 done
  const order = [];
  const visit = (n) => {
    if (state.get(n)) return;
    state.set(n, 1);
    for (const m of out.get(n)) if (!state.get(m)) visit(m);
    state.set(n, 2);
    order.push(n);
  };
  const called = new Set(edges.filter((e) => e.client !== e.server).map((e) => e.server));
  for (const n of nodes) if (!called.has(n)) visit(n);
  for (const n of nodes) visit(n);
  order.reverse(); // a topological order of the acyclic part
  const pos = new Map(order.map((n, i) => [n, i]));
  for (const n of order) {
    if (!depth.has(n)) depth.set(n, 0);
    for (const m of out.get(n)) {
      if (pos.get(m) > pos.get(n)) depth.set(m, Math.max(depth.get(m) || 0, depth.get(n) + 1));
    }
  }
  return depth;
}

const nodeText = (n) => (n.length > MAX_LABEL ? '…' + n.slice(-(MAX_LABEL - 1)) : n);

function nodeWidth(name) {
  return Math.max(90, nodeText(name).length * 7.2 + 24);
}

export function mapPage(main, params) {
  const run = params.get('run') || '';
  setCrumbs(['runs', href('', {})], [runLabel(run), href('run', { run })], ['service map']);
  const box = el('div', { id: 'map-box' });
  const tbody = el('tbody');
  main.append(
    el('h1', null, 'Service map of run ', el('span', { class: 'mono', text: runLabel(run) })),
    el('p', { class: 'muted', text: 'From service_map.json: calls from one service to another, with errors and latency quantiles (p50 / p99) on each arrow.' }),
    box,
    el('h2', { text: 'Edges' }),
    el('table', { class: 'grid', id: 'edge-table' },
      el('thead', null, el('tr', null, ['Client', 'Server', 'Calls', 'Errors', 'p50', 'p90', 'p99'].map((t, i) => el('th', { class: i >= 2 ? 'num' : '', text: t })))),
      tbody),
  );
  let etag = null;
  let edges = [];
  let sel = -1;
  let groups = [];

  function draw() {
    const nodes = [...new Set(edges.flatMap((e) => [e.client, e.server]))].sort();
    if (!nodes.length) {
      fill(box, el('p', { class: 'empty', text: 'No edges for this run in service_map.json (yet).' }));
      return;
    }
    const svcClass = palette(nodes);
    const depth = layers(nodes, edges);
    const cols = new Map();
    for (const n of nodes) {
      const d = depth.get(n) || 0;
      if (!cols.has(d)) cols.set(d, []);
      cols.get(d).push(n);
    }
    // Columns left to right, each as wide as its widest node, centred on the tallest.
    const at = new Map();
    const depths = [...cols.keys()].sort((a, b) => a - b);
    const tallest = Math.max(...depths.map((d) => cols.get(d).length));
    let x = PAD;
    for (const d of depths) {
      const ns = cols.get(d);
      const w = Math.max(...ns.map(nodeWidth));
      const top = PAD + 30 + ((tallest - ns.length) * (NODE_H + ROW_GAP)) / 2;
      ns.forEach((n, i) => at.set(n, { x: x + (w - nodeWidth(n)) / 2, y: top + i * (NODE_H + ROW_GAP), w: nodeWidth(n) }));
      x += w + COL_GAP;
    }
    const width = x - COL_GAP + PAD;
    const height = PAD * 2 + 30 + tallest * (NODE_H + ROW_GAP) + 40;
    const root = svg('svg', { class: 'map', id: 'service-map', viewBox: '0 0 ' + width + ' ' + height, role: 'img', 'aria-label': 'service map' });
    root.style.height = Math.min(height, 900) + 'px';
    root.style.maxWidth = width + 'px';
    root.append(svg('defs', null,
      svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse' },
        svg('path', { d: 'M0,0 L10,5 L0,10 z' }))));
    groups = edges.map((e, k) => {
      const a = at.get(e.client);
      const b = at.get(e.server);
      let d;
      let lx;
      let ly;
      if (e.client === e.server) {
        const x = a.x + a.w / 2;
        d = `M${x - 12},${a.y} C${x - 40},${a.y - 50} ${x + 40},${a.y - 50} ${x + 12},${a.y}`;
        lx = x;
        ly = a.y - 42;
      } else {
        const forward = b.x > a.x;
        const x1 = forward ? a.x + a.w : a.x + a.w / 2;
        const y1 = forward ? a.y + NODE_H / 2 : a.y + NODE_H;
        const x2 = forward ? b.x : b.x + b.w / 2;
        const y2 = forward ? b.y + NODE_H / 2 : b.y + NODE_H;
        const bend = forward ? Math.max(40, (x2 - x1) / 2) : 60;
        d = forward
          ? `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`
          : `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 + bend} ${x2},${y2}`;
        lx = (x1 + x2) / 2;
        ly = (y1 + y2) / 2 + (forward ? -8 : bend * 0.75 + 14);
      }
      const label1 = fmtInt(e.calls) + ' calls · ' + fmtInt(e.errors) + ' errors';
      const label2 = 'p50 ' + fmtMS(e.p50_ms) + ' · p99 ' + fmtMS(e.p99_ms);
      return svg('g', { class: 'edge' + (e.errors ? ' err' : ''), data: { client: e.client, server: e.server, k } },
        svg('title', { text: e.client + ' → ' + e.server + '\n' + label1 + '\n' + label2 }),
        svg('path', { d, 'marker-end': 'url(#arrow)' }),
        svg('text', { x: lx, y: ly - 13, 'text-anchor': 'middle', text: label1 }),
        svg('text', { x: lx, y: ly, 'text-anchor': 'middle', text: label2 }));
    });
    root.append(...groups);
    for (const n of nodes) {
      const p = at.get(n);
      root.append(svg('g', { class: 'node', data: { service: n } },
        svg('rect', { x: p.x, y: p.y, width: p.w, height: NODE_H, rx: 5, class: svcClass(n) }),
        svg('text', { x: p.x + p.w / 2, y: p.y + NODE_H / 2 + 4, 'text-anchor': 'middle', text: nodeText(n) },
          svg('title', { text: n }))));
    }
    fill(box, root);
  }

  function table() {
    fill(tbody, edges.map((e, k) => el('tr', { class: e.errors ? 'failed' : '', data: { key: k }, onclick: () => pick(k) },
      el('td', { text: e.client }), el('td', { text: e.server }),
      el('td', { class: 'num', text: fmtInt(e.calls) }),
      el('td', { class: 'num' + (e.errors ? ' status-ERROR' : ''), text: fmtInt(e.errors) }),
      el('td', { class: 'num', text: fmtMS(e.p50_ms) }),
      el('td', { class: 'num', text: fmtMS(e.p90_ms) }),
      el('td', { class: 'num', text: fmtMS(e.p99_ms) }))));
    if (!edges.length) tbody.append(el('tr', null, el('td', { class: 'empty', colspan: 7, text: 'none' })));
  }

  function pick(k) {
    sel = k;
    Array.from(tbody.rows).forEach((r, i) => r.classList.toggle('selected', i === k));
    groups.forEach((g, i) => g.classList.toggle('selected', i === k));
  }

  async function load() {
    const { data, etag: t } = await api('servicemap', { run });
    if (t === etag) return;
    etag = t;
    edges = data.edges;
    draw();
    table();
    if (sel >= edges.length) sel = -1;
    if (sel >= 0) pick(sel);
    loaded();
  }

  load().catch((e) => fill(box, errorBox(e)));
  return {
    poll: load,
    key(e) {
      switch (e.key) {
        case 'j': case 'ArrowDown': pick(step(sel, edges.length, 1)); return true;
        case 'k': case 'ArrowUp': pick(step(sel, edges.length, -1)); return true;
        case 'Escape': go('run', { run }); return true;
      }
      return false;
    },
  };
}
