/**
 * The benchmark panel: the timed runs as a table (the percent-of-roofline columns with a bar)
 * and the roofline or bandwidth plot.
 */
import { Context } from './context';
import { clamp, el, formatValue, humanize } from './dom';

export const BENCH_LABELS: Record<string, string> = {
  name: 'Run',
  median_us: 'Median (µs)',
  min_us: 'Min (µs)',
  gbps: 'GB/s',
  tb_s: 'TB/s',
  tflops: 'TFLOP/s',
  pct_of_peak: '% of peak',
  pct_of_roof: '% of roof'
};
export const PERCENT_COLUMNS = new Set(['pct_of_peak', 'pct_of_roof']);

export function renderBenchmark(ctx: Context): HTMLElement | null {
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
