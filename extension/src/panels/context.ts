/**
 * The shared state of one report rendering: the bundle, its source lines, its Tile IR line
 * map, and how to jump to a source line (delegated to `options.reveal`); and diagnostic
 * severities as every panel ranks them.
 */
import { IDiagnostic, IReportBundle, LineMap, cellLine, sourceLines } from '../bundle';
import { indentOf } from './dom';

export interface IRenderOptions {
  /**
   * Jump to a source position: `line` is 1-based and relative to `source.text`, `col`
   * 0-based. Called on clicks on diagnostics, mapped Tile IR lines, source lines, remarks.
   */
  reveal?: (line: number, col: number) => void;
}

/** Shared state of one rendering. */
export class Context {
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

export const SEVERITY_ORDER = ['error', 'warning', 'note', 'help'];

export function severityOf(d: IDiagnostic): string {
  const s = (d.severity || 'error').toLowerCase();
  return s === 'warn' ? 'warning' : s === 'info' ? 'note' : s;
}

export function severityCounts(diagnostics: IDiagnostic[]): [string, number][] {
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

export function plural(word: string, n: number): string {
  return n === 1 ? word : `${word}s`;
}
