// Why a rollout went as it did: where its time went (the time_split_ms
// of rollouts.jsonl, design §4.8) and what Gym's output says of it
// (reward, failure, health verdict). The run page's columns, filters and
// percentiles, and the rollout page's bar and results, are built here.
import { el, api, fmtMS, fmtInt, fill } from './dom.js';

export const CATEGORIES = ['model', 'tools', 'verify', 'agent', 'queue', 'other'];
const CATEGORY_TITLES = {
  model: 'model calls',
  tools: 'resources-server calls other than verify',
  verify: 'verify',
  agent: "the agent's own time between calls",
  queue: "from the rollout's first request to the agent's /run starting",
  other: 'the rest',
};

// Sort keys of the run page beyond the base ones, and those whose first
// click sorts ascending (the lowest reward first).
export const WHY_SORTS = ['reward', ...CATEGORIES.map((c) => c + '_ms')];
export const ASC_FIRST = ['reward'];

export const sortLabel = (s) => (s === 'reward' ? 'reward' : s.endsWith('_ms') ? s.slice(0, -3) + ' time' : s);

// fmtReward shows a reward to 3 decimals, without trailing zeros.
export function fmtReward(v) {
  if (v == null || !isFinite(v)) return '–';
  const s = Number(v).toFixed(3);
  return s.replace(/0+$/, '').replace(/\.$/, '');
}

// headCells are the run page's extra column heads; sortable(label, key,
// cls) makes one that sorts.
export function headCells(sortable) {
  const head = (label, key, cls, title) => {
    const h = sortable(label, key, cls);
    h.dataset.sort = key;
    h.title = title;
    return h;
  };
  return [
    head('Reward', 'reward', 'num gym-col', "Gym's reward (click: the lowest first)"),
    el('th', { class: 'gym-col', text: 'Verdict', title: "Gym's health check" }),
    el('th', { class: 'gym-col', text: 'Gym failure', title: 'failure_kind (hover a cell: failure_reason)' }),
    ...CATEGORIES.map((c) => head(c, c + '_ms', 'num split-col', c + ': ' + CATEGORY_TITLES[c] + ' (click to sort)')),
  ];
}

// rowCells are a list row's extra cells.
export function rowCells(r) {
  const g = r.gym || {};
  const split = r.time_split_ms;
  return [
    el('td', { class: 'num gym-col reward', data: { reward: g.reward ?? '' }, text: fmtReward(g.reward) }),
    el('td', { class: 'gym-col verdict' }, g.verdict ? verdictBadge(g.verdict) : '–'),
    el('td', { class: 'gym-col gym-failure' + (g.failure_kind || g.dropped ? ' status-ERROR' : ''), text: g.failure_kind || (g.dropped ? 'dropped' : ''), title: g.failure_reason || null }),
    ...CATEGORIES.map((c) => el('td', { class: 'num split-col', data: { category: c, ms: split ? split[c] : '' }, text: split ? fmtMS(split[c]) : '–' })),
  ];
}

function verdictBadge(v) {
  return el('span', { class: 'badge verdict-' + (v === 'healthy' || v === 'unhealthy' ? v : 'other'), text: v });
}

// runWhy loads the run page's percentiles of the split and the state of
// Gym's output into box, and shows or hides the columns and filters that
// need them. It returns Gym's output state.
export async function runWhy(run, box, table, gymFilters) {
  const [{ data: split }, { data: gym }] = await Promise.all([api('timesplit', { run }), api('gymoutput', { run })]);
  const hasSplit = split.with_split > 0;
  const hasGym = gym.configured && gym.here;
  table.classList.toggle('no-split', !hasSplit);
  table.classList.toggle('no-gym', !hasGym);
  for (const f of gymFilters) f.hidden = !hasGym;
  fill(box, gym.configured ? gymNote(gym) : null, splitStats(split));
  return gym;
}

// splitStats is the run's p50/p90/max per category.
function splitStats(s) {
  if (!s.with_split) {
    return s.finished ? el('p', { class: 'muted', id: 'split-none', text: 'Where the time went: no rollout of this run has a time split in rollouts.jsonl (a collector without the time split, or with time_split turned off).' }) : null;
  }
  const note = s.with_split < s.finished ? ' (' + fmtInt(s.with_split) + ' of ' + fmtInt(s.finished) + ' finished rollouts have one)' : '';
  return el('section', { id: 'split-stats' },
    el('h2', { text: 'Where the time went' + note }),
    el('table', { class: 'grid stats' },
      el('thead', null, el('tr', null, el('th', { text: 'category' }), ...['p50', 'p90', 'max', 'share of all time'].map((t) => el('th', { class: 'num', text: t })))),
      el('tbody', null, s.categories.map((c) => el('tr', { data: { category: c.name }, title: CATEGORY_TITLES[c.name] || '' },
        el('td', null, el('span', { class: 'swatch cat-' + c.name }), c.name),
        el('td', { class: 'num p50', data: { ms: c.p50_ms }, text: fmtMS(c.p50_ms) }),
        el('td', { class: 'num p90', data: { ms: c.p90_ms }, text: fmtMS(c.p90_ms) }),
        el('td', { class: 'num max', data: { ms: c.max_ms }, text: fmtMS(c.max_ms) }),
        el('td', { class: 'num share', text: (c.share * 100).toFixed(1) + '%' }))))),
    s.malformed ? el('p', { class: 'muted', text: fmtInt(s.malformed) + ' unreadable time_split_ms in rollouts.jsonl were not shown.' }) : null);
}

// gymNote says which Gym output is shown, and what of it could not be read.
function gymNote(g) {
  const parts = [];
  if (g.error) parts.push(el('div', { class: 'error-box', text: "Gym's output " + g.path + ': ' + g.error }));
  if (!g.here) {
    parts.push(el('p', { class: 'muted', id: 'gym-elsewhere', text: "Gym's output (" + g.path + ') is shown beside run ' + (g.run || '(none yet)') +
      (g.chosen_by === 'latest' ? ', the run that started last; name its run with --gym-run (gym_run) to show it here.' : '.') }));
    return parts;
  }
  const files = g.files.map((f) => f.name + (f.present ? ': ' + fmtInt(f.rows) + ' rows' + (f.malformed ? ', ' + fmtInt(f.malformed) + ' malformed rows skipped' : '') : ': none') + (f.error ? ' (' + f.error + ')' : ''));
  parts.push(el('p', { id: 'gym-status', class: 'muted' },
    "Gym's output " + g.path + ': ' + fmtInt(g.joined) + ' rollouts joined',
    g.reward_mean != null ? ', mean reward ' + fmtReward(g.reward_mean) + ' over ' + fmtInt(g.rewarded) : '',
    ', ' + fmtInt(g.failed) + ' failed, ' + fmtInt(g.unhealthy) + ' unhealthy',
    g.unmatched ? ', ' + fmtInt(g.unmatched) + ' of its rollout ids are no rollout of this run' : '',
    g.not_kept ? ', ' + fmtInt(g.not_kept) + ' rollouts of this run no longer kept by the viewer (max_rollouts) not joined' : '',
    '. ', files.join(' · ')));
  const malformed = g.files.reduce((n, f) => n + f.malformed, 0);
  if (malformed) parts.push(el('p', { id: 'gym-malformed', class: 'status-ERROR', text: fmtInt(malformed) + " malformed rows of Gym's output were skipped (not JSON objects, or without a rollout id)." }));
  const verdicts = g.files.find((f) => f.name === 'rollout_verdicts.jsonl');
  if (verdicts && !verdicts.present && !verdicts.error) {
    parts.push(el('p', { class: 'muted', id: 'gym-no-verdicts', text: 'No rollout_verdicts.jsonl beside it: Gym writes the health verdicts when the run ends (not with ++disable_health_check=true).' }));
  }
  return parts;
}

// splitBar is a rollout's time split as one bar of six parts, with each
// part's time and share beside it.
export function splitBar(split) {
  if (!split) {
    return el('p', { class: 'muted', id: 'split-none', text: 'Where the time went: no time split in rollouts.jsonl for this rollout (in flight, or written without one).' });
  }
  const total = CATEGORIES.reduce((t, c) => t + split[c], 0);
  const bar = el('div', { class: 'split-bar', role: 'img', 'aria-label': 'where the time went' });
  const legend = el('div', { class: 'split-legend' });
  for (const c of CATEGORIES) {
    const share = total > 0 ? split[c] / total : 0;
    const part = el('div', { class: 'part cat-' + c, data: { category: c, ms: split[c] }, title: c + ': ' + fmtMS(split[c]) + ' (' + (share * 100).toFixed(1) + '%)' });
    part.style.width = (share * 100).toFixed(3) + '%';
    bar.append(part);
    legend.append(el('span', { data: { category: c }, title: CATEGORY_TITLES[c] },
      el('span', { class: 'swatch cat-' + c }), c + ' ', el('span', { class: 'mono ms', text: fmtMS(split[c]) }), ' ', el('span', { class: 'muted share', text: (share * 100).toFixed(1) + '%' })));
  }
  return el('section', { id: 'split' }, el('h2', { text: 'Where the time went (' + fmtMS(total) + ')' }), bar, legend);
}

// gymSection is what Gym's output says of a rollout.
export function gymSection(g) {
  if (!g) return null;
  const row = (k, v, cls, id, data) => el('tr', { id, data }, el('td', { class: 'k', text: k }), el('td', { class: cls || '' }, v));
  const p = g.perf || {};
  return el('section', { id: 'gym-result' },
    el('h2', { text: "Gym's result" }),
    el('table', { class: 'kv' },
      row('reward', fmtReward(g.reward), 'mono', 'gym-reward', { reward: g.reward ?? '' }),
      g.masked ? row('masked', 'mask_sample: the reward is no valid measurement', 'status-flight') : null,
      g.dropped ? row('dropped', 'in the failures file: dropped from the score', 'status-ERROR') : null,
      row('failure kind', g.failure_kind || 'none', g.failure_kind ? 'status-ERROR' : '', 'gym-failure-kind'),
      g.failure_reason ? row('failure reason', el('pre', { class: 'reason', text: g.failure_reason }), '', 'gym-failure-reason') : null,
      row('health verdict', g.verdict ? verdictBadge(g.verdict) : 'none', '', 'gym-verdict'),
      g.findings ? row('findings', el('ul', null, g.findings.map((f) => el('li', { text: f })), g.more_findings ? el('li', { class: 'muted', text: '+' + g.more_findings + ' more' }) : null), '', 'gym-findings') : null,
      g.perf ? row('ng_perf', [p.num_turns != null ? fmtInt(p.num_turns) + ' turns' : null, p.num_tool_calls != null ? fmtInt(p.num_tool_calls) + ' tool calls' : null,
        p.prompt_tokens != null ? fmtInt(p.prompt_tokens) + ' prompt tokens' : null, p.completion_tokens != null ? fmtInt(p.completion_tokens) + ' completion tokens' : null,
        p.total_latency_ms != null ? 'total ' + fmtMS(p.total_latency_ms) : null].filter(Boolean).join(' · '), 'mono', 'gym-perf') : null));
}
