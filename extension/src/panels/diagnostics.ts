/**
 * The diagnostics panel, rustc-style: `error[TL010]: message`, the location, the source lines
 * with carets under the primary span and dashes under labels, `= help:` and `= note:` lines.
 * A click jumps to the line; a code links to (or unfolds) its explanation.
 */
import { IDiagnostic, ILabel, ISpan } from '../bundle';
import { Context, severityOf } from './context';
import { clamp, el, indentOf, safeUrl } from './dom';

export interface IMark {
  start: number;
  end: number;
  primary: boolean;
  message: string;
}

export function renderDiagnostics(ctx: Context): HTMLElement | null {
  const diagnostics = ctx.bundle.diagnostics ?? [];
  if (!diagnostics.length) {
    return null;
  }
  const panel = el('div');
  for (const d of diagnostics) {
    panel.append(renderDiagnostic(ctx, d));
  }
  return panel;
}

export function renderDiagnostic(ctx: Context, d: IDiagnostic): HTMLElement {
  const severity = severityOf(d);
  const box = el('div', `cutile-lab-diagnostic cutile-lab-sev-${severity}`);
  const head = el('div', 'cutile-lab-diag-head');
  const sev = el('span', 'cutile-lab-sev', severity);
  head.append(sev);
  if (d.code) {
    const url = safeUrl(d.url);
    let code: HTMLElement = el('span', 'cutile-lab-code', d.code);
    if (url) {
      const a = el('a', 'cutile-lab-code', d.code);
      a.href = url;
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
      a.title = `Explain ${d.code}`;
      code = a;
    } else if (d.explanation) {
      code = explainToggle(box, d.code, d.explanation);
    }
    head.append('[', code, ']');
  }
  head.append(': ', el('span', 'cutile-lab-message', d.message));
  box.append(head);

  const span = d.span;
  const snippet = el('div', 'cutile-lab-snippet');
  if (span && span.line > 0) {
    box.dataset.line = String(span.line);
    box.classList.add('cutile-lab-clickable');
    box.tabIndex = 0;
    box.title = `Go to line ${ctx.shown(span.line)} of the cell`;
    snippet.append(renderSnippet(ctx, span, d.labels ?? []));
  }
  if (d.help) {
    snippet.append(row('cutile-lab-help', gutter(ctx, span, ''), '= help: ', d.help));
  }
  for (const note of d.notes ?? []) {
    snippet.append(row('cutile-lab-diag-note', gutter(ctx, span, ''), '= note: ', note));
  }
  if (snippet.childNodes.length) {
    box.append(snippet);
  }

  const go = (event: Event) => {
    if ((event.target as Element).closest?.('a')) {
      return;
    }
    const line = (event.target as Element).closest?.('[data-src-line]');
    if (line instanceof HTMLElement && box.contains(line)) {
      ctx.reveal(Number(line.dataset.srcLine), Number(line.dataset.col ?? NaN) || null);
    } else if (span && span.line > 0) {
      ctx.reveal(span.line, span.col);
    }
  };
  box.addEventListener('click', go);
  box.addEventListener('keydown', event => {
    if (event.key === 'Enter') {
      go(event);
    }
  });
  return box;
}

/** The code as a link that shows (and hides again) its explanation under the diagnostic. */
export function explainToggle(box: HTMLElement, code: string, explanation: string): HTMLElement {
  const a = el('a', 'cutile-lab-code', code);
  a.href = '#';
  a.title = `What ${code} means and how to fix it`;
  a.setAttribute('role', 'button');
  a.addEventListener('click', event => {
    event.preventDefault();
    const shown = box.querySelector(':scope > pre.cutile-lab-explain');
    if (shown) {
      shown.remove();
    } else {
      box.append(el('pre', 'cutile-lab-explain', explanation));
    }
  });
  return a;
}

export function renderSnippet(ctx: Context, span: ISpan, labels: ILabel[]): DocumentFragment {
  const out = document.createDocumentFragment();
  const marks = new Map<number, IMark[]>();
  const add = (s: ISpan, primary: boolean, message: string) => {
    const text = ctx.lines[s.line - 1];
    if (text === undefined) {
      return;
    }
    const start = clamp(s.col ?? indentOf(text), 0, text.length);
    const sameLine = !s.end_line || s.end_line === s.line;
    const end = clamp(
      sameLine && s.end_col != null ? s.end_col : text.length,
      start + 1,
      Math.max(text.length, start + 1)
    );
    const list = marks.get(s.line) ?? [];
    list.push({ start, end, primary, message });
    marks.set(s.line, list);
  };
  add(span, true, '');
  for (const label of labels) {
    if (label?.span && label.span.line > 0) {
      add(label.span, false, label.message ?? '');
    }
  }
  const width = String(Math.max(span.line, ...marks.keys()) + ctx.shown(1) - 1).length;
  const pad = (s: string) => s.padStart(width);

  out.append(
    row(
      'cutile-lab-location',
      pad('') + '--> ',
      `${ctx.filename}:${ctx.shown(span.line)}:${(span.col ?? 0) + 1}`
    )
  );
  if (!marks.size) {
    return out;
  }
  out.append(row('', pad('') + ' |'));
  let previous = 0;
  for (const line of [...marks.keys()].sort((a, b) => a - b)) {
    if (previous && line > previous + 1) {
      out.append(row('cutile-lab-gap', '...'));
    }
    previous = line;
    const sourceRow = row(
      'cutile-lab-src',
      `${pad(String(ctx.shown(line)))} | `,
      ctx.lines[line - 1]
    );
    sourceRow.dataset.srcLine = String(line);
    out.append(sourceRow);
    for (const mark of marks.get(line)!.sort((a, b) => Number(b.primary) - Number(a.primary))) {
      const underline = el(
        'span',
        mark.primary ? 'cutile-lab-caret' : 'cutile-lab-label',
        (mark.primary ? '^' : '-').repeat(mark.end - mark.start) +
          (mark.message ? ` ${mark.message}` : '')
      );
      const markRow = row('cutile-lab-mark', `${pad('')} | `, ' '.repeat(mark.start), underline);
      markRow.dataset.srcLine = String(line);
      markRow.dataset.col = String(mark.start);
      out.append(markRow);
    }
  }
  out.append(row('', pad('') + ' |'));
  return out;
}

export function gutter(ctx: Context, span: ISpan | null | undefined, text: string): string {
  const width = span && span.line > 0 ? String(ctx.shown(span.line)).length : 1;
  return text.padStart(width) + ' ';
}

/** One line of a snippet: a gutter plus content. */
export function row(
  className: string,
  gutterText: string,
  ...content: (string | Node)[]
): HTMLElement {
  const line = el('div', `cutile-lab-snippet-line ${className}`.trim());
  line.append(el('span', 'cutile-lab-gutter', gutterText), ...content);
  return line;
}
