/**
 * The `%tile_diff` panels: two compiles side by side — resources and compile times, then
 * the Tile IR and SASS line diffs (Compiler Explorer style: two columns, changed lines
 * tinted, unchanged runs folded). Pure DOM, like `render.ts`.
 */
import { IDiff, ILineDiff } from './bundle';
import { el } from './panels/dom';

const CONTEXT = 3;

/** Resources and compile times of both sides; differing rows are marked. */
export function renderDiffSummary(diff: IDiff): HTMLElement {
  const table = el('table', 'cutile-lab-table cutile-lab-diff-summary');
  const head = table.createTHead().insertRow();
  head.append(el('th', ''), el('th', '', diff.left.label), el('th', '', diff.right.label));
  const body = table.createTBody();
  const add = (name: string, a: unknown, b: unknown) => {
    const tr = body.insertRow();
    tr.dataset.key = name;
    if (String(a) !== String(b)) {
      tr.classList.add('cutile-lab-diff-changed');
    }
    tr.append(
      el('th', '', name),
      el('td', 'cutile-lab-num', show(a)),
      el('td', 'cutile-lab-num', show(b))
    );
  };
  add('arch', diff.left.arch, diff.right.arch);
  const keys = [
    ...new Set([
      ...Object.keys(diff.left.resources ?? {}),
      ...Object.keys(diff.right.resources ?? {})
    ])
  ];
  for (const k of keys) {
    add(k.replace(/_/g, ' '), diff.left.resources?.[k], diff.right.resources?.[k]);
  }
  const ms = (t: unknown) => (typeof t === 'number' ? `${(t * 1e3).toFixed(1)} ms` : null);
  add('compile time', ms(diff.left.timings?.total), ms(diff.right.timings?.total));
  return table;
}

/** A two-column line diff; runs of more than 2·CONTEXT equal lines are folded. */
export function renderLineDiff(diff: ILineDiff, left: string, right: string): HTMLElement {
  const panel = el('div', 'cutile-lab-diff');
  const stats = el('div', 'cutile-lab-diff-stats');
  stats.append(
    el('span', 'cutile-lab-diff-del', `−${diff.removed}`),
    ' ',
    el('span', 'cutile-lab-diff-add', `+${diff.added}`),
    ` lines · ${left} → ${right}`
  );
  panel.append(stats);
  const grid = el('div', 'cutile-lab-diff-grid cutile-lab-code-block');
  const rows = diff.rows ?? [];
  const keep = rows.map((r, i) =>
    rows.slice(Math.max(0, i - CONTEXT), i + CONTEXT + 1).some(near => near[0] !== 'equal')
  );
  let folded = 0;
  const flush = () => {
    if (folded) {
      grid.append(el('div', 'cutile-lab-diff-fold', `⋯ ${folded} unchanged lines`));
      folded = 0;
    }
  };
  rows.forEach((r, i) => {
    if (r[0] === 'equal' && !keep[i]) {
      folded += 1;
      return;
    }
    flush();
    const [tag, ln, lt, rn, rt] = r;
    const line = el('div', `cutile-lab-diff-row cutile-lab-diff-${tag}`);
    line.append(
      el('span', 'cutile-lab-ln', ln === null ? '' : String(ln)),
      el(
        'span',
        `cutile-lab-diff-text ${lt !== null && tag !== 'equal' ? 'cutile-lab-diff-old' : ''}`,
        lt ?? ''
      ),
      el('span', 'cutile-lab-ln', rn === null ? '' : String(rn)),
      el(
        'span',
        `cutile-lab-diff-text ${rt !== null && tag !== 'equal' ? 'cutile-lab-diff-new' : ''}`,
        rt ?? ''
      )
    );
    grid.append(line);
  });
  flush();
  panel.append(grid);
  return panel;
}

function show(v: unknown): string {
  return v === null || v === undefined ? '—' : String(v);
}
