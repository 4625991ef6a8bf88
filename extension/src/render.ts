/**
 * Report bundle → DOM. Pure DOM code (no JupyterLab imports) so that it can be tested in
 * jsdom; jumping to the notebook is delegated to `options.reveal`.
 */
import {
  IDiagnostic,
  ILabel,
  IReportBundle,
  ISpan,
  LineMap,
  SUPPORTED_VERSION,
  cellLine,
  sourceLines
} from './bundle';
import { tokenClass, tokenize } from './tileir';

export interface IRenderOptions {
  /**
   * Jump to a source position: `line` is 1-based and relative to `source.text`, `col`
   * 0-based. Called on clicks on diagnostics, mapped Tile IR lines, source lines, remarks.
   */
  reveal?: (line: number, col: number) => void;
}

export type TabId =
  'diagnostics' | 'tileir' | 'resources' | 'sass' | 'remarks' | 'timings' | 'lowered' | 'benchmark';

const TAB_LABELS: Record<TabId, string> = {
  diagnostics: 'Diagnostics',
  tileir: 'Tile IR',
  resources: 'Resources',
  sass: 'SASS',
  remarks: 'Remarks',
  timings: 'Timings',
  lowered: 'cuTile Python',
  benchmark: 'Benchmark'
};

/** Render a whole report: header, tab strip, panels. */
export function renderReport(bundle: IReportBundle, options: IRenderOptions = {}): HTMLElement {
  const ctx = new Context(bundle, options);
  const root = el('div', 'cutile-lab-report');
  root.append(renderHeader(ctx));
  const notes = (bundle.notes ?? []).filter(n => typeof n === 'string' && n);
  if (notes.length) {
    const box = el('div', 'cutile-lab-notes');
    for (const note of notes) {
      const line = el('div', 'cutile-lab-note-line');
      line.append(el('span', 'cutile-lab-note-label', 'note: '), note);
      box.append(line);
    }
    root.append(box);
  }
  if (bundle.version > SUPPORTED_VERSION) {
    root.append(
      el(
        'div',
        'cutile-lab-note',
        `This report has version ${bundle.version}; this extension reads version ` +
          `${SUPPORTED_VERSION}. Update cutile_lab's JupyterLab extension if parts are missing.`
      )
    );
  }

  const panels: [TabId, HTMLElement | null][] = [
    ['diagnostics', renderDiagnostics(ctx)],
    ['tileir', renderTileIR(ctx)],
    ['resources', renderResources(ctx)],
    ['sass', renderSass(ctx)],
    ['remarks', renderRemarks(ctx)],
    ['timings', renderTimings(ctx)],
    ['lowered', renderLowered(ctx)],
    ['benchmark', renderBenchmark(ctx)]
  ];
  const present = panels.filter((p): p is [TabId, HTMLElement] => p[1] !== null);
  if (!present.length) {
    root.append(el('div', 'cutile-lab-note', 'The report is empty.'));
    return root;
  }

  const strip = el('div', 'cutile-lab-tabs');
  strip.setAttribute('role', 'tablist');
  const body = el('div', 'cutile-lab-panels');
  const buttons = new Map<TabId, HTMLButtonElement>();
  const select = (id: TabId) => {
    for (const [tab, panel] of present) {
      const on = tab === id;
      buttons.get(tab)!.setAttribute('aria-selected', String(on));
      buttons.get(tab)!.tabIndex = on ? 0 : -1;
      buttons.get(tab)!.classList.toggle('cutile-lab-tab-active', on);
      panel.hidden = !on;
    }
    root.dataset.selectedTab = id;
  };
  for (const [id, panel] of present) {
    const button = el('button', 'cutile-lab-tab');
    button.type = 'button';
    button.dataset.tab = id;
    button.setAttribute('role', 'tab');
    button.append(TAB_LABELS[id]);
    const count = tabCount(bundle, id);
    if (count !== null) {
      button.append(el('span', 'cutile-lab-tab-count', String(count)));
    }
    button.addEventListener('click', () => select(id));
    buttons.set(id, button);
    strip.append(button);
    panel.classList.add('cutile-lab-panel');
    panel.dataset.tab = id;
    panel.setAttribute('role', 'tabpanel');
    body.append(panel);
  }
  strip.addEventListener('keydown', event => {
    const ids = present.map(p => p[0]);
    const at = ids.indexOf(root.dataset.selectedTab as TabId);
    const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0;
    if (step) {
      const next = ids[(at + step + ids.length) % ids.length];
      select(next);
      buttons.get(next)!.focus();
      event.preventDefault();
    }
  });
  root.append(strip, body);
  select(
    initialTab(
      bundle,
      present.map(p => p[0])
    )
  );
  return root;
}

/** Diagnostics first when there are any; a benchmark's table; else Tile IR; else the first. */
export function initialTab(bundle: IReportBundle, present: TabId[]): TabId {
  const order: TabId[] = ['diagnostics'];
  if (bundle.kind === 'benchmark') {
    order.push('benchmark');
  }
  order.push('tileir');
  return order.find(id => present.includes(id)) ?? present[0];
}

function tabCount(bundle: IReportBundle, id: TabId): number | null {
  switch (id) {
    case 'diagnostics':
      return bundle.diagnostics?.length ?? null;
    case 'remarks':
      return bundle.remarks?.length ?? null;
    default:
      return null;
  }
}

/** Shared state of one rendering. */
class Context {
  readonly lines: string[];
  readonly lineMap: LineMap;

  constructor(
    readonly bundle: IReportBundle,
    readonly options: IRenderOptions
  ) {
    this.lines = sourceLines(bundle);
    this.lineMap = new LineMap(bundle.tileir?.line_map);
  }

  get filename(): string {
    return this.bundle.source?.filename || this.bundle.kernel || 'kernel';
  }

  /** The notebook-cell line shown to the user for a `source.text` line. */
  shown(line: number): number {
    return cellLine(this.bundle, line);
  }

  reveal(line: number, col?: number | null): void {
    this.options.reveal?.(line, col ?? indentOf(this.lines[line - 1] ?? ''));
  }
}

// --- header ---

function renderHeader(ctx: Context): HTMLElement {
  const { bundle } = ctx;
  const header = el('div', 'cutile-lab-header');
  header.append(el('span', 'cutile-lab-kernel', bundle.kernel || bundle.kind));
  if (bundle.summary) {
    header.title = bundle.summary;
  }
  const consts = Object.entries(bundle.consts ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const chip of [bundle.kind, bundle.arch, bundle.device, ...consts]) {
    if (chip) {
      header.append(el('span', 'cutile-lab-chip', String(chip)));
    }
  }
  if (bundle.status) {
    header.append(
      el(
        'span',
        `cutile-lab-chip cutile-lab-status cutile-lab-status-${bundle.status}`,
        bundle.status
      )
    );
  }
  const counts = severityCounts(bundle.diagnostics ?? []);
  const summary = el('span', 'cutile-lab-summary');
  if (counts.length) {
    counts.forEach(([severity, n], i) => {
      if (i) {
        summary.append(', ');
      }
      summary.append(el('span', `cutile-lab-sev-${severity}`, `${n} ${plural(severity, n)}`));
    });
  } else if (bundle.diagnostics) {
    summary.append(el('span', 'cutile-lab-ok', 'no diagnostics'));
  }
  header.append(summary);
  const timings = bundle.timings;
  if (timings) {
    const parts: string[] = [];
    if (typeof timings.total === 'number') {
      parts.push(formatSeconds(timings.total));
    }
    if (timings.cache) {
      parts.push(`cache ${timings.cache}`);
    }
    if (parts.length) {
      header.append(el('span', 'cutile-lab-header-time', parts.join(' · ')));
    }
  }
  return header;
}

const SEVERITY_ORDER = ['error', 'warning', 'note', 'help'];

function severityOf(d: IDiagnostic): string {
  const s = (d.severity || 'error').toLowerCase();
  return s === 'warn' ? 'warning' : s === 'info' ? 'note' : s;
}

function severityCounts(diagnostics: IDiagnostic[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const d of diagnostics) {
    counts.set(severityOf(d), (counts.get(severityOf(d)) ?? 0) + 1);
  }
  const rank = (s: string) => {
    const i = SEVERITY_ORDER.indexOf(s);
    return i < 0 ? SEVERITY_ORDER.length : i;
  };
  return [...counts].sort((a, b) => rank(a[0]) - rank(b[0]));
}

function plural(word: string, n: number): string {
  return n === 1 ? word : `${word}s`;
}

// --- diagnostics, rustc-style ---

interface IMark {
  start: number;
  end: number;
  primary: boolean;
  message: string;
}

function renderDiagnostics(ctx: Context): HTMLElement | null {
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

function renderDiagnostic(ctx: Context, d: IDiagnostic): HTMLElement {
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
function explainToggle(box: HTMLElement, code: string, explanation: string): HTMLElement {
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

function renderSnippet(ctx: Context, span: ISpan, labels: ILabel[]): DocumentFragment {
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

function gutter(ctx: Context, span: ISpan | null | undefined, text: string): string {
  const width = span && span.line > 0 ? String(ctx.shown(span.line)).length : 1;
  return text.padStart(width) + ' ';
}

/** One line of a snippet: a gutter plus content. */
function row(className: string, gutterText: string, ...content: (string | Node)[]): HTMLElement {
  const line = el('div', `cutile-lab-snippet-line ${className}`.trim());
  line.append(el('span', 'cutile-lab-gutter', gutterText), ...content);
  return line;
}

// --- Tile IR beside the source ---

function renderTileIR(ctx: Context): HTMLElement | null {
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

function diagnosticLines(diagnostics: IDiagnostic[]): Map<number, string> {
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

function pane(title: string, className: string): HTMLElement {
  const p = el('div', `cutile-lab-pane ${className}`);
  p.append(el('div', 'cutile-lab-pane-title', title), el('div', 'cutile-lab-code-block'));
  return p;
}

function codeRow(number: string, content: Node[]): HTMLElement {
  const r = el('div', 'cutile-lab-row');
  r.append(el('span', 'cutile-lab-ln', number), el('span', 'cutile-lab-row-text'));
  r.lastElementChild!.append(...content);
  return r;
}

/** Scroll a row's pane (not the page) so that the row is visible. */
function scrollIntoPane(row: HTMLElement): void {
  const box = row.closest('.cutile-lab-code-block') as HTMLElement | null;
  if (!box || !box.clientHeight) {
    return;
  }
  const top = row.offsetTop - box.offsetTop;
  if (top < box.scrollTop || top + row.offsetHeight > box.scrollTop + box.clientHeight) {
    box.scrollTop = Math.max(0, top - box.clientHeight / 3);
  }
}

// --- resources, SASS, remarks, timings, benchmark ---

const RESOURCE_LABELS: Record<string, [string, 'bytes' | 'count']> = {
  registers: ['Registers / thread', 'count'],
  shared_bytes: ['Shared memory / block', 'bytes'],
  local_bytes: ['Local memory / thread', 'bytes'],
  max_threads_per_block: ['Max threads / block', 'count'],
  spill_stores: ['Spill stores', 'bytes'],
  spill_loads: ['Spill loads', 'bytes'],
  reserved_shared_bytes: ['Reserved shared memory', 'bytes'],
  stack_bytes: ['Stack / thread', 'bytes'],
  max_registers: ['Max registers', 'count'],
  code_bytes: ['Code size', 'bytes'],
  barriers: ['Barriers', 'count']
};

function renderResources(ctx: Context): HTMLElement | null {
  const resources = ctx.bundle.resources;
  const entries = Object.entries(resources ?? {}).filter(([, v]) => v !== null && v !== undefined);
  if (!entries.length) {
    return null;
  }
  const table = el('table', 'cutile-lab-table cutile-lab-resources');
  for (const [key, value] of entries) {
    const [label, unit] = RESOURCE_LABELS[key] ?? [humanize(key), 'count'];
    const tr = table.insertRow();
    tr.dataset.key = key;
    tr.append(el('th', '', label));
    const shown =
      typeof value === 'number' && unit === 'bytes' ? formatBytes(value) : String(value);
    const td = el('td', '', shown);
    if (key.startsWith('spill') && typeof value === 'number' && value > 0) {
      td.classList.add('cutile-lab-warn');
    }
    tr.append(td);
  }
  return table;
}

function renderLowered(ctx: Context): HTMLElement | null {
  const lowered = ctx.bundle.lowered;
  return lowered ? el('pre', 'cutile-lab-pre cutile-lab-lowered', lowered) : null;
}

function renderSass(ctx: Context): HTMLElement | null {
  const sass = ctx.bundle.sass;
  return sass ? el('pre', 'cutile-lab-pre cutile-lab-sass', sass) : null;
}

function renderRemarks(ctx: Context): HTMLElement | null {
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

const STAGE_ORDER = ['check', 'lower', 'bytecode', 'disasm', 'tileiras'];

function renderTimings(ctx: Context): HTMLElement | null {
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

const BENCH_LABELS: Record<string, string> = {
  name: 'Run',
  median_us: 'Median (µs)',
  min_us: 'Min (µs)',
  gbps: 'GB/s',
  tb_s: 'TB/s',
  tflops: 'TFLOP/s',
  pct_of_peak: '% of peak',
  pct_of_roof: '% of roof'
};
const PERCENT_COLUMNS = new Set(['pct_of_peak', 'pct_of_roof']);

function renderBenchmark(ctx: Context): HTMLElement | null {
  const bench = ctx.bundle.benchmark;
  const rows = bench?.rows ?? [];
  if (!rows.length && !bench?.plot_png) {
    return null;
  }
  const panel = el('div', 'cutile-lab-benchmark');
  if (rows.length) {
    const columns = [...new Set(rows.flatMap(r => Object.keys(r)))];
    columns.sort((a, b) => Number(b === 'name') - Number(a === 'name'));
    const table = el('table', 'cutile-lab-table');
    const head = table.createTHead().insertRow();
    columns.forEach(c => head.append(el('th', '', BENCH_LABELS[c] ?? humanize(c))));
    const body = table.createTBody();
    for (const r of rows) {
      const tr = body.insertRow();
      for (const c of columns) {
        const v = r[c];
        const td = el('td', typeof v === 'number' ? 'cutile-lab-num' : '', formatValue(v));
        if (PERCENT_COLUMNS.has(c) && typeof v === 'number') {
          const bar = el('span', 'cutile-lab-bar');
          bar.style.width = `${clamp(v, 0, 100)}%`;
          const track = el('span', 'cutile-lab-bar-track');
          track.append(bar);
          td.append(track);
        }
        tr.append(td);
      }
    }
    panel.append(table);
  }
  if (bench?.plot_png) {
    const img = el('img', 'cutile-lab-plot');
    img.src = `data:image/png;base64,${bench.plot_png}`;
    img.alt = `${ctx.bundle.kernel ?? ''} benchmark plot`.trim();
    panel.append(img);
  }
  return panel;
}

// --- small helpers ---

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text?: string,
  title?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  if (title) {
    node.title = title;
  }
  return node;
}

function clamp(value: number, low: number, high: number): number {
  return Math.max(low, Math.min(high, value));
}

function indentOf(text: string): number {
  return text.length - text.trimStart().length;
}

function humanize(key: string): string {
  const s = key.replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Only http(s) links (and relative ones) are followed. */
export function safeUrl(url: string | null | undefined): string | null {
  if (!url) {
    return null;
  }
  try {
    const parsed = new URL(url, 'https://relative.invalid/');
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? url : null;
  } catch {
    return null;
  }
}

export function formatSeconds(s: number): string {
  if (s < 1e-3) {
    return `${(s * 1e6).toFixed(0)} µs`;
  }
  if (s < 1) {
    return `${(s * 1e3).toFixed(s < 0.01 ? 2 : 1)} ms`;
  }
  return `${s.toFixed(2)} s`;
}

export function formatBytes(n: number): string {
  if (n < 1024) {
    return `${n} B`;
  }
  const kib = n / 1024;
  return kib < 1024 ? `${+kib.toFixed(1)} KiB` : `${+(kib / 1024).toFixed(1)} MiB`;
}

function formatValue(v: unknown): string {
  if (typeof v === 'number') {
    return Number.isInteger(v) ? String(v) : String(+v.toFixed(Math.abs(v) < 10 ? 2 : 1));
  }
  return v === null || v === undefined ? '' : String(v);
}
