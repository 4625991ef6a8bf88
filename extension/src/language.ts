/**
 * Tile IR as a CodeMirror 6 stream language, registered with JupyterLab's editor
 * languages (`text/x-tileir`, `*.tileir`) so that Tile IR files and ```` ```tileir ````
 * fences in Markdown are highlighted with the theme's own colours.
 */
import {
  HighlightStyle,
  LanguageSupport,
  StreamLanguage,
  StreamParser,
  syntaxHighlighting
} from '@codemirror/language';
import { tags } from '@lezer/highlight';
import type { IEditorLanguage } from '@jupyterlab/codemirror';

import { ILineState, TokenKind, lineStart, nextToken } from './tileir';

export const TILEIR_MIME = 'text/x-tileir';

/** Token kinds → CodeMirror's legacy style names (mapped to highlight tags). */
const STYLES: Record<TokenKind, string | null> = {
  keyword: 'keyword',
  op: 'def',
  type: 'type',
  ssa: 'variable-2',
  symbol: 'def',
  attr: 'meta',
  name: 'attribute',
  number: 'number',
  string: 'string',
  comment: 'comment',
  punct: 'punctuation',
  ident: 'variable',
  space: null,
  text: null
};

export const tileIRStreamParser: StreamParser<ILineState> = {
  name: 'tileir',
  startState: lineStart,
  copyState: state => ({ ...state }),
  token(stream, state) {
    if (stream.sol()) {
      Object.assign(state, lineStart());
    }
    const { kind, end } = nextToken(stream.string, stream.pos, state);
    stream.pos = end;
    return STYLES[kind];
  },
  languageData: { commentTokens: { line: '//' } }
};

/** JupyterLab's editor theme leaves type names plain; Tile IR is mostly types. */
const typeColours = HighlightStyle.define([
  { tag: tags.typeName, color: 'var(--jp-mirror-editor-variable-3-color)' }
]);

export function tileIRLanguageSupport(): LanguageSupport {
  return new LanguageSupport(StreamLanguage.define(tileIRStreamParser), [
    syntaxHighlighting(typeColours)
  ]);
}

export const tileIRLanguage: IEditorLanguage = {
  name: 'tileir',
  displayName: 'Tile IR',
  alias: ['tile-ir', 'cuda_tile'],
  mime: TILEIR_MIME,
  extensions: ['tileir'],
  load: async () => tileIRLanguageSupport()
};
