import {
  IReportBundle,
  LineMap,
  cellLine,
  parseBundle,
  sourceLines,
  sourceOffset
} from '../bundle';
import { ReportRenderer } from '../index';
import { formatBytes, formatSeconds, initialTab, renderReport, safeUrl } from '../render';
import { loadSample } from './sample';

function render(bundle: IReportBundle) {
  const calls: [number, number][] = [];
  const root = renderReport(bundle, { reveal: (line, col) => calls.push([line, col]) });
  document.body.replaceChildren(root);
  return { root, calls };
}

const tabs = (root: HTMLElement) =>
  [...root.querySelectorAll<HTMLElement>('.cutile-lab-tab')].map(t => t.dataset.tab);
const visiblePanels = (root: HTMLElement) =>
  [...root.querySelectorAll<HTMLElement>('.cutile-lab-panel')]
    .filter(p => !p.hidden)
    .map(p => p.dataset.tab);
const rowText = (n: Element) => n.textContent ?? '';

describe('bundle helpers', () => {
  it('parses objects and JSON text and rejects incomplete bundles', () => {
    expect(parseBundle('{"version": 1, "kind": "compile", "kernel": "k"}').kernel).toBe('k');
    expect(() => parseBundle({ version: 1, kernel: 'k' })).toThrow('`kind`');
    expect(parseBundle({ version: 1, kind: 'benchmark', kernel: null }).kind).toBe('benchmark');
    expect(() => parseBundle([1])).toThrow('not a JSON object');
  });

  it('maps source lines to cell lines and indexes the line map both ways', () => {
    const b = loadSample();
    expect(cellLine(b, 1)).toBe(2);
    expect(cellLine({ ...b, source: { text: 'x' } }, 3)).toBe(3);
    expect(sourceLines({ ...b, source: { text: 'a\nb\n' } })).toEqual(['a', 'b']);
    const map = new LineMap([
      [1, 1],
      [2, 1],
      [3, 2],
      [3, 1]
    ]);
    expect(map.sourceToIr.get(1)).toEqual([1, 2, 3]);
    expect(map.sourceOf(3)).toBe(1);
    expect(map.sourceOf(9)).toBeUndefined();
  });

  it('finds where the source starts in the cell, whatever first_line says', () => {
    const src = 'def k(z):\n    z.store(1)\n';
    expect(sourceOffset('%%tilekernel\ndef k(z):\n    z.store(1)', src, 1)).toBe(1);
    expect(sourceOffset('%%tilekernel\ndef k(z):\n    z.store(1)', src, 2)).toBe(1);
    expect(sourceOffset('def k(z):\n    z.store(1)', src, null)).toBe(0);
    expect(sourceOffset('# something else', src, 3)).toBe(2); // no match: trust first_line
    expect(sourceOffset('anything', '', 2)).toBe(1);
  });

  it('formats numbers and vets links', () => {
    expect(formatSeconds(0.0008)).toBe('800 µs');
    expect(formatSeconds(0.118)).toBe('118.0 ms');
    expect(formatSeconds(2)).toBe('2.00 s');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(49152)).toBe('48 KiB');
    expect(safeUrl('https://x.invalid/a#b')).toBe('https://x.invalid/a#b');
    expect(safeUrl('docs/diagnostics.md#tl012')).toBe('docs/diagnostics.md#tl012');
    expect(safeUrl('javascript:alert(1)')).toBeNull();
  });
});

describe('tabs', () => {
  it('shows every non-empty section, diagnostics first and selected', () => {
    const { root } = render(loadSample());
    expect(tabs(root)).toEqual([
      'diagnostics',
      'tileir',
      'resources',
      'sass',
      'remarks',
      'timings',
      'lowered',
      'benchmark'
    ]);
    expect(visiblePanels(root)).toEqual(['diagnostics']);
    const diagTab = root.querySelector('.cutile-lab-tab[data-tab="diagnostics"]')!;
    expect(diagTab.getAttribute('aria-selected')).toBe('true');
    expect(diagTab.textContent).toBe('Diagnostics2');
  });

  it('hides empty sections and opens Tile IR when there are no diagnostics', () => {
    const b = loadSample();
    const { root } = render({
      ...b,
      diagnostics: [],
      sass: null,
      remarks: null,
      benchmark: null,
      lowered: null
    });
    expect(tabs(root)).toEqual(['tileir', 'resources', 'timings']);
    expect(visiblePanels(root)).toEqual(['tileir']);
    expect(root.querySelector('.cutile-lab-summary')!.textContent).toBe('no diagnostics');
  });

  it('opens the benchmark of a benchmark report', () => {
    const b = loadSample();
    expect(initialTab({ ...b, kind: 'benchmark' }, ['tileir', 'benchmark'])).toBe('benchmark');
    expect(initialTab(b, ['timings', 'sass'])).toBe('timings');
  });

  it('switches panels on click and with the arrow keys', () => {
    const { root } = render(loadSample());
    root.querySelector<HTMLElement>('.cutile-lab-tab[data-tab="sass"]')!.click();
    expect(visiblePanels(root)).toEqual(['sass']);
    root
      .querySelector('.cutile-lab-tabs')!
      .dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
    expect(visiblePanels(root)).toEqual(['remarks']);
  });

  it('renders a minimal bundle and says when it is empty', () => {
    const { root } = render({ version: 1, kind: 'compile', kernel: 'k' });
    expect(tabs(root)).toEqual([]);
    expect(root.textContent).toContain('The report is empty.');
  });
});

describe('diagnostics', () => {
  it('shows a code explanation inline when there is no url', () => {
    const sample = loadSample();
    sample.diagnostics = [
      {
        code: 'TL010',
        severity: 'error',
        message: 'store into shared tensor `x`',
        url: null,
        explanation: '## TL010 — store into a shared (read-only) input\n\n**Fix:** store into z'
      }
    ];
    const { root } = render(sample);
    const box = root.querySelector<HTMLElement>('.cutile-lab-diagnostic')!;
    const code = box.querySelector<HTMLAnchorElement>('a.cutile-lab-code')!;
    expect(code.getAttribute('href')).toBe('#');
    expect(box.querySelector('pre.cutile-lab-explain')).toBeNull();
    code.click();
    expect(box.querySelector('pre.cutile-lab-explain')!.textContent).toContain('**Fix:**');
    code.click();
    expect(box.querySelector('pre.cutile-lab-explain')).toBeNull();
  });

  it('renders rustc-style with code link, location, carets, labels and help', () => {
    const { root } = render(loadSample());
    const [first, second] = root.querySelectorAll<HTMLElement>('.cutile-lab-diagnostic');
    expect(first.classList).toContain('cutile-lab-sev-error');
    expect(first.querySelector('.cutile-lab-diag-head')!.textContent).toBe(
      'error[TL010]: store into shared tensor `x`'
    );
    const link = first.querySelector<HTMLAnchorElement>('a.cutile-lab-code')!;
    expect(link.href).toBe('https://example.invalid/docs/diagnostics.md#tl010');
    expect(second.querySelector('a')).toBeNull(); // no url, no link
    expect(second.querySelector('.cutile-lab-diag-note')!.textContent).toBe(
      '  = note: every `Mut` output must be stored exactly once on every path'
    );

    const lines = [...first.querySelectorAll('.cutile-lab-snippet-line')].map(rowText);
    expect(lines).toEqual([
      ' --> <cell-1>:5:5',
      '  |',
      '2 | def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):',
      '  |                                   ' +
        '-'.repeat(19) +
        ' `x` is declared shared (read-only) here',
      '...',
      '5 |     x.store(tx + ty)',
      '  |     ' + '^'.repeat(16),
      '  |',
      "  = help: store into the kernel's own tile: `z.store(tx + ty)`"
    ]);
  });

  it('jumps to the primary span, or to the line that was clicked', () => {
    const { root, calls } = render(loadSample());
    const first = root.querySelector<HTMLElement>('.cutile-lab-diagnostic')!;
    first.querySelector<HTMLElement>('.cutile-lab-diag-head .cutile-lab-message')!.click();
    first.querySelector<HTMLElement>('.cutile-lab-mark [class="cutile-lab-label"]')!.click();
    first
      .querySelector<HTMLAnchorElement>('a')!
      .dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true }));
    first.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    expect(calls).toEqual([
      [4, 4],
      [1, 34],
      [4, 4]
    ]);
  });

  it('does not link unsafe urls and copes with missing spans and source', () => {
    const { root, calls } = render({
      version: 1,
      kind: 'compile',
      kernel: 'k',
      diagnostics: [
        { code: 'TL999', message: 'no span', url: 'javascript:alert(1)' },
        {
          code: 'TL998',
          severity: 'warning',
          message: 'span, no source',
          span: { line: 3, col: 2 }
        }
      ]
    });
    const [a, b] = root.querySelectorAll<HTMLElement>('.cutile-lab-diagnostic');
    expect(a.querySelector('a')).toBeNull();
    expect(a.classList).not.toContain('cutile-lab-clickable');
    expect(b.textContent).toContain('--> k:3:3');
    a.click();
    b.click();
    expect(calls).toEqual([[3, 2]]);
    expect(root.querySelector('.cutile-lab-summary')!.textContent).toBe('1 error, 1 warning');
  });
});

describe('Tile IR and the line map', () => {
  function tileir() {
    const r = render(loadSample());
    r.root.querySelector<HTMLElement>('.cutile-lab-tab[data-tab="tileir"]')!.click();
    const panel = r.root.querySelector<HTMLElement>('.cutile-lab-panel[data-tab="tileir"]')!;
    const ir = (n: number) =>
      panel.querySelector<HTMLElement>(`.cutile-lab-row[data-ir-line="${n}"]`)!;
    const src = (n: number) =>
      panel.querySelector<HTMLElement>(`.cutile-lab-row[data-src-line="${n}"]`)!;
    const linked = () =>
      [...panel.querySelectorAll<HTMLElement>('.cutile-lab-linked')].map(n =>
        n.dataset.irLine ? `ir${n.dataset.irLine}` : `src${n.dataset.srcLine}`
      );
    return { ...r, panel, ir, src, linked };
  }

  it('highlights Tile IR tokens', () => {
    const { panel, ir } = tileir();
    const ops = [...panel.querySelectorAll('.cutile-tir-op')].map(rowText);
    expect(ops).toContain('addf');
    expect(ir(17).querySelector('.cutile-tir-op')!.textContent).toBe('addf');
    expect(ir(1).querySelector('.cutile-tir-keyword')!.textContent).toBe('entry');
    expect(panel.querySelectorAll('.cutile-tir-type').length).toBeGreaterThan(10);
    expect(panel.querySelectorAll('.cutile-tir-ssa').length).toBeGreaterThan(10);
    expect(ir(17).querySelector('.cutile-lab-row-text')!.textContent).toBe(
      '  %1 = addf %tile, %tile_8  : tile<128xf32>'
    );
  });

  it('shows the source with cell line numbers and marks diagnostic lines', () => {
    const { src } = tileir();
    expect(src(1).querySelector('.cutile-lab-ln')!.textContent).toBe('2');
    expect(src(4).classList).toContain('cutile-lab-row-error');
    expect(src(1).classList).toContain('cutile-lab-row-error');
    const warned = render({
      ...loadSample(),
      diagnostics: [{ severity: 'warning', message: 'w', span: { line: 3 } }]
    });
    expect(warned.root.querySelector('[data-src-line="3"].cutile-lab-row')!.classList).toContain(
      'cutile-lab-row-warning'
    );
  });

  it('links hovered lines in both directions', () => {
    const { panel, ir, src, linked } = tileir();
    ir(17)
      .querySelector('.cutile-tir-op')!
      .dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    expect(linked()).toEqual(['src4', 'ir17']);
    src(3).dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    expect(linked().sort()).toEqual(['ir15', 'ir16', 'src3']);
    ir(20).dispatchEvent(new MouseEvent('mouseover', { bubbles: true })); // `return`: unmapped
    expect(linked()).toEqual([]);
    src(2).dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    panel.dispatchEvent(new MouseEvent('mouseleave'));
    expect(linked()).toEqual([]);
  });

  it('jumps to the mapped source line on click', () => {
    const { ir, src, calls } = tileir();
    ir(17).click();
    ir(20).click();
    src(2).click();
    expect(calls).toEqual([
      [4, 4],
      [2, 4]
    ]);
  });
});

describe('other sections', () => {
  it('renders resources, remarks, timings and the benchmark', () => {
    const b = loadSample();
    const { root, calls } = render({
      ...b,
      resources: { ...b.resources, spill_stores: 8, shared_bytes: 49152 }
    });
    const res = root.querySelector('.cutile-lab-resources')!;
    expect(res.querySelector('[data-key="registers"]')!.textContent).toBe('Registers / thread16');
    expect(res.querySelector('[data-key="shared_bytes"]')!.textContent).toContain('48 KiB');
    expect(res.querySelector('[data-key="spill_stores"] td')!.classList).toContain(
      'cutile-lab-warn'
    );

    const remarks = root.querySelectorAll<HTMLElement>('.cutile-lab-remarks tbody tr');
    expect(remarks[0].textContent).toBe('3:10PassedMemoryLoad instruction selected: LDG.E.128');
    remarks[1].click();
    expect(calls).toEqual([[4, 4]]);

    const timings = [...root.querySelectorAll<HTMLElement>('.cutile-lab-timings tr')].map(
      r => r.dataset.key
    );
    expect(timings).toEqual(['check', 'lower', 'bytecode', 'disasm', 'tileiras', 'total', 'cache']);
    expect(root.querySelector('.cutile-lab-header-time')!.textContent).toBe(
      '118.0 ms · cache miss'
    );

    const bench = root.querySelector('.cutile-lab-benchmark')!;
    expect([...bench.querySelectorAll('th')].map(rowText)).toEqual([
      'Run',
      'Median (µs)',
      'TB/s',
      '% of peak'
    ]);
    expect(bench.querySelector('tbody tr')!.textContent).toBe('add12.33.192.5');
    expect(root.querySelector('.cutile-lab-sass')!.textContent).toContain('LDG.E.128');
    expect(root.querySelector('.cutile-lab-lowered')!.textContent).toContain('ct.store(z');
  });

  it('shows status, bound const generics, notes and the summary', () => {
    const { root } = render(loadSample());
    const chips = [...root.querySelectorAll('.cutile-lab-header .cutile-lab-chip')].map(rowText);
    expect(chips).toEqual(['compile', 'sm_90', 'B=128', 'error']);
    expect(root.querySelector('.cutile-lab-status-error')).not.toBeNull();
    expect(root.querySelector('.cutile-lab-header')!.getAttribute('title')).toBe(
      'add [sm_90] B=128: 2 errors'
    );
    expect(root.querySelector('.cutile-lab-notes')!.textContent).toBe(
      'note: `add` was not defined'
    );
    expect(root.querySelector('.cutile-lab-summary')!.textContent).toBe('2 errors');
  });

  it('renders a benchmark of no single kernel', () => {
    const { root } = render({
      version: 1,
      kind: 'benchmark',
      kernel: null,
      device: 'NVIDIA H100',
      benchmark: {
        rows: [{ name: 'cupy', median_us: 10.25, gbps: 3100, pct_of_roof: 91.6 }],
        plot_png: 'iVBORw0KGgo='
      }
    });
    expect(root.querySelector('.cutile-lab-kernel')!.textContent).toBe('benchmark');
    expect(tabs(root)).toEqual(['benchmark']);
    expect([...root.querySelectorAll('th')].map(rowText)).toEqual([
      'Run',
      'Median (µs)',
      'GB/s',
      '% of roof'
    ]);
    expect(root.querySelector('.cutile-lab-bar-track')).not.toBeNull();
    expect(root.querySelector<HTMLImageElement>('img.cutile-lab-plot')!.src).toBe(
      'data:image/png;base64,iVBORw0KGgo='
    );
  });
});

describe('ReportRenderer', () => {
  const model = (data: unknown) =>
    ({ data: { 'application/vnd.cutile-lab.report+json': data } }) as any;

  it('renders a bundle into its node', async () => {
    const r = new ReportRenderer('application/vnd.cutile-lab.report+json');
    await r.renderModel(model(loadSample()));
    expect(r.node.querySelector('.cutile-lab-kernel')!.textContent).toBe('add');
    expect(r.node.querySelectorAll('.cutile-lab-diagnostic').length).toBe(2);
  });

  it('explains a bundle it cannot read', async () => {
    const r = new ReportRenderer('application/vnd.cutile-lab.report+json');
    await r.renderModel(model({ version: 1 }));
    expect(r.node.textContent).toBe(
      'cutile_lab: cannot show this report: the report has no `kind`'
    );
  });

  it('points at the line in its own source view when no notebook cell holds it', async () => {
    const r = new ReportRenderer('application/vnd.cutile-lab.report+json');
    await r.renderModel(model(loadSample()));
    document.body.replaceChildren(r.node);
    r.node.querySelector<HTMLElement>('.cutile-lab-diagnostic')!.click();
    await new Promise(resolve => setTimeout(resolve, 0));
    const row = r.node.querySelector('.cutile-lab-source-pane [data-src-line="4"]')!;
    expect(row.classList).toContain('cutile-lab-flash');
  });
});
