// The runs page and a run's rollout list.
import { el, href, api, errorBox, fmtMS, fmtTime, fmtInt, step, fill, loaded } from './dom.js';
import { setCrumbs, setParams, go, runLabel } from './nav.js';
import { WHY_SORTS, ASC_FIRST, sortLabel, headCells, rowCells, runWhy } from './why.js';
import { noSpansBanner, notKeptBanner, stalledBox, rowStatus, captureNote } from './live.js';

// selectable keeps one selected row of a tbody, by key, across redraws.
function selectable(tbody) {
  let key = null;
  const rows = () => Array.from(tbody.rows);
  const index = () => rows().findIndex((r) => r.dataset.key === key);
  function mark() {
    for (const r of rows()) r.classList.toggle('selected', r.dataset.key === key);
  }
  return {
    mark,
    get row() {
      return rows()[index()] || null;
    },
    move(d) {
      const rs = rows();
      const i = step(index(), rs.length, d);
      key = i < 0 ? null : rs[i].dataset.key;
      mark();
      if (i >= 0) rs[i].scrollIntoView({ block: 'nearest' });
    },
    set(k) {
      key = k;
      mark();
    },
    // key moves the selection on j/k and the arrows.
    key(e) {
      const d = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 }[e.key];
      if (d) this.move(d);
      return !!d;
    },
  };
}

// rowsPage is the controller of a page with a selectable table: j/k and
// the arrows move the selection, other keys go to keys(event, selected row).
function rowsPage(load, sel, keys, destroy) {
  return { poll: load, key: (e) => sel.key(e) || keys(e, sel.row), destroy };
}

function th(text, cls, onclick) {
  return el('th', { class: cls, text, onclick });
}

export function runsPage(main) {
  setCrumbs(['runs']);
  const tbody = el('tbody');
  const note = el('div');
  main.append(
    el('h1', { text: 'Runs' }),
    note,
    el('table', { class: 'grid', id: 'runs' },
      el('thead', null, el('tr', null,
        th('Run'), th('Rollouts', 'num'), th('Failed', 'num'), th('In flight', 'num'),
        th('First start'), th('Duration', 'num'), th('Service map'))),
      tbody),
  );
  const sel = selectable(tbody);
  let etag = null;

  async function load() {
    const { data, etag: t } = await api('runs');
    if (t === etag) return;
    etag = t;
    fill(note);
    if (data.map_error) note.append(errorBox(data.map_error));
    if (data.malformed) note.append(el('p', { class: 'muted', text: data.malformed + ' unreadable lines in rollouts.jsonl were skipped.' }));
    if (data.no_spans) note.append(noSpansBanner(data.no_spans, 'the run "' + runLabel('') + '" lists'));
    if (data.repeated_id) note.append(el('p', { class: 'muted', id: 'repeated-note', text: 'Rollout ids repeat across runs here (' + data.repeated_id + ' is in runs ' + data.repeated_runs.map(runLabel).join(' and ') + '): Gym reuses its ids in every run and clears a rollout\'s capture file when it dispatches the id again, so an earlier run\'s spans file sits beside the later run\'s captures. Each run is listed apart, and a rollout page shows only its own model calls. To keep runs\' files apart: a capture dir per run (Gym\'s model_call_capture_dir and the collector\'s NEMO_GYM_CAPTURE_DIR).' }));
    if (data.max_rollouts) note.append(el('p', { class: 'muted', id: 'not-kept-note', text: 'Runs marked * have rollouts the viewer no longer lists: it keeps the newest ' + fmtInt(data.max_rollouts) + ' rollouts of the capture dir in memory (raise max_rollouts to keep more). Their counts are still here.' }));
    fill(tbody, data.runs.map((r) => el('tr', {
      data: { key: r.run, run: r.run },
      onclick: () => go('run', { run: r.run }),
    },
    el('td', { class: 'id' }, el('a', { href: href('run', { run: r.run }), text: runLabel(r.run) })),
    el('td', { class: 'num', text: fmtInt(r.rollouts) + (r.not_kept ? '*' : ''), title: r.not_kept ? fmtInt(r.not_kept) + ' not listed (max_rollouts)' : '' }),
    el('td', { class: 'num' + (r.failed ? ' status-ERROR' : ''), text: fmtInt(r.failed) }),
    el('td', { class: 'num' + (r.stalled ? ' status-stalled' : r.in_flight ? ' status-flight' : '') }, fmtInt(r.in_flight), r.stalled ? ' (' + fmtInt(r.stalled) + ' stalled)' : null),
    el('td', { text: fmtTime(r.start) }),
    el('td', { class: 'num', text: r.end ? fmtMS(r.duration_ms) : '–' }),
    el('td', null, r.edges
      ? el('a', { href: href('map', { run: r.run }), text: r.edges + ' edges, ' + fmtInt(r.calls) + ' calls', onclick: (e) => e.stopPropagation() })
      : el('span', { class: 'muted', text: 'none' })))));
    if (!data.runs.length) tbody.append(el('tr', null, el('td', { class: 'empty', colspan: 7, text: 'No rollouts in this capture dir yet.' })));
    sel.mark();
    loaded();
  }

  load().catch((e) => main.append(errorBox(e)));
  return rowsPage(load, sel, (e, r) => {
    switch (e.key) {
      case 'Enter': if (r) go('run', { run: r.dataset.run }); return !!r;
      case 'm': if (r) go('map', { run: r.dataset.run }); return !!r;
    }
    return false;
  });
}

const SORTS = ['start', 'duration', 'errors', 'id', ...WHY_SORTS];

export function rolloutsPage(main, params) {
  const st = {
    run: params.get('run') || '',
    sort: SORTS.includes(params.get('sort')) ? params.get('sort') : 'start',
    order: params.get('order') === 'asc' ? 'asc' : 'desc',
    failed: params.get('failed') === '1',
    gymfailed: params.get('gymfailed') === '1', // why.js
    unhealthy: params.get('unhealthy') === '1',
    q: params.get('q') || '',
    offset: Math.max(0, parseInt(params.get('offset'), 10) || 0),
    limit: Math.min(1000, Math.max(1, parseInt(params.get('limit'), 10) || 100)),
  };
  setCrumbs(['runs', href('', {})], [runLabel(st.run)]);

  const search = el('input', { type: 'search', placeholder: 'rollout id contains…  ( / )', value: st.q, 'aria-label': 'rollout id contains', data: { search: '' }, id: 'q' });
  const failed = el('input', { type: 'checkbox', id: 'failed-only', checked: st.failed });
  const gymFailed = el('input', { type: 'checkbox', id: 'gym-failed-only', checked: st.gymfailed });
  const unhealthy = el('input', { type: 'checkbox', id: 'unhealthy-only', checked: st.unhealthy });
  const gymFilters = [el('label', { hidden: true, title: 'Gym names a failure kind, or dropped the rollout from the score (g)' }, gymFailed, ' Gym failure'),
    el('label', { hidden: true, title: "Gym's health check says unhealthy (u)" }, unhealthy, ' unhealthy')];
  const sortSel = el('select', { id: 'sort', 'aria-label': 'sort by' }, SORTS.map((s) => el('option', { value: s, text: s === 'duration' ? 'duration (slowest)' : sortLabel(s), selected: s === st.sort })));
  const orderBtn = el('button', { type: 'button', id: 'order', title: 'reverse the order (o)' });
  const prev = el('button', { type: 'button', id: 'prev', text: '‹ prev', title: 'previous page (p)' });
  const next = el('button', { type: 'button', id: 'next', text: 'next ›', title: 'next page (n)' });
  const pageInfo = el('span', { id: 'page-info', class: 'muted' });
  const counts = el('span', { id: 'counts', class: 'muted' });
  const tbody = el('tbody');
  const heads = {};
  const sortable = (label, key, cls) => (heads[key] = th(label, 'sortable ' + (cls || ''), () => {
    if (st.sort === key) st.order = st.order === 'asc' ? 'desc' : 'asc';
    else { st.sort = key; st.order = key === 'id' || ASC_FIRST.includes(key) ? 'asc' : 'desc'; }
    st.offset = 0;
    update();
  }));
  const status = el('div');
  const summary = el('div', { id: 'run-summary', class: 'muted', hidden: true });
  const why = el('div', { id: 'run-why' });
  const liveBox = el('div', { id: 'live-box' }); // capture-only banner, stalled rollouts (live.js)
  main.append(
    el('h1', null, 'Rollouts of run ', el('span', { class: 'mono', text: runLabel(st.run) })),
    summary,
    liveBox,
    why,
    el('div', { class: 'toolbar' },
      search,
      el('label', null, failed, ' failed only'),
      gymFilters,
      el('label', null, 'sort ', sortSel), orderBtn,
      counts,
      el('span', { class: 'spacer' }),
      prev, pageInfo, next,
      el('a', { href: href('map', { run: st.run }), text: 'service map (m)' })),
    status,
    el('table', { class: 'grid no-gym no-split', id: 'rollouts' },
      el('thead', null, el('tr', null,
        sortable('Rollout', 'id'), sortable('Start', 'start'), sortable('Duration', 'duration', 'num'),
        th('Status'), sortable('Errors', 'errors', 'num'), th('Spans', 'num'), th('Model calls', 'num'),
        headCells(sortable),
        th('Root'))),
      tbody),
  );
  const table = main.querySelector('#rollouts');
  const sel = selectable(tbody);
  let etag = null;
  let total = 0;
  let timer = 0;

  function update() {
    etag = null;
    setParams({ run: st.run, sort: st.sort, order: st.order, failed: st.failed ? '1' : '', gymfailed: st.gymfailed ? '1' : '', unhealthy: st.unhealthy ? '1' : '', q: st.q, offset: st.offset || '', limit: st.limit === 100 ? '' : st.limit });
    load().catch(showError);
  }
  function showError(e) {
    fill(status, errorBox(e));
  }
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => { st.q = search.value; st.offset = 0; update(); }, 200);
  });
  search.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { clearTimeout(timer); st.q = search.value; st.offset = 0; update(); search.blur(); main.focus(); }
  });
  failed.addEventListener('change', () => { st.failed = failed.checked; st.offset = 0; update(); });
  gymFailed.addEventListener('change', () => { st.gymfailed = gymFailed.checked; st.offset = 0; update(); });
  unhealthy.addEventListener('change', () => { st.unhealthy = unhealthy.checked; st.offset = 0; update(); });
  sortSel.addEventListener('change', () => { st.sort = sortSel.value; st.offset = 0; update(); });
  orderBtn.addEventListener('click', () => { st.order = st.order === 'asc' ? 'desc' : 'asc'; update(); });
  prev.addEventListener('click', () => page(-1));
  next.addEventListener('click', () => page(1));

  function page(d) {
    const o = st.offset + d * st.limit;
    if (o < 0 || o >= total) return false;
    st.offset = o;
    update();
    return true;
  }

  function row(r) {
    const open = () => { if (r.has_page) go('rollout', { run: r.run, id: r.id }); };
    const [stText, stClass] = rowStatus(r);
    return el('tr', {
      class: (r.failed ? 'failed ' : '') + (r.in_flight ? 'inflight ' : '') + (r.stalled ? 'stalled ' : '') + (r.capture_only ? 'capture-only' : ''),
      data: { key: r.id, id: r.id, run: r.run },
      onclick: open,
    },
    el('td', { class: 'id' }, r.has_page ? el('a', { href: href('rollout', { run: r.run, id: r.id }), text: r.id }) : el('span', { text: r.id, title: 'not a file name: no page' })),
    el('td', { text: fmtTime(r.start) }),
    el('td', { class: 'num', text: fmtMS(r.duration_ms) }),
    el('td', { class: 'status' }, el('span', { class: 'badge ' + stClass, text: stText })),
    el('td', { class: 'num' + (r.errors ? ' status-ERROR' : ''), text: r.in_flight ? '–' : fmtInt(r.errors) }),
    el('td', { class: 'num', text: fmtInt(r.spans) }),
    el('td', { class: 'num', text: fmtInt(r.model_calls) }),
    rowCells(r),
    el('td', { class: 'muted', text: r.capture_only ? captureNote(r) : r.name || '' }));
  }

  async function load() {
    const { data, etag: t } = await api('rollouts', { run: st.run, sort: st.sort, order: st.order, failed: st.failed ? '1' : '', gymfailed: st.gymfailed ? '1' : '', unhealthy: st.unhealthy ? '1' : '', q: st.q, offset: st.offset, limit: st.limit });
    if (t === etag) return;
    etag = t;
    total = data.total;
    fill(status);
    fill(liveBox, notKeptBanner(data.not_kept, data.max_rollouts, 'not listed, nor in the figures below'), noSpansBanner(data.no_spans, 'this list shows'), stalledBox(data.stalled, data.stalled_after_ms));
    orderBtn.textContent = st.order === 'asc' ? '▴ ascending' : '▾ descending';
    for (const [k, h] of Object.entries(heads)) {
      h.classList.toggle('sorted', k === st.sort);
      h.classList.toggle('asc', k === st.sort && st.order === 'asc');
    }
    pageInfo.textContent = data.total ? (st.offset + 1) + '–' + (st.offset + data.rows.length) + ' of ' + fmtInt(data.total) : '0 of 0';
    counts.textContent = fmtInt(data.all) + ' rollouts, ' + fmtInt(data.failed) + ' failed, ' + fmtInt(data.in_flight) + ' in flight';
    prev.disabled = st.offset === 0;
    next.disabled = st.offset + st.limit >= data.total;
    fill(tbody, data.rows.map(row));
    if (!data.rows.length) tbody.append(el('tr', null, el('td', { class: 'empty', colspan: table.tHead.rows[0].cells.length, text: 'No rollout matches.' })));
    sel.mark();
    await runWhy(st.run, why, table, gymFilters);
    await loadSummary();
    loaded();
  }

  // The run's model calls, tokens and latencies: the last points of the
  // GenAI metrics in otel-metrics.jsonl (design §4.7); hidden without them.
  async function loadSummary() {
    let sum = null;
    try {
      ({ data: sum } = await api('runsummary', { run: st.run }));
    } catch {
      sum = null;
    }
    summary.hidden = !(sum && sum.available);
    if (summary.hidden) return;
    const s = (v) => (v == null ? null : v * 1000);
    const p95 = (v) => (v == null ? '' : ', p95 ≤ ' + fmtMS(s(v)));
    fill(summary,
      el('span', { id: 'sum-calls', text: fmtInt(sum.model_calls) + ' model calls' }), ' · ',
      el('span', { id: 'sum-tokens', text: 'tokens ' + fmtInt(sum.input_tokens) + ' in / ' + fmtInt(sum.output_tokens) + ' out' }), ' · ',
      el('span', { id: 'sum-latency', text: 'latency mean ' + fmtMS(s(sum.latency_mean_s)) + p95(sum.latency_p95_s) }), ' · ',
      el('span', { id: 'sum-ttft', text: 'TTFT mean ' + fmtMS(s(sum.ttft_mean_s)) + p95(sum.ttft_p95_s) }), ' · ',
      el('span', { id: 'sum-errors', class: sum.errors ? 'status-ERROR' : '', text: fmtInt(sum.errors) + ' failed' }));
  }

  load().catch(showError);
  return rowsPage(load, sel, (e, r) => {
    switch (e.key) {
      case 'Enter': if (r) r.click(); return !!r;
      case 'f': failed.checked = !failed.checked; failed.dispatchEvent(new Event('change')); return true;
      case 'g': case 'u': {
        const box = e.key === 'g' ? gymFailed : unhealthy;
        if (box.parentElement.hidden) return false;
        box.checked = !box.checked;
        box.dispatchEvent(new Event('change'));
        return true;
      }
      case 's': st.sort = SORTS[(SORTS.indexOf(st.sort) + 1) % SORTS.length]; sortSel.value = st.sort; st.offset = 0; update(); return true;
      case 'o': orderBtn.click(); return true;
      case 'n': case 'ArrowRight': return page(1);
      case 'p': case 'ArrowLeft': return page(-1);
      case 'm': go('map', { run: st.run }); return true;
      case 'Escape': go('', {}); return true;
    }
    return false;
  }, () => clearTimeout(timer));
}
