/**
 * The header line: kernel, kind, arch, device, consts, status, the unchecked-blocks badge,
 * the diagnostic counts and the compile time.
 */
import { IReportBundle } from '../bundle';
import { Context, plural, severityCounts } from './context';
import { el, formatSeconds } from './dom';

export function renderHeader(ctx: Context): HTMLElement {
  const { bundle } = ctx;
  const header = el('div', 'cutile-lab-header');
  header.append(el('span', 'cutile-lab-kernel', bundle.kernel || bundle.kind));
  if (bundle.summary) {
    header.title = bundle.summary;
  }
  const consts = Object.entries(bundle.consts ?? {}).map(([k, v]) => `${k}=${v}`);
  const kind = bundle.kernel ? bundle.kind : null; // else the kind is the title already
  for (const chip of [kind, bundle.arch, bundle.device, ...consts]) {
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
  const unchecked = uncheckedBlocks(bundle);
  if (unchecked) {
    const badge = el(
      'span',
      'cutile-lab-chip cutile-lab-unchecked',
      `${unchecked} unchecked block${unchecked === 1 ? '' : 's'}`
    );
    badge.title =
      'code inside `with unsafe():` is not checked for ownership: races and out-of-bounds ' +
      'accesses there are yours to rule out';
    header.append(badge);
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
  } else if (bundle.diagnostics && !unchecked) {
    summary.append(el('span', 'cutile-lab-ok', 'no diagnostics'));
  } else if (bundle.diagnostics) {
    summary.append(el('span', 'cutile-lab-ok', 'no diagnostics in checked code'));
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

/** How many `with unsafe():` blocks the report says were not checked. */
export function uncheckedBlocks(bundle: IReportBundle): number {
  return Array.isArray(bundle.unchecked) ? bundle.unchecked.length : 0;
}
