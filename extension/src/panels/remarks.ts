/**
 * The compiler remarks panel: line, kind, pass, message; a click jumps to the line.
 */
import { Context } from './context';
import { el } from './dom';

export function renderRemarks(ctx: Context): HTMLElement | null {
  const remarks = ctx.bundle.remarks ?? [];
  if (!remarks.length) {
    return null;
  }
  const table = el('table', 'cutile-lab-table cutile-lab-remarks');
  const head = table.createTHead().insertRow();
  for (const h of ['Line', 'Kind', 'Pass', 'Message']) {
    head.append(el('th', '', h));
  }
  const body = table.createTBody();
  for (const r of remarks) {
    const tr = body.insertRow();
    const where = r.line ? `${ctx.shown(r.line)}${r.col != null ? `:${r.col + 1}` : ''}` : '';
    tr.append(
      el('td', 'cutile-lab-remark-line', where),
      el(
        'td',
        `cutile-lab-remark-kind cutile-lab-remark-${(r.kind ?? '').toLowerCase()}`,
        r.kind ?? ''
      ),
      el('td', '', r.pass ?? '', r.name ?? undefined),
      el('td', '', r.message)
    );
    if (r.line) {
      const line = r.line;
      tr.classList.add('cutile-lab-clickable');
      tr.title = `Go to line ${ctx.shown(line)} of the cell`;
      tr.addEventListener('click', () => ctx.reveal(line, r.col));
    }
  }
  return table;
}
