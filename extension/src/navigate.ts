/**
 * Jump from a report to the notebook cell that produced it: activate the cell, put the
 * cursor on a line, scroll it into view and highlight it.
 *
 * The cell is the one whose DOM node contains the report (the renderer lives in the
 * cell's output area); failing that, the cell whose id is the bundle's `cell_id`. The
 * notebook tracker is handed over by the regular plugin (`plugin.ts`), because a MIME
 * extension has no access to application services. Both entry points are served from the
 * same module container, so they share this module's state.
 */
import { StateEffect, StateField } from '@codemirror/state';
import { Decoration, DecorationSet, EditorView } from '@codemirror/view';
import type { Cell } from '@jupyterlab/cells';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

/** A position in a notebook cell, 0-based like JupyterLab's `CodeEditor.IPosition`. */
export interface ICellPosition {
  line: number;
  column: number;
}

/** What the last successful reveal did; also kept on `window` for browser tests. */
export interface IReveal extends ICellPosition {
  cellIndex: number;
  cellId: string;
  lineText: string;
}

declare global {
  interface Window {
    cutileLabLastReveal?: IReveal;
  }
}

let tracker: INotebookTracker | null = null;

export function setNotebookTracker(value: INotebookTracker | null): void {
  tracker = value;
}

interface ICellHit {
  panel: NotebookPanel;
  index: number;
  cell: Cell;
}

function findCell(origin: HTMLElement, cellId?: string | null): ICellHit | null {
  if (!tracker) {
    return null;
  }
  const panels: NotebookPanel[] = [];
  tracker.forEach(panel => panels.push(panel));
  // Prefer the notebook in focus when looking a cell up by id (a notebook can be open twice).
  const current = tracker.currentWidget;
  panels.sort((a, b) => Number(b === current) - Number(a === current));
  const byNode = (cell: Cell) => cell.node.contains(origin);
  const byId = (cell: Cell) => !!cellId && cell.model.id === cellId;
  for (const match of [byNode, byId]) {
    for (const panel of panels) {
      const index = panel.content.widgets.findIndex(match);
      if (index >= 0) {
        return { panel, index, cell: panel.content.widgets[index] };
      }
    }
  }
  return null;
}

/**
 * Move the cursor of the cell that holds `origin` to `target` (a position, or a function
 * of the cell's text giving one), scroll to it and highlight the line. Resolves to `null`
 * when no such cell (or editor) can be found.
 */
export async function revealInCell(
  origin: HTMLElement,
  target: ICellPosition | ((cellText: string) => ICellPosition),
  cellId?: string | null
): Promise<IReveal | null> {
  const hit = findCell(origin, cellId);
  if (!hit) {
    return null;
  }
  const { panel, index, cell } = hit;
  const notebook = panel.content;
  notebook.activeCellIndex = index;
  cell.inputHidden = false;
  await cell.ready;
  const editor = cell.editor;
  if (!editor) {
    return null;
  }
  const position =
    typeof target === 'function' ? target(editor.model.sharedModel.getSource()) : target;
  const line = clamp(position.line, 0, editor.lineCount - 1);
  const lineText = editor.getLine(line) ?? '';
  const column = clamp(position.column, 0, lineText.length);
  notebook.mode = 'edit';
  editor.setCursorPosition({ line, column });
  editor.focus();
  editor.revealPosition({ line, column });
  const view = (editor as { editor?: unknown }).editor;
  if (view instanceof EditorView) {
    highlightLine(view, line);
  }
  const reveal: IReveal = {
    cellIndex: index,
    cellId: cell.model.id,
    line,
    column,
    lineText
  };
  window.cutileLabLastReveal = reveal;
  return reveal;
}

function clamp(value: number, low: number, high: number): number {
  return Math.max(low, Math.min(high, Number.isFinite(value) ? value : low));
}

// --- the highlighted line: a CodeMirror line decoration, cleared on the next edit ---

export const REVEAL_LINE_CLASS = 'cutile-lab-reveal-line';

const setHighlight = StateEffect.define<number | null>();
const lineDecoration = Decoration.line({ class: REVEAL_LINE_CLASS });

const highlightField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(decorations, tr) {
    decorations = tr.docChanged ? Decoration.none : decorations;
    for (const effect of tr.effects) {
      if (effect.is(setHighlight)) {
        const line = effect.value;
        decorations =
          line === null || line > tr.state.doc.lines
            ? Decoration.none
            : Decoration.set([lineDecoration.range(tr.state.doc.line(line).from)]);
      }
    }
    return decorations;
  },
  provide: field => EditorView.decorations.from(field)
});

let highlighted: EditorView | null = null;

/** Highlight 0-based `line` of `view`, clearing any earlier highlight. */
export function highlightLine(view: EditorView, line: number): void {
  if (
    highlighted &&
    highlighted !== view &&
    highlighted.dom.isConnected &&
    highlighted.state.field(highlightField, false)
  ) {
    highlighted.dispatch({ effects: setHighlight.of(null) });
  }
  if (!view.state.field(highlightField, false)) {
    view.dispatch({ effects: StateEffect.appendConfig.of(highlightField) });
  }
  view.dispatch({ effects: setHighlight.of(line + 1) });
  highlighted = view;
}
