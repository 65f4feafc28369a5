// Where the page is: the hash route, its query, the breadcrumbs.
import { el, href } from './dom.js';

export function route() {
  const h = location.hash.replace(/^#\/?/, '');
  const i = h.indexOf('?');
  return { name: i < 0 ? h : h.slice(0, i), params: new URLSearchParams(i < 0 ? '' : h.slice(i + 1)) };
}

// setParams changes the query of the current page without a history entry
// and without re-creating the page.
export function setParams(params) {
  history.replaceState(null, '', href(route().name, params));
}

export function go(page, params) {
  location.hash = href(page, params);
}

// setCrumbs shows [text, link] pairs; the last one is the current page.
export function setCrumbs(...items) {
  document.getElementById('crumbs').replaceChildren(
    ...items.map(([text, link]) => (link ? el('a', { href: link, text }) : el('span', { text }))),
  );
  document.title = items.map(([t]) => t).reverse().concat('otelcol-gym viewer').join(' · ');
}

export const runLabel = (run) => (run === '' ? '(no run id)' : run);
