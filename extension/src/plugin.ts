/**
 * The regular JupyterLab plugin (`extension` entry point): registers Tile IR with the
 * editor languages and the document registry, and hands the notebook tracker to the
 * report renderer so that it can jump to cells.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { INotebookTracker } from '@jupyterlab/notebook';

import { TILEIR_MIME, tileIRLanguage } from './language';
import { activateLiveDiagnostics } from './live';
import { setNotebookTracker } from './navigate';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'cutile-lab:plugin',
  description:
    'Tile IR highlighting, report-to-cell navigation and live diagnostics for cutile_lab.',
  autoStart: true,
  optional: [INotebookTracker, IEditorLanguageRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker | null,
    languages: IEditorLanguageRegistry | null
  ) => {
    setNotebookTracker(tracker);
    if (tracker) {
      activateLiveDiagnostics(tracker);
    }
    if (languages) {
      languages.addLanguage(tileIRLanguage);
    }
    app.docRegistry.addFileType({
      name: 'tileir',
      displayName: 'Tile IR',
      extensions: ['.tileir'],
      mimeTypes: [TILEIR_MIME],
      fileFormat: 'text',
      contentType: 'file'
    });
  }
};

export default plugin;
