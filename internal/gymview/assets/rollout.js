// A rollout: the waterfall of its spans nested by parent, the details of a
// span, and its model exchanges from <id>.capture.jsonl beside the
// model-call spans.
import { el, href, api, errorBox, safeURL, fmtMS, fmtNS, fmtTime, fmtInt, palette, valueText, kvTable, fill, loaded } from './dom.js';
import { setCrumbs, setParams, go, runLabel } from './nav.js';
import { splitBar, gymSection } from './why.js';
import { noSpansBanner, stallLine } from './live.js';

const INDENT_PX = 12;
const MAX_INDENT = 40;
const QUIET_POLLS = 3; // polls without change after the rollout completed

const pct = (x) => (Math.max(0, Math.min(1, x)) * 100).toFixed(3) + '%';

export function rolloutPage(main, params) {
  const run = params.get('run') || '';
  const id = params.get('id') || '';
  setCrumbs(['runs', href('', {})], [runLabel(run), href('run', { run })], [id]);

  const head = el('div', { id: 'rollout-head' });
  const legend = el('div', { class: 'legend', id: 'legend' });
  const wf = el('div', { class: 'waterfall', id: 'waterfall', role: 'tree', 'aria-label': 'spans' });
  const xsBox = el('div', { id: 'exchanges' });
  const detail = el('aside', { class: 'detail', id: 'detail', hidden: true, 'aria-live': 'polite' });
  main.append(el('div', { class: 'rollout' }, el('div', { class: 'left' }, head, legend, wf, xsBox), detail));

  let data = null;
  let etag = null;
  let rows = [];
  let sel = -1;
  let detailOpen = false;
  let quiet = 0;
  let svcClass = palette([]);
  const folded = new Set();
  // ASGI's per-message spans ("POST /run http receive", "… http send") are
  // most of a rollout's rows and say little: folded into their server span
  // until the user asks (the button above the waterfall, or "a").
  let showASGI = false;
  const captures = new Map(); // capture line number → its promise
  const wanted = params.get('span') || '';

  async function load() {
    if (data && !data.in_flight && quiet >= QUIET_POLLS) return;
    const { data: d, etag: t } = await api('rollout', { run, id });
    if (!data) performance.mark('viewer:fetched'); // the first answer, parsed
    if (t === etag) {
      if (!d.in_flight) quiet++;
      return;
    }
    quiet = 0;
    etag = t;
    const keep = data && sel >= 0 ? data.spans[sel].span_id : wanted;
    data = d;
    if (keep && data.spans.some((s) => s.asgi && s.span_id === keep)) showASGI = true;
    render(keep);
  }

  function render(keepSpan) {
    const spanCount = data.spans.length;
    const x0 = data.summary;
    const status = data.stalled ? 'stalled' : data.in_flight ? 'in flight' : (x0 && x0.status) || (data.errors ? 'ERROR' : 'OK');
    const jaeger = data.jaeger_url ? safeURL(data.jaeger_url) : null;
    fill(head, [
      el('h1', null, 'Rollout ', el('span', { class: 'mono', text: data.id }), ' ',
        el('span', { class: 'badge ' + (data.stalled ? 'status-stalled' : data.in_flight ? 'status-flight' : 'status-' + status), id: 'rollout-status', text: status })),
      el('div', { class: 'summary' },
        item('run', runLabel(data.run)),
        item('start', fmtTime(data.t0)),
        item('duration', fmtNS(data.duration)),
        item('spans', fmtInt(spanCount)),
        item('error spans', fmtInt(data.errors)),
        item('model exchanges', data.capture ? fmtInt(data.exchanges.length) : 'no capture file'),
        x0 && x0.trace_id ? item('trace', x0.trace_id) : null,
        jaeger ? el('a', { href: jaeger, id: 'jaeger-link', target: '_blank', rel: 'noopener noreferrer', text: 'open in Jaeger ↗' }) : null,
        el('a', { href: href('map', { run: data.run }), text: 'service map (m)' })),
      x0 ? el('div', { class: 'why' }, splitBar(x0.time_split_ms), gymSection(x0.gym)) : null, // why.js
      data.not_kept ? el('p', { class: 'muted', id: 'not-kept-rollout', text: "Its rollouts.jsonl row (status, where its time went, Gym's result) is no longer kept: the viewer keeps the newest rollouts (max_rollouts). Its spans and model calls below are read from its files." }) : null,
      data.skipped ? el('p', { class: 'muted', text: data.skipped + ' unreadable lines of the spans file were skipped.' }) : null,
      data.other_runs ? el('p', { class: 'muted', text: data.other_runs + ' spans of rollouts with the same id in other runs are not shown.' }) : null,
      data.other_dispatch_exchanges ? el('p', { class: 'muted', id: 'other-dispatch', text: otherDispatchNote(data.other_dispatch_exchanges, data.exchanges.length) }) : null,
      data.capture_only ? noSpansBanner(1, 'this page shows') : null,
      stallLine(data.stalled),
    ]);
    wf.hidden = legend.hidden = !!data.capture_only; // no spans: no waterfall
    svcClass = palette(data.services);
    fill(legend, data.services.map((s) => el('span', null, el('span', { class: 'swatch ' + svcClass(s) }), s || '(no service)')));
    renderWaterfall();
    renderExchanges();
    const i = keepSpan ? data.spans.findIndex((s) => s.span_id === keepSpan) : -1;
    sel = -1;
    if (i >= 0) select(i, detailOpen || keepSpan === wanted, false);
    else if (detailOpen) showDetail();
    loaded();
    if (!main.dataset.rendered) {
      performance.mark('viewer:built');
      // First paint of the waterfall: the benchmark reads the time.
      requestAnimationFrame(() => setTimeout(() => {
        main.dataset.renderMs = String(Math.round(performance.now()));
        main.dataset.rendered = String(spanCount);
      }, 0));
    }
  }

  // otherDispatchNote says why capture lines are left out (dispatch.go) and
  // how to keep runs apart from the start.
  function otherDispatchNote(n, kept) {
    const what = fmtInt(n) + ' model exchange' + (n === 1 ? '' : 's') + ' of ' + data.id + '.capture.jsonl';
    const how = ' Gym clears a rollout\'s captures when it dispatches the id again, in this run or a later one. To keep runs apart: a capture dir per run (Gym\'s model_call_capture_dir and the collector\'s NEMO_GYM_CAPTURE_DIR).';
    if (!kept) return 'Captures replaced by a later run: the ' + what + ' lie outside this rollout\'s spans and are not shown.' + how;
    return 'Not shown: ' + what + ', outside this rollout\'s spans (another dispatch of the same id).' + how;
  }

  function item(k, v) {
    return el('span', null, el('span', { class: 'k', text: k }), el('span', { class: 'mono', text: v }));
  }

  function renderWaterfall() {
    const dur = Math.max(data.duration, 1);
    const ticks = el('div', { class: 'ticks' });
    for (let k = 0; k < 5; k++) {
      const t = el('span', { class: 'tick', text: fmtNS((dur * k) / 5) });
      t.style.left = pct(k / 5);
      ticks.append(t);
    }
    const frag = document.createDocumentFragment();
    const asgi = data.spans.filter((s) => s.asgi).length;
    const asgiToggle = asgi ? el('button', { id: 'asgi-toggle', type: 'button', title: 'a', onclick: () => toggleASGI() }) : null;
    frag.append(el('div', { class: 'axis' }, el('div', { class: 'muted' }, fmtInt(data.spans.length) + ' spans ', asgiToggle), ticks));
    // One row per span, cloned from a template (10,000 rows build in a
    // fraction of the time createElement would take).
    // The label column has 38%, and the details may take 40% of the page.
    const trackPx = Math.max(200, wf.clientWidth * 0.62 * 0.6);
    const tpl = el('div', { class: 'span-row', role: 'treeitem' },
      el('div', { class: 'label' }, el('span', { class: 'fold' }), el('span', { class: 'name' }), el('span', { class: 'svc' })),
      el('div', { class: 'track' }, el('div', { class: 'bar' })));
    const errMark = el('span', { class: 'err-mark', title: 'status ERROR', text: '!' });
    const modelMark = el('span', { class: 'model-mark', title: 'model call', text: '⇄' });
    rows = data.spans.map((s, i) => {
      const x = s.exchange >= 0 ? data.exchanges[s.exchange] : null;
      const row = tpl.cloneNode(true);
      const label = row.firstChild;
      const track = row.lastChild;
      const name = label.children[1];
      name.textContent = s.label || s.name;
      label.lastChild.textContent = s.service;
      if (s.model_call) label.insertBefore(modelMark.cloneNode(true), name);
      if (s.status === 'ERROR') label.insertBefore(errMark.cloneNode(true), label.children[1]);
      label.style.paddingLeft = Math.min(s.depth, MAX_INDENT) * INDENT_PX + 'px';
      const bar = track.firstChild;
      bar.className = 'bar ' + svcClass(s.service);
      bar.style.left = pct(s.start / dur);
      bar.style.width = pct(Math.max(s.end - s.start, 0) / dur);
      if (x) {
        // Beside the bar on its roomier side, or on the bar when neither
        // side has room for it (about 6 px a character).
        const text = exchangeNote(x);
        const note = el('span', { class: 'note', text });
        const before = s.start / dur;
        const after = 1 - s.end / dur;
        if (Math.max(before, after) * trackPx < text.length * 6 + 8) {
          note.classList.add('on-bar');
          note.style.left = 'calc(' + pct(before) + ' + 4px)';
        } else if (after >= before) note.style.left = 'calc(' + pct(1 - after) + ' + 4px)';
        else note.style.right = 'calc(' + pct(1 - before) + ' + 4px)';
        track.append(note);
      }
      if (s.status === 'ERROR') row.classList.add('error');
      if (s.descendants) row.classList.add('parent');
      if (s.model_call) row.classList.add('model-call');
      row.title = (s.label ? s.label + ' (span ' + s.name + ')' : s.name) + ' · ' + s.service + ' · ' + fmtNS(s.end - s.start);
      if (s.asgi) row.classList.add('asgi');
      const ds = row.dataset;
      ds.i = i;
      ds.spanId = s.span_id;
      ds.parentId = s.parent_span_id;
      ds.depth = s.depth;
      ds.status = s.status;
      ds.exchange = s.exchange;
      return row;
    });
    frag.append(...rows);
    fill(wf, frag);
    applyFolds();
  }

  function exchangeNote(x) {
    return [x.status_code, fmtMS(x.latency_ms), 'ttft ' + fmtMS(x.latency_ttft_ms), tokensNote(x), x.error_category].filter((v) => v != null && v !== '').join(' · ');
  }

  // tokensNote is a call's usage, "12 → 34 tok" (input → output); "" without.
  function tokensNote(x) {
    if (x.input_tokens == null && x.output_tokens == null) return '';
    return fmtInt(x.input_tokens) + ' → ' + fmtInt(x.output_tokens) + ' tok';
  }

  function applyFolds() {
    const toggle = document.getElementById('asgi-toggle');
    if (toggle) {
      const n = data.spans.filter((s) => s.asgi).length;
      toggle.textContent = showASGI ? 'fold the ' + fmtInt(n) + ' ASGI receive/send spans' : fmtInt(n) + ' ASGI receive/send spans folded: show';
      toggle.setAttribute('aria-pressed', String(showASGI));
    }
    for (let i = 0; i < rows.length; i++) {
      rows[i].hidden = !showASGI && data.spans[i].asgi;
      const s = data.spans[i];
      const f = folded.has(s.span_id) && s.descendants > 0;
      rows[i].classList.toggle('folded', f);
      rows[i].classList.toggle('parent', s.descendants > 0 && !f);
      if (f) {
        for (let j = i + 1; j <= i + s.descendants; j++) rows[j].hidden = true;
        i += s.descendants;
      }
    }
  }

  function toggleASGI() {
    showASGI = !showASGI;
    if (!showASGI && sel >= 0 && data.spans[sel].asgi) select(-1);
    applyFolds();
  }

  function fold(i, on) {
    const s = data.spans[i];
    if (!s || !s.descendants) return false;
    if (on) folded.add(s.span_id);
    else folded.delete(s.span_id);
    applyFolds();
    return true;
  }

  wf.addEventListener('click', (e) => {
    const row = e.target.closest('.span-row');
    if (!row) return;
    const i = Number(row.dataset.i);
    if (e.target.classList.contains('fold')) {
      fold(i, !folded.has(data.spans[i].span_id));
      return;
    }
    select(i, true, true);
  });

  function select(i, open, scroll) {
    if (sel >= 0 && rows[sel]) rows[sel].classList.remove('selected');
    sel = i;
    if (i < 0) return;
    rows[i].classList.add('selected');
    if (scroll !== false) rows[i].scrollIntoView({ block: 'nearest' });
    setParams({ run, id, span: data.spans[i].span_id });
    if (open) detailOpen = true;
    if (detailOpen) showDetail();
  }

  function move(d) {
    let i = sel;
    do {
      i += d;
    } while (i >= 0 && i < rows.length && rows[i].hidden);
    if (i < 0 || i >= rows.length) i = sel < 0 ? (d > 0 ? 0 : rows.length - 1) : sel;
    if (i >= 0 && i < rows.length) select(i, false, true);
  }

  function showDetail() {
    detail.hidden = false;
    if (sel < 0) {
      fill(detail, el('p', { class: 'muted', text: 'Select a span (j/k, click).' }));
      return;
    }
    const s = data.spans[sel];
    const x = s.exchange >= 0 ? data.exchanges[s.exchange] : null;
    fill(detail,
      el('h2', { id: 'detail-name', text: s.name }),
      el('table', null,
        kv('service', s.service),
        kv('kind', s.kind),
        kv('status', s.status + (s.status_message ? ': ' + s.status_message : ''), s.status === 'ERROR' ? 'status-ERROR' : ''),
        kv('start', '+' + fmtNS(s.start)),
        kv('duration', fmtNS(s.end - s.start)),
        kv('span id', s.span_id),
        kv('parent', s.parent_span_id ? s.parent_span_id + (s.orphan ? ' (not in this file)' : '') : 'none (root)'),
        kv('trace id', s.trace_id)),
      x ? exchangeSection(x) : (s.model_call ? el('p', { class: 'muted', text: 'A model call with no capture line joined to it.' }) : null),
      el('h2', { text: 'Attributes' }), kvTable(s.attributes),
      el('h2', { text: 'Events (' + s.events.length + ')' }),
      el('div', { id: 'events' }, s.events.length ? s.events.map(eventBox) : el('div', { class: 'muted', text: 'none' })),
      el('h2', { text: 'Links (' + s.links.length + ')' }),
      el('div', { id: 'links' }, s.links.length ? s.links.map(linkBox) : el('div', { class: 'muted', text: 'none' })),
      el('details', null, el('summary', { text: 'Resource' }), kvTable(data.resources[s.resource])),
      s.scope ? el('details', null, el('summary', { text: 'Scope' }), kvTable(s.scope)) : null,
    );
  }

  function kv(k, v, cls) {
    return el('tr', null, el('td', { class: 'k', text: k }), el('td', { class: 'mono ' + (cls || ''), text: v == null ? '–' : String(v) }));
  }

  function eventBox(e) {
    const attrs = Object.assign({}, e.attributes || {});
    const trace = attrs['exception.stacktrace'];
    delete attrs['exception.stacktrace'];
    const when = data.t0 && e.timestamp ? '+' + fmtMS(Date.parse(e.timestamp) - Date.parse(data.t0)) : '';
    return el('div', { class: 'event' },
      el('h3', null, el('span', { class: e.name === 'exception' ? 'status-ERROR' : '', text: e.name }), ' ', el('span', { class: 'muted', text: when })),
      kvTable(attrs),
      trace != null ? el('pre', { class: 'stacktrace', text: valueText(trace) }) : null);
  }

  function linkBox(l) {
    const c = l.context || {};
    const spanID = String(c.span_id || '').replace(/^0x/, '');
    const traceID = String(c.trace_id || '').replace(/^0x/, '');
    const here = data.spans.findIndex((s) => s.span_id === spanID);
    const target = data.link_targets && data.link_targets[spanID];
    return el('div', { class: 'link' },
      el('table', null, kv('trace id', traceID), kv('span id', spanID)),
      kvTable(l.attributes),
      here >= 0 ? el('button', { type: 'button', text: 'go to the span', onclick: () => select(here, true, true) }) : null,
      target && !(target.id === data.id && target.run === data.run)
        ? el('a', { href: href('rollout', { run: target.run, id: target.id, span: spanID }), text: 'rollout ' + target.id }) : null);
  }

  function exchangeSection(x) {
    const body = el('pre', { class: 'body', id: 'capture-body', hidden: true });
    const show = (part) => async () => {
      try {
        const line = await capture(x.n);
        body.textContent = JSON.stringify(line[part], null, 2);
        body.dataset.part = part;
        body.hidden = false;
      } catch (e) {
        fill(body, errorBox(e));
        body.hidden = false;
      }
    };
    const bad = x.status_code >= 400 || x.error_category;
    return el('section', { class: 'exchange', id: 'exchange', data: { n: x.n } },
      el('h2', { text: 'Model exchange' }),
      el('table', null,
        kv('model', x.model),
        kv('dialect', x.dialect),
        kv('status', x.status_code, bad ? 'status-ERROR' : ''),
        kv('error category', x.error_category || 'none', x.error_category ? 'status-ERROR' : ''),
        kv('latency', fmtMS(x.latency_ms)),
        kv('time to first token', fmtMS(x.latency_ttft_ms)),
        kv('input tokens', fmtInt(x.input_tokens)),
        kv('output tokens', fmtInt(x.output_tokens)),
        kv('response model', x.response_model || '–'),
        kv('started', '+' + fmtNS(x.start)),
        kv('model call id', x.model_call_id),
        kv('joined by', x.match === 'response_id' ? 'response id = nemo.gym.model_request.id' : x.match ? 'time' : 'not joined to a span')),
      el('div', { class: 'toolbar' },
        el('button', { type: 'button', id: 'show-request', text: 'request', onclick: show('request') }),
        el('button', { type: 'button', id: 'show-response', text: 'response', onclick: show('response') })),
      body);
  }

  function capture(n) {
    if (!captures.has(n)) {
      const p = api('capture', { id, n }).then((r) => r.data);
      p.catch(() => captures.delete(n));
      captures.set(n, p);
    }
    return captures.get(n);
  }

  // A rollout with many model calls lists its exchanges when asked: each is
  // already beside its span in the waterfall.
  const LAZY_EXCHANGES = 200;

  function renderExchanges() {
    if (!data.capture) {
      fill(xsBox, el('h2', { text: 'Model exchanges' }), el('p', { class: 'muted', text: 'No ' + data.id + '.capture.jsonl in the capture dir.' }));
      return;
    }
    const title = 'Model exchanges (' + data.exchanges.length + ')';
    if (data.exchanges.length <= LAZY_EXCHANGES) {
      fill(xsBox, el('h2', { text: title }), exchangeTable());
      return;
    }
    const box = el('details', { id: 'exchanges-more' }, el('summary', null, el('h2', { text: title + ': show' })));
    box.addEventListener('toggle', () => {
      if (box.open && box.children.length === 1) box.append(exchangeTable());
    });
    fill(xsBox, box);
  }

  function exchangeTable() {
    const byExchange = new Map();
    data.spans.forEach((s, i) => { if (s.exchange >= 0) byExchange.set(s.exchange, i); });
    return el('table', { class: 'grid', id: 'exchange-table' },
      el('thead', null, el('tr', null, ['#', 'Start', 'Model', 'Status', 'Error category', 'Latency', 'TTFT', 'Tokens in', 'Tokens out', 'Span'].map((t) => el('th', { text: t })))),
      el('tbody', null, data.exchanges.map((x, k) => el('tr', {
        class: x.status_code >= 400 || x.error_category ? 'failed' : '',
        data: { n: x.n },
        onclick: () => {
          const i = byExchange.get(k);
          if (i != null) select(i, true, true);
          else { detail.hidden = false; fill(detail, exchangeSection(x)); }
        },
      },
      el('td', { class: 'num', text: x.n + 1 }),
      el('td', { text: '+' + fmtNS(x.start) }),
      el('td', { text: x.model }),
      el('td', { class: 'status', text: x.status_code }),
      el('td', { text: x.error_category || '' }),
      el('td', { class: 'num', text: fmtMS(x.latency_ms) }),
      el('td', { class: 'num', text: fmtMS(x.latency_ttft_ms) }),
      el('td', { class: 'num tokens-in', text: fmtInt(x.input_tokens) }),
      el('td', { class: 'num tokens-out', text: fmtInt(x.output_tokens) }),
      el('td', { class: 'mono', text: x.span_id || 'not joined' })))));
  }

  function modelCall(d) {
    for (let i = sel + d; i >= 0 && i < rows.length; i += d) {
      if (data.spans[i].model_call) {
        if (rows[i].hidden) { folded.clear(); showASGI = showASGI || data.spans[i].asgi; applyFolds(); }
        select(i, true, true);
        return true;
      }
    }
    return false;
  }

  load().catch((e) => main.append(errorBox(e)));
  return {
    poll: load,
    key(e) {
      if (!data) return false;
      switch (e.key) {
        case 'j': case 'ArrowDown': move(1); return true;
        case 'k': case 'ArrowUp': move(-1); return true;
        case 'Enter':
          if (sel < 0) { move(1); return true; }
          detailOpen = detail.hidden;
          if (detailOpen) showDetail(); else detail.hidden = true;
          return true;
        case 'Escape':
          if (!detail.hidden) { detail.hidden = true; detailOpen = false; return true; }
          go('run', { run });
          return true;
        case 'h': case 'ArrowLeft':
          if (sel < 0) return false;
          if (!fold(sel, true)) {
            const p = data.spans.findIndex((s) => s.span_id === data.spans[sel].parent_span_id);
            if (p >= 0) select(p, false, true);
          }
          return true;
        case 'l': case 'ArrowRight': return sel >= 0 && fold(sel, false);
        case 'n': return modelCall(1);
        case 'p': return modelCall(-1);
        case 'm': go('map', { run }); return true;
        case 'a': if (!data.spans.some((s) => s.asgi)) return false; toggleASGI(); return true;
      }
      return false;
    },
  };
}
