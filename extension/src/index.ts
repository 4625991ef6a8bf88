/**
 * The MIME renderer for cutile_lab reports (`application/vnd.cutile-lab.report+json`).
 *
 * This is the package's `mimeExtension` entry point; `plugin.ts` (the `extension` entry
 * point) adds Tile IR highlighting to the editors and gives the renderer the notebook
 * tracker it needs to jump to source lines.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { IReportBundle, MIME_TYPE, parseBundle, sourceOffset } from './bundle';
import { revealInCell } from './navigate';
import { renderReport } from './render';

export { MIME_TYPE } from './bundle';

export class ReportRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly _mimeType: string) {
    super();
    this.addClass('cutile-lab-renderer');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    let bundle: IReportBundle;
    try {
      bundle = parseBundle(model.data[this._mimeType]);
    } catch (error) {
      const box = document.createElement('div');
      box.className = 'cutile-lab-report cutile-lab-invalid';
      box.textContent = `cutile_lab: cannot show this report: ${(error as Error).message}`;
      this.node.replaceChildren(box);
      return Promise.resolve();
    }
    const reveal = (line: number, col: number) => {
      const source = bundle.source;
      const where = (cellText: string) => ({
        line: sourceOffset(cellText, source?.text, source?.first_line) + line - 1,
        column: col
      });
      void revealInCell(this.node, where, bundle.cell_id).then(done => {
        if (!done) {
          this._flash(line);
        }
      });
    };
    this.node.replaceChildren(renderReport(bundle, { reveal }));
    return Promise.resolve();
  }

  /** Without a notebook to jump to, point at the line in the report's own source view. */
  private _flash(line: number): void {
    const row = this.node.querySelector<HTMLElement>(
      `.cutile-lab-source-pane .cutile-lab-row[data-src-line="${line}"]`
    );
    if (row) {
      row.classList.remove('cutile-lab-flash');
      void row.offsetWidth; // restart the animation
      row.classList.add('cutile-lab-flash');
    }
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 0,
  createRenderer: options => new ReportRenderer(options.mimeType)
};

const extension: IRenderMime.IExtension = {
  id: 'cutile-lab:report',
  description: 'Renders cutile_lab compile and benchmark reports.',
  rendererFactory,
  rank: 0,
  dataType: 'json'
};

export default extension;
