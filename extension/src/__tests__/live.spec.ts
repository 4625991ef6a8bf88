import { EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';

import { showDiagnostics, toRange } from '../live';

const CELL = '%%tilekernel\ndef f(z, x):\n    t = load_tile_like(x, z)\n    x.store(t)';

describe('live diagnostics', () => {
  it('turns cell spans (1-based lines, 0-based columns) into document ranges', () => {
    const doc = EditorState.create({ doc: CELL }).doc;
    const range = toRange(doc, {
      message: 'm',
      span: { line: 4, col: 4, end_line: 4, end_col: 14 }
    });
    expect(doc.sliceString(range!.from, range!.to)).toBe('x.store(t)');
    const whole = toRange(doc, { message: 'm', span: { line: 3, col: 4, end_col: null } });
    expect(doc.sliceString(whole!.from, whole!.to)).toBe('t = load_tile_like(x, z)');
    expect(toRange(doc, { message: 'm', span: { line: 9 } })).toBeNull();
    expect(toRange(doc, { message: 'm' })).toBeNull();
  });

  it('underlines the span in the editor and clears it on the next edit', () => {
    const parent = document.createElement('div');
    document.body.append(parent);
    const view = new EditorView({ doc: CELL, parent });
    showDiagnostics(view, [
      {
        code: 'TL010',
        severity: 'error',
        message: 'store into shared `x`',
        help: 'h',
        span: { line: 4, col: 4, end_line: 4, end_col: 14 }
      }
    ]);
    const marked = parent.querySelector('.cutile-lab-live-error');
    expect(marked?.textContent).toBe('x.store(t)');
    expect(marked?.getAttribute('data-code')).toBe('TL010');
    view.dispatch({ changes: { from: 0, insert: '#' } });
    expect(parent.querySelector('.cutile-lab-live-error')).toBeNull();
    view.destroy();
  });
});
