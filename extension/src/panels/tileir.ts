/**
 * The Tile IR panel: the source beside the Tile IR, highlighted, the two linked through the
 * line map (hover lights up the other side, a click jumps to the source line).
 */
import { IDiagnostic } from '../bundle';
import { tokenClass, tokenize } from '../tileir';
import { Context, SEVERITY_ORDER, severityOf } from './context';
import { el } from './dom';

export function renderTileIR(ctx: Context): HTMLElement | null {
  const text = ctx.bundle.tileir?.text;
  if (!text) {
    return null;
  }
  const { lineMap } = ctx;
  const panel = el('div', 'cutile-lab-split');
  let sourcePane: HTMLElement | null = null;
  if (ctx.lines.length) {
    const marked = diagnosticLines(ctx.bundle.diagnostics ?? []);
    sourcePane = pane(`Source · ${ctx.filename}`, 'cutile-lab-source-pane');
    ctx.lines.forEach((textLine, i) => {
      const line = i + 1;
      const r = codeRow(String(ctx.shown(line)), [document.createTextNode(textLine)]);
      r.dataset.srcLine = String(line);
      if (lineMap.sourceToIr.has(line)) {
        r.classList.add('cutile-lab-mapped');
      }
      const severity = marked.get(line);
      if (severity) {
        r.classList.add(`cutile-lab-row-${severity}`);
      }
      r.title = `Go to line ${ctx.shown(line)} of the cell`;
      r.classList.add('cutile-lab-clickable');
      sourcePane!.lastElementChild!.append(r);
    });
    panel.append(sourcePane);
  }
  const irPane = pane('Tile IR', 'cutile-lab-ir-pane');
  tokenize(text).forEach((tokens, i) => {
    const line = i + 1;
    const spans = tokens.map(t =>
      t.kind === 'space' || t.kind === 'text'
        ? document.createTextNode(t.text)
        : el('span', tokenClass(t.kind), t.text)
    );
    const r = codeRow(String(line), spans);
    r.dataset.irLine = String(line);
    const src = lineMap.sourceOf(line);
    if (src !== undefined) {
      r.classList.add('cutile-lab-mapped', 'cutile-lab-clickable');
      r.title = `From line ${ctx.shown(src)} of the cell (click to go there)`;
    }
    irPane.lastElementChild!.append(r);
  });
  panel.append(irPane);

  // Hover: light up the rows on the other side of the line map.
  const lit: HTMLElement[] = [];
  const clear = () => lit.splice(0).forEach(n => n.classList.remove('cutile-lab-linked'));
  panel.addEventListener('mouseover', event => {
    clear();
    const r = (event.target as Element).closest?.('.cutile-lab-row') as HTMLElement | null;
    if (!r) {
      return;
    }
    const [attr, other, map] = r.dataset.irLine
      ? (['irLine', 'src-line', lineMap.irToSource] as const)
      : (['srcLine', 'ir-line', lineMap.sourceToIr] as const);
    const targets = map.get(Number(r.dataset[attr])) ?? [];
    for (const n of targets) {
      const hit = panel.querySelector<HTMLElement>(`.cutile-lab-row[data-${other}="${n}"]`);
      if (hit) {
        hit.classList.add('cutile-lab-linked');
        lit.push(hit);
      }
    }
    if (lit.length) {
      r.classList.add('cutile-lab-linked');
      lit.push(r);
      scrollIntoPane(lit[0]);
    }
  });
  panel.addEventListener('mouseleave', clear);
  panel.addEventListener('click', event => {
    const r = (event.target as Element).closest?.('.cutile-lab-row') as HTMLElement | null;
    if (!r) {
      return;
    }
    const line = r.dataset.srcLine
      ? Number(r.dataset.srcLine)
      : lineMap.sourceOf(Number(r.dataset.irLine));
    if (line !== undefined) {
      ctx.reveal(line);
    }
  });
  return panel;
}

export function diagnosticLines(diagnostics: IDiagnostic[]): Map<number, string> {
  const lines = new Map<number, string>();
  for (const d of diagnostics) {
    const line = d.span?.line;
    const severity = severityOf(d);
    const current = lines.get(line ?? 0);
    if (line && (!current || SEVERITY_ORDER.indexOf(severity) < SEVERITY_ORDER.indexOf(current))) {
      lines.set(line, severity);
    }
  }
  return lines;
}

export function pane(title: string, className: string): HTMLElement {
  const p = el('div', `cutile-lab-pane ${className}`);
  p.append(el('div', 'cutile-lab-pane-title', title), el('div', 'cutile-lab-code-block'));
  return p;
}

export function codeRow(number: string, content: Node[]): HTMLElement {
  const r = el('div', 'cutile-lab-row');
  r.append(el('span', 'cutile-lab-ln', number), el('span', 'cutile-lab-row-text'));
  r.lastElementChild!.append(...content);
  return r;
}

/** Scroll a row's pane (not the page) so that the row is visible. */
export function scrollIntoPane(row: HTMLElement): void {
  const box = row.closest('.cutile-lab-code-block') as HTMLElement | null;
  if (!box || !box.clientHeight) {
    return;
  }
  const top = row.offsetTop - box.offsetTop;
  if (top < box.scrollTop || top + row.offsetHeight > box.scrollTop + box.clientHeight) {
    box.scrollTop = Math.max(0, top - box.clientHeight / 3);
  }
}
