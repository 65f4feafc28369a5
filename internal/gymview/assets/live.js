// Capture-only and stalled rollouts (design §8): the banner of rollouts
// that have model-call captures and no spans, and the box of a run's
// stalled rollouts, listed before the others.
import { el, href, fmtMS, fmtInt, fmtTime } from './dom.js';

// noSpansBanner says why n rollouts have no waterfall, and how to fix it.
export function noSpansBanner(n, shown) {
  if (!n) return null;
  return el('div', { class: 'banner', id: 'no-spans-banner', role: 'note' },
    el('strong', { text: fmtInt(n) + (n === 1 ? ' rollout has' : ' rollouts have') + ' model-call captures but no spans: Gym\'s telemetry is off.' }),
    ' There is no waterfall, so ' + shown + ' what the capture files tell: model calls, tokens, model time and status. ',
    'Most often nemo-gym installed from the package index brought nemo-lens 0.1.0, which lacks what Gym imports, and Gym ',
    'switched its telemetry off without a word; or the Gym servers did not inherit the telemetry environment. Fix: start Gym under ',
    el('code', { text: 'otelcol-gym instrument -- gym …' }), ', which makes every Gym process send its spans here.');
}

// notKeptBanner says that a run's oldest rollouts are not listed: the viewer
// keeps the newest max rollouts.jsonl rows of the capture dir in memory.
export function notKeptBanner(n, max, what) {
  if (!n) return null;
  return el('div', { class: 'banner', id: 'not-kept-banner', role: 'note' },
    el('strong', { text: (n === 1 ? "This run's oldest rollout is " : fmtInt(n) + " of this run's oldest rollouts are ") + what + '.' }),
    ' The viewer keeps the newest ' + fmtInt(max) + ' rollouts of the capture dir in memory and lets the oldest go; their files stay in the capture dir. ',
    'To list more, raise ', el('code', { text: 'max_rollouts' }), ' of the gymview extension (', el('code', { text: 'otelcol-gym view --max-rollouts' }), '): about 480 bytes of memory a rollout.');
}

// place is "server: call", its title how the viewer knows.
function place(p) {
  if (!p || !p.call) return el('span', { class: 'muted', text: '–' });
  return el('span', { title: p.how || '' }, p.server ? el('span', { class: 'mono', text: p.server + ': ' }) : null, p.call);
}

// stalledBox lists a run's stalled rollouts: how long since their last
// sign of life, where that was, and the call each waits on.
export function stalledBox(rows, stalledAfterMS) {
  if (!rows || !rows.length) return null;
  return el('div', { class: 'stalled', id: 'stalled' },
    el('h2', { text: fmtInt(rows.length) + ' stalled: no sign of life for ' + fmtMS(stalledAfterMS) + ' or more' }),
    el('table', { class: 'grid' },
      el('thead', null, el('tr', null, ['Rollout', 'Idle', 'Last seen', 'Where', 'Waits on'].map((t) => el('th', { text: t })))),
      el('tbody', null, rows.map((r) => el('tr', { class: 'stalled-row', data: { id: r.id } },
        el('td', { class: 'id' }, r.has_page ? el('a', { href: href('rollout', { run: r.run, id: r.id }), text: r.id }) : r.id),
        el('td', { class: 'num status-stalled', text: fmtMS(r.stalled.idle_ms) }),
        el('td', { text: fmtTime(r.stalled.at) }),
        el('td', { class: 'seen' }, place(r.stalled.seen)),
        el('td', { class: 'waits' }, place(r.stalled.waits_on)))))));
}

// stallLine is a rollout page's stall.
export function stallLine(s) {
  if (!s) return null;
  return el('p', { class: 'banner stalled-line', id: 'stall-line' },
    el('strong', { text: 'Stalled: no sign of life for ' + fmtMS(s.idle_ms) + '. ' }),
    'Last seen at ', place(s.seen), ' (', fmtTime(s.at), '); waits on ', place(s.waits_on), '.');
}

// status is a row's status text and badge class.
export function rowStatus(r) {
  if (r.stalled) return ['stalled', 'status-stalled'];
  if (r.in_flight) return ['in flight', 'status-flight'];
  return [r.status || '–', 'status-' + r.status];
}

// captureNote is what a capture-only row shows in place of its root span.
export function captureNote(r) {
  const parts = ['capture only'];
  if (r.input_tokens != null) parts.push('tokens ' + fmtInt(r.input_tokens) + ' in / ' + fmtInt(r.output_tokens) + ' out');
  if (r.model_ms != null) parts.push('model ' + fmtMS(r.model_ms));
  return parts.join(' · ');
}
