/**
 * A small tokenizer for the textual Tile IR printed by `tileirdisasm`, e.g.
 *
 *   entry @add(%arg0: tile<ptr<f32>>, %arg1: tile<i32>) optimization_hints=<default = {}> {
 *     %tile, %tok = load_view_tko weak %pview[%bid] token = %0 : ... -> tile<128xf32>, token loc(#loc9)
 *     %1 = addf %tile, %tile_8  : tile<128xf32>
 *     return
 *   }
 *   #loc9 = loc("<cell-3>":3:9)
 *
 * `nextToken` is shared by the report's highlighter (`tokenizeLine`) and the CodeMirror
 * stream language (`language.ts`), so both colour the same way. Pure: no DOM, no CodeMirror.
 */

export type TokenKind =
  | 'keyword' // entry, return, loc, weak, for, ...
  | 'op' // the operation of a line: addf, load_view_tko, make_tensor_view, ...
  | 'type' // tile<...>, tensor_view<...>, ptr<f32>, f32, 128xf32, token, ...
  | 'ssa' // %tile_13, %arg0, ^bb0
  | 'symbol' // @add
  | 'attr' // #loc12, #cuda_tile.di_file
  | 'name' // attribute / keyword-argument names: strides=, token =, shape =
  | 'number'
  | 'string'
  | 'comment'
  | 'punct'
  | 'ident' // any other bare word
  | 'space'
  | 'text'; // anything else, one character at a time

export interface IToken {
  kind: TokenKind;
  text: string;
}

/** What the tokenizer remembers while walking one line. */
export interface ILineState {
  /** Only result values (`%a, %b`) seen so far on this line. */
  resultsOnly: boolean;
  /** At least one result value seen. */
  sawResult: boolean;
  /** The next bare word is the line's operation. */
  opNext: boolean;
}

export function lineStart(): ILineState {
  return { resultsOnly: true, sawResult: false, opNext: false };
}

/** The CSS class of a token kind in the report (`cutile-tir-op`, ...). */
export function tokenClass(kind: TokenKind): string {
  return `cutile-tir-${kind}`;
}

export const KEYWORDS = new Set([
  'entry',
  'func',
  'global',
  'module',
  'return',
  'for',
  'if',
  'else',
  'loop',
  'in',
  'to',
  'step',
  'iter_values',
  'yield',
  'continue',
  'break',
  'loc',
  'unknown',
  'weak',
  'relaxed',
  'acquire',
  'release',
  'acq_rel'
]);

const TYPE_NAMES = new Set(['tile', 'tensor_view', 'partition_view', 'ptr', 'token', 'index']);
const ELEMENT_TYPE = /^(?:[fiu]\d+|bf16|tf32|f[48]E\w+)$/;
const ATOMS = new Set(['true', 'false']);

// Tried in order at the current position; each is sticky (`y`).
const RULES: [RegExp, TokenKind][] = [
  [/\s+/y, 'space'],
  [/\/\/.*/y, 'comment'],
  [/"(?:[^"\\]|\\.)*"?/y, 'string'],
  [/[%^][\w.$-]+/y, 'ssa'],
  [/@(?:[\w.$-]+|"(?:[^"\\]|\\.)*"?)/y, 'symbol'],
  [/#[\w.$-]+/y, 'attr'],
  [/0x[0-9a-fA-F]+\b/y, 'number'],
  [/(?:\d+|\?)(?:x(?:\d+|\?))*x[A-Za-z_]\w*/y, 'type'], // 128xf32, ?x64xf16
  [/[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/y, 'number'],
  [/[A-Za-z_][\w.$]*/y, 'ident'],
  [/->|[{}()[\]<>,:=*+\-/?|!]/y, 'punct']
];

/**
 * Read one token of `line` at `pos`, updating `state`. Always advances by at least one
 * character.
 */
export function nextToken(
  line: string,
  pos: number,
  state: ILineState
): { kind: TokenKind; end: number } {
  for (const [re, rawKind] of RULES) {
    re.lastIndex = pos;
    const m = re.exec(line);
    if (!m || m[0].length === 0) {
      continue;
    }
    const end = pos + m[0].length;
    const kind = rawKind === 'ident' ? classifyWord(m[0], line, end, state) : rawKind;
    advance(state, kind, m[0]);
    return { kind, end };
  }
  advance(state, 'text', line[pos]);
  return { kind: 'text', end: pos + 1 };
}

function classifyWord(word: string, line: string, end: number, state: ILineState): TokenKind {
  if (KEYWORDS.has(word)) {
    return 'keyword';
  }
  if (ATOMS.has(word)) {
    return 'number';
  }
  const rest = line.slice(end);
  if (/^\s*=(?!=)/.test(rest)) {
    return 'name';
  }
  if (TYPE_NAMES.has(word) || ELEMENT_TYPE.test(word)) {
    return 'type';
  }
  if (state.opNext || (state.resultsOnly && !state.sawResult)) {
    return 'op';
  }
  return rest.startsWith('<') ? 'name' : 'ident';
}

function advance(state: ILineState, kind: TokenKind, text: string): void {
  if (kind === 'space') {
    return;
  }
  if (state.resultsOnly && kind === 'ssa') {
    state.sawResult = true;
    return;
  }
  if (state.resultsOnly && kind === 'punct' && text === ',') {
    return;
  }
  const assign = state.resultsOnly && state.sawResult && text === '=';
  state.resultsOnly = false;
  state.opNext = assign;
}

/** Tokenize one line of Tile IR. Adjacent tokens of the same kind are merged. */
export function tokenizeLine(line: string): IToken[] {
  const state = lineStart();
  const tokens: IToken[] = [];
  let pos = 0;
  while (pos < line.length) {
    const { kind, end } = nextToken(line, pos, state);
    const text = line.slice(pos, end);
    const last = tokens[tokens.length - 1];
    if (last && last.kind === kind && (kind === 'text' || kind === 'space')) {
      last.text += text;
    } else {
      tokens.push({ kind, text });
    }
    pos = end;
  }
  return tokens;
}

/** Tokenize a whole Tile IR listing, one token list per line. */
export function tokenize(text: string): IToken[][] {
  return text.replace(/\r\n?/g, '\n').split('\n').map(tokenizeLine);
}
