/**
 * The compile timings panel: one bar per stage, in pipeline order, and the total.
 */
import { Context } from './context';
import { el, formatSeconds } from './dom';

export const STAGE_ORDER = ['check', 'lower', 'bytecode', 'disasm', 'tileiras'];

export function renderTimings(ctx: Context): HTMLElement | null {
  const timings = ctx.bundle.timings ?? {};
  const stages = Object.entries(timings).filter(
    (e): e is [string, number] => typeof e[1] === 'number' && e[0] !== 'total'
  );
  const rank = (k: string) =>
    STAGE_ORDER.includes(k) ? STAGE_ORDER.indexOf(k) : STAGE_ORDER.length;
  stages.sort((a, b) => rank(a[0]) - rank(b[0]));
  const total = typeof timings.total === 'number' ? timings.total : null;
  const others = Object.entries(timings).filter(
    ([k, v]) => k !== 'total' && v !== null && typeof v !== 'number'
  );
  if (!stages.length && total === null && !others.length) {
    return null;
  }
  const longest = Math.max(total ?? 0, ...stages.map(s => s[1])) || 1;
  const table = el('table', 'cutile-lab-table cutile-lab-timings');
  const addRow = (name: string, seconds: number, className = '') => {
    const tr = table.insertRow();
    tr.className = className;
    tr.dataset.key = name;
    const bar = el('span', 'cutile-lab-bar');
    bar.style.width = `${Math.max(1, (100 * seconds) / longest).toFixed(1)}%`;
    const barCell = el('td', 'cutile-lab-bar-cell');
    barCell.append(bar);
    tr.append(el('th', '', name), el('td', 'cutile-lab-num', formatSeconds(seconds)), barCell);
  };
  stages.forEach(([k, v]) => addRow(k, v));
  if (total !== null) {
    addRow('total', total, 'cutile-lab-total');
  }
  for (const [k, v] of others) {
    const tr = table.insertRow();
    tr.dataset.key = k;
    tr.append(el('th', '', k), el('td', '', String(v)), el('td'));
  }
  return table;
}
