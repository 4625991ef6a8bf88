/**
 * Live diagnostics: a `%%tilekernel` cell is checked by the running kernel as the user types,
 * and its diagnostics underline the cell before it runs (message and help on hover).
 *
 * One Jupyter comm (`cutile_lab.live`, registered by `%load_ext cutile_lab`) per notebook
 * kernel; a cell's text is sent a short pause after the last keystroke; the reply's spans are
 * in the cell's own numbering. The underlines are a CodeMirror decoration field plus a hover
 * tooltip, added to a cell's editor the first time it is checked; they clear on the next edit.
 */
import { StateEffect, StateField, Text } from '@codemirror/state';
import { Decoration, DecorationSet, EditorView, hoverTooltip } from '@codemirror/view';
import type { Cell, ICodeCellModel } from '@jupyterlab/cells';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';

export const TARGET = 'cutile_lab.live';
export const DEBOUNCE_MS = 400;

export interface ILiveDiagnostic {
  code?: string | null;
  severity?: string | null;
  message: string;
  help?: string | null;
  span?: {
    line: number;
    col?: number | null;
    end_line?: number | null;
    end_col?: number | null;
  } | null;
}

interface IMarked {
  from: number;
  to: number;
  diagnostic: ILiveDiagnostic;
}

const setMarks = StateEffect.define<IMarked[]>();

const marksField = StateField.define<{ marks: IMarked[]; deco: DecorationSet }>({
  create: () => ({ marks: [], deco: Decoration.none }),
  update(value, tr) {
    if (tr.docChanged) {
      value = { marks: [], deco: Decoration.none };
    }
    for (const effect of tr.effects) {
      if (effect.is(setMarks)) {
        const marks = effect.value;
        const ranges = marks
          .filter(m => m.to > m.from)
          .sort((a, b) => a.from - b.from)
          .map(m =>
            Decoration.mark({
              class: `cutile-lab-live cutile-lab-live-${severity(m.diagnostic)}`,
              attributes: { 'data-code': m.diagnostic.code ?? '' }
            }).range(m.from, m.to)
          );
        value = { marks, deco: Decoration.set(ranges, true) };
      }
    }
    return value;
  },
  provide: field => EditorView.decorations.from(field, v => v.deco)
});

const tooltip = hoverTooltip((view, pos) => {
  const state = view.state.field(marksField, false);
  const hits = (state?.marks ?? []).filter(m => m.from <= pos && pos <= m.to);
  if (!hits.length) {
    return null;
  }
  return {
    pos: Math.min(...hits.map(h => h.from)),
    end: Math.max(...hits.map(h => h.to)),
    above: true,
    create: () => {
      const dom = document.createElement('div');
      dom.className = 'cutile-lab-live-tooltip';
      for (const { diagnostic: d } of hits) {
        const item = document.createElement('div');
        item.className = `cutile-lab-live-item cutile-lab-sev-${severity(d)}`;
        const head = document.createElement('div');
        head.className = 'cutile-lab-live-head';
        head.textContent = `${severity(d)}${d.code ? `[${d.code}]` : ''}: ${d.message}`;
        item.append(head);
        if (d.help) {
          const help = document.createElement('div');
          help.className = 'cutile-lab-live-help';
          help.textContent = `help: ${d.help}`;
          item.append(help);
        }
        dom.append(item);
      }
      return { dom };
    }
  };
});

function severity(d: ILiveDiagnostic): string {
  const s = (d.severity || 'error').toLowerCase();
  return s === 'warn' ? 'warning' : s;
}

/** Document offsets of a diagnostic's span (1-based lines, 0-based columns). */
export function toRange(doc: Text, d: ILiveDiagnostic): { from: number; to: number } | null {
  const span = d.span;
  if (!span || span.line < 1 || span.line > doc.lines) {
    return null;
  }
  const line = doc.line(span.line);
  const from = line.from + Math.min(Math.max(span.col ?? 0, 0), line.length);
  const endLine = doc.line(Math.min(Math.max(span.end_line ?? span.line, span.line), doc.lines));
  let to =
    span.end_col === null || span.end_col === undefined
      ? endLine.to
      : endLine.from + Math.min(span.end_col, endLine.length);
  if (to <= from) {
    to = Math.min(line.to, from + 1);
  }
  return to > from ? { from, to } : null;
}

/** Show `diagnostics` in `view` (replacing earlier ones). */
export function showDiagnostics(view: EditorView, diagnostics: ILiveDiagnostic[]): void {
  if (!view.state.field(marksField, false)) {
    view.dispatch({ effects: StateEffect.appendConfig.of([marksField, tooltip]) });
  }
  const marks: IMarked[] = [];
  for (const d of diagnostics) {
    const range = toRange(view.state.doc, d);
    if (range) {
      marks.push({ ...range, diagnostic: d });
    }
  }
  view.dispatch({ effects: setMarks.of(marks) });
}

declare global {
  interface Window {
    cutileLabLive?: { sent: number; received: number; last?: ILiveDiagnostic[] };
  }
}

/** One notebook's link to its kernel: a comm, re-opened when the kernel changes. */
class NotebookLink {
  private comm: Kernel.IComm | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private next = 1;
  private pending = new Map<number, { cell: Cell; text: string }>();
  private timers = new Map<Cell, number>();

  constructor(private readonly panel: NotebookPanel) {}

  schedule(cell: Cell): void {
    const timer = this.timers.get(cell);
    if (timer !== undefined) {
      window.clearTimeout(timer);
    }
    this.timers.set(
      cell,
      window.setTimeout(() => {
        this.timers.delete(cell);
        void this.check(cell);
      }, DEBOUNCE_MS)
    );
  }

  private async channel(): Promise<Kernel.IComm | null> {
    const kernel = this.panel.sessionContext.session?.kernel ?? null;
    if (!kernel) {
      return null;
    }
    if (this.comm && this.kernel === kernel && !this.comm.isDisposed) {
      return this.comm;
    }
    this.kernel = kernel;
    this.comm = null;
    try {
      const info = await kernel.requestCommInfo({ target_name: TARGET });
      const comms = info.content.status === 'ok' ? info.content.comms : {};
      // Only once the notebook ran `%load_ext cutile_lab` is the target there; opening a comm
      // to a missing target would log an error in the kernel.
      if (!Object.keys(comms).length && !(await this.hasTarget(kernel))) {
        return null;
      }
      const comm = kernel.createComm(TARGET);
      comm.onMsg = msg => this.receive(msg.content.data as Record<string, unknown>);
      comm.open({});
      this.comm = comm;
      return comm;
    } catch {
      return null;
    }
  }

  /** Whether `%load_ext cutile_lab` has run in the kernel (asked without side effects). */
  private async hasTarget(kernel: Kernel.IKernelConnection): Promise<boolean> {
    const future = kernel.requestExecute(
      {
        code: "__import__('sys').modules.get('cutile_lab.notebook.live') is not None",
        silent: false,
        store_history: false
      },
      true
    );
    let found = false;
    future.onIOPub = msg => {
      if (msg.header.msg_type === 'execute_result') {
        const data = (msg.content as { data?: Record<string, string> }).data ?? {};
        found = (data['text/plain'] ?? '').trim() === 'True';
      }
    };
    await future.done;
    return found;
  }

  private async check(cell: Cell): Promise<void> {
    const text = cell.model.sharedModel.getSource();
    const view = editorView(cell);
    if (!view) {
      return;
    }
    if (!text.trimStart().startsWith('%%tilekernel')) {
      showDiagnostics(view, []);
      return;
    }
    const comm = await this.channel();
    if (!comm) {
      return;
    }
    const id = this.next++;
    this.pending.set(id, { cell, text });
    window.cutileLabLive = window.cutileLabLive ?? { sent: 0, received: 0 };
    window.cutileLabLive.sent += 1;
    comm.send({ id, code: text });
  }

  private receive(data: Record<string, unknown>): void {
    const id = Number(data.id);
    const request = this.pending.get(id);
    this.pending.delete(id);
    if (!request) {
      return;
    }
    const diagnostics = (data.diagnostics ?? []) as ILiveDiagnostic[];
    window.cutileLabLive = window.cutileLabLive ?? { sent: 0, received: 0 };
    window.cutileLabLive.received += 1;
    window.cutileLabLive.last = diagnostics;
    // Typed on since: the next reply will cover the new text.
    if (request.cell.model.sharedModel.getSource() !== request.text) {
      return;
    }
    const view = editorView(request.cell);
    if (view) {
      showDiagnostics(view, diagnostics);
    }
  }
}

function editorView(cell: Cell): EditorView | null {
  const view = (cell.editor as { editor?: unknown } | null)?.editor;
  return view instanceof EditorView ? view : null;
}

/** Watch every code cell of every notebook the tracker knows. */
export function activateLiveDiagnostics(tracker: INotebookTracker): void {
  const links = new WeakMap<NotebookPanel, NotebookLink>();
  const watched = new WeakSet<ICodeCellModel | object>();
  const watch = (panel: NotebookPanel) => {
    if (!links.has(panel)) {
      links.set(panel, new NotebookLink(panel));
    }
    const link = links.get(panel)!;
    const hook = () => {
      for (const cell of panel.content.widgets) {
        if (cell.model.type !== 'code' || watched.has(cell.model)) {
          continue;
        }
        watched.add(cell.model);
        cell.model.contentChanged.connect(() => link.schedule(cell));
      }
    };
    hook();
    panel.content.model?.cells.changed.connect(() => window.setTimeout(hook, 0));
    panel.content.modelChanged.connect(hook);
  };
  tracker.forEach(watch);
  tracker.widgetAdded.connect((_, panel) => watch(panel));
}
