/**
 * Report bundle → DOM: the header, the notes, a tab strip and one panel per section. Each
 * panel is its own module under `panels/`; this one only assembles them. Pure DOM code (no
 * JupyterLab imports) so that it can be tested in jsdom; jumping to the notebook is
 * delegated to `options.reveal`.
 */
import { IReportBundle, SUPPORTED_VERSION } from './bundle';
import { renderDiffSummary, renderLineDiff } from './diff';
import { renderBenchmark } from './panels/benchmark';
import { renderLowered, renderSass } from './panels/code';
import { Context, IRenderOptions } from './panels/context';
import { renderDiagnostics } from './panels/diagnostics';
import { el } from './panels/dom';
import { renderHeader } from './panels/header';
import { renderRemarks } from './panels/remarks';
import { renderResources } from './panels/resources';
import { renderTileIR } from './panels/tileir';
import { renderTimings } from './panels/timings';

export type { IRenderOptions } from './panels/context';
export { formatBytes, formatSeconds, safeUrl } from './panels/dom';
export { uncheckedBlocks } from './panels/header';

export type TabId =
  | 'diagnostics'
  | 'compare'
  | 'tileirdiff'
  | 'sassdiff'
  | 'tileir'
  | 'resources'
  | 'sass'
  | 'remarks'
  | 'timings'
  | 'lowered'
  | 'benchmark';

const TAB_LABELS: Record<TabId, string> = {
  diagnostics: 'Diagnostics',
  compare: 'Resources',
  tileirdiff: 'Tile IR diff',
  sassdiff: 'SASS diff',
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
  root.dataset.kind = bundle.kind;
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
    ['compare', bundle.diff ? renderDiffSummary(bundle.diff) : null],
    [
      'tileirdiff',
      bundle.diff?.tileir
        ? renderLineDiff(bundle.diff.tileir, bundle.diff.left.label, bundle.diff.right.label)
        : null
    ],
    [
      'sassdiff',
      bundle.diff?.sass
        ? renderLineDiff(bundle.diff.sass, bundle.diff.left.label, bundle.diff.right.label)
        : null
    ],
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
    // Checked, nothing compiled yet: the header and the notes say it all.
    root.classList.add('cutile-lab-report-compact');
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
  if (bundle.kind === 'diff') {
    order.push('tileirdiff');
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
