// The rollout viewer's router: #/ (runs), #/run?run=U (a run's rollouts),
// #/rollout?run=U&id=R (a rollout), #/map?run=U (a run's service map).
import { route } from './nav.js';
import { runsPage, rolloutsPage } from './list.js';
import { rolloutPage } from './rollout.js';
import { mapPage } from './map.js';

const POLL_MS = 2000;
const pages = { '': runsPage, run: rolloutsPage, rollout: rolloutPage, map: mapPage };

const main = document.getElementById('main');
const live = document.getElementById('live');
const help = document.getElementById('help');
let current = null;

function show() {
  if (current && current.destroy) current.destroy();
  const { name, params } = route();
  const page = pages[name] || runsPage;
  main.replaceChildren();
  // Pages count their loads in main.dataset.loaded (tests wait on it).
  for (const k of Object.keys(main.dataset)) delete main.dataset[k];
  document.body.dataset.page = name || 'runs';
  current = page(main, params);
}

async function poll() {
  if (document.hidden || !current || !current.poll) return;
  try {
    await current.poll();
    live.textContent = 'live · ' + new Date().toLocaleTimeString();
  } catch (e) {
    live.textContent = 'live · ' + (e && e.message ? e.message : e);
  }
}

// typing: keys go to a text field (a checkbox that has the focus after a
// click takes none).
function typing(t) {
  return t && ((t.tagName === 'INPUT' && t.type !== 'checkbox') || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT');
}

document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (typing(e.target)) {
    if (e.key === 'Escape') {
      e.target.blur();
      main.focus();
      e.preventDefault();
    }
    return;
  }
  if (e.key === '?') {
    help.hidden = !help.hidden;
    e.preventDefault();
    return;
  }
  if (e.key === 'Escape' && !help.hidden) {
    help.hidden = true;
    e.preventDefault();
    return;
  }
  if (e.key === '/') {
    const s = main.querySelector('[data-search]');
    if (s) {
      s.focus();
      s.select();
      e.preventDefault();
    }
    return;
  }
  if (e.key === 'r') {
    poll();
    e.preventDefault();
    return;
  }
  if (current && current.key && current.key(e)) e.preventDefault();
});

document.getElementById('help-button').addEventListener('click', () => {
  help.hidden = !help.hidden;
});
window.addEventListener('hashchange', show);
setInterval(poll, POLL_MS);
show();
