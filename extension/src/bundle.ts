/**
 * The report bundle: the JSON that the `%%tilekernel` magic publishes under
 * `application/vnd.cutile-lab.report+json`. This file is the TypeScript side of that
 * contract; `tests/browser/sample_report.json` is an example of it.
 *
 * Conventions:
 * - every `line` (diagnostic spans, labels, `tileir.line_map` source lines, remarks) is
 *   1-based and relative to `source.text`;
 * - every `col` / `end_col` is 0-based (Python `ast` offsets), `end_col` exclusive;
 * - `source.first_line` is the 1-based line of the notebook cell on which `source.text`
 *   begins (2 when the text is a `%%tilekernel` cell's body). Defaults to 1.
 */

export const MIME_TYPE = 'application/vnd.cutile-lab.report+json';

export interface ISpan {
  line: number;
  col?: number | null;
  end_line?: number | null;
  end_col?: number | null;
}

export interface ILabel {
  span: ISpan;
  message?: string | null;
}

export interface IDiagnostic {
  code?: string | null;
  severity?: string | null;
  message: string;
  span?: ISpan | null;
  labels?: ILabel[] | null;
  help?: string | null;
  url?: string | null;
  /** The catalog's entry for the code (Markdown), shown inline when the code is clicked. */
  explanation?: string | null;
  notes?: string[] | null;
}

export interface ISource {
  filename?: string | null;
  first_line?: number | null;
  text?: string | null;
}

export interface ITileIR {
  text: string;
  /** `[tileir_line, source_line]` pairs, both 1-based. */
  line_map?: [number, number][] | null;
}

export interface IRemark {
  line?: number | null;
  col?: number | null;
  kind?: string | null;
  pass?: string | null;
  name?: string | null;
  message: string;
}

export interface IBenchmark {
  rows?: Record<string, string | number | boolean | null>[] | null;
  plot_png?: string | null;
}

export interface IReportBundle {
  version: number;
  kind: string;
  /** May be null for a benchmark of several kernels. */
  kernel?: string | null;
  arch?: string | null;
  cell_id?: string | null;
  /** "compiled", "checked", "error", ... */
  status?: string | null;
  /** Const generics bound for this compile, e.g. `{"B": 128}`. */
  consts?: Record<string, number | string | boolean> | null;
  /** The kernel's const generics, bound or not. */
  const_generics?: string[] | null;
  /** Short lines shown under the diagnostics. */
  notes?: string[] | null;
  /** One-line summary (the text/plain headline). */
  summary?: string | null;
  /** The kernel lowered to cuTile Python. */
  lowered?: string | null;
  device?: string | null;
  source?: ISource | null;
  diagnostics?: IDiagnostic[] | null;
  tileir?: ITileIR | null;
  resources?: Record<string, number | string | null> | null;
  sass?: string | null;
  /** Why `sass` is null (for instance, how to install a disassembler). */
  sass_hint?: string | null;
  /** A CUDA C++ kernel's PTX (its `tileir` is null). */
  ptx?: string | null;
  /** `with unsafe():` blocks the checker did not check (lines relative to `source.text`). */
  unchecked?: ISpan[] | null;
  /** Two compiles side by side (`%tile_diff`; kind "diff"). */
  diff?: IDiff | null;
  remarks?: IRemark[] | null;
  timings?: Record<string, number | string | null> | null;
  benchmark?: IBenchmark | null;
}

/** One side of a `%tile_diff`. */
export interface IDiffSide {
  label: string;
  arch?: string | null;
  consts?: Record<string, number | string | boolean> | null;
  options?: Record<string, number | string | boolean> | null;
  resources?: Record<string, number | string | null> | null;
  timings?: Record<string, number | string | null> | null;
  summary?: string | null;
}

/** `[tag, left line, left text, right line, right text]`; tag: equal, replace, delete, insert. */
export type DiffRow = [string, number | null, string | null, number | null, string | null];

export interface ILineDiff {
  rows: DiffRow[];
  added: number;
  removed: number;
  left_lines?: number | null;
  right_lines?: number | null;
}

export interface IDiff {
  left: IDiffSide;
  right: IDiffSide;
  tileir?: ILineDiff | null;
  sass?: ILineDiff | null;
}

/** The newest bundle version this renderer understands. */
export const SUPPORTED_VERSION = 1;

/**
 * Check the required fields of a bundle (an object or its JSON text). Throws an
 * `Error` with a readable message when the data cannot be rendered at all.
 */
export function parseBundle(data: unknown): IReportBundle {
  const value = typeof data === 'string' ? JSON.parse(data) : data;
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error('the report is not a JSON object');
  }
  const bundle = value as Partial<IReportBundle>;
  for (const key of ['version', 'kind'] as const) {
    if (bundle[key] === undefined || bundle[key] === null) {
      throw new Error(`the report has no \`${key}\``);
    }
  }
  return bundle as IReportBundle;
}

/** Lines of `source.text`, without the empty line after a final newline. */
export function sourceLines(bundle: IReportBundle): string[] {
  const text = bundle.source?.text;
  return text ? text.replace(/\r\n?/g, '\n').replace(/\n$/, '').split('\n') : [];
}

/** The 1-based notebook-cell line of a 1-based `source.text` line. */
export function cellLine(bundle: IReportBundle, sourceLine: number): number {
  const first = bundle.source?.first_line;
  return (typeof first === 'number' && first > 0 ? first : 1) + sourceLine - 1;
}

/**
 * The 0-based line of `cellText` on which `source.text` begins. `first_line` says where
 * (default 1), but the cell text is the ground truth: when the source's first lines are
 * found elsewhere in the cell (say, under a `%%tilekernel` line that `first_line` did not
 * count), that position wins.
 */
export function sourceOffset(
  cellText: string,
  sourceText: string | null | undefined,
  firstLine?: number | null
): number {
  const declared = typeof firstLine === 'number' && firstLine > 0 ? firstLine - 1 : 0;
  const cell = cellText.replace(/\r\n?/g, '\n').split('\n');
  const src = (sourceText ?? '').replace(/\r\n?/g, '\n').replace(/\n+$/, '').split('\n');
  const probe = src.slice(0, 5);
  if (!probe.join('').trim()) {
    return declared;
  }
  const matches = (at: number) =>
    probe.every(
      (line, i) => cell[at + i] !== undefined && cell[at + i].trimEnd() === line.trimEnd()
    );
  if (matches(declared)) {
    return declared;
  }
  for (let at = 0; at + probe.length <= cell.length; at++) {
    if (matches(at)) {
      return at;
    }
  }
  return declared;
}

/** Two-way index over `tileir.line_map`. */
export class LineMap {
  readonly irToSource = new Map<number, number[]>();
  readonly sourceToIr = new Map<number, number[]>();

  constructor(pairs: readonly (readonly [number, number])[] | null | undefined) {
    for (const pair of pairs ?? []) {
      if (!Array.isArray(pair) || pair.length < 2) {
        continue;
      }
      const [ir, src] = pair;
      push(this.irToSource, ir, src);
      push(this.sourceToIr, src, ir);
    }
  }

  /** The first (lowest) source line mapped from a Tile IR line. */
  sourceOf(irLine: number): number | undefined {
    const lines = this.irToSource.get(irLine);
    return lines && lines.length ? Math.min(...lines) : undefined;
  }
}

function push(map: Map<number, number[]>, key: number, value: number): void {
  const list = map.get(key);
  if (!list) {
    map.set(key, [value]);
  } else if (!list.includes(value)) {
    list.push(value);
  }
}
