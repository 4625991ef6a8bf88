import { StringStream } from '@codemirror/language';

import { tileIRStreamParser } from '../language';
import { IToken, tokenize, tokenizeLine } from '../tileir';
import { loadSample } from './sample';

/** `kind:text` for every token that is not whitespace. */
function kinds(line: string): string[] {
  return tokenizeLine(line)
    .filter(t => t.kind !== 'space')
    .map((t: IToken) => `${t.kind}:${t.text}`);
}

describe('tokenizeLine', () => {
  it('splits an operation with results, operands and a tile type', () => {
    expect(kinds('  %1 = addf %tile, %tile_8  : tile<128xf32>')).toEqual([
      'ssa:%1',
      'punct:=',
      'op:addf',
      'ssa:%tile',
      'punct:,',
      'ssa:%tile_8',
      'punct::',
      'type:tile',
      'punct:<',
      'type:128xf32',
      'punct:>'
    ]);
  });

  it('knows entry signatures, symbols, pointer types and attribute names', () => {
    expect(kinds('entry @add(%arg0: tile<ptr<f32>>) optimization_hints=<default = {}> {')).toEqual([
      'keyword:entry',
      'symbol:@add',
      'punct:(',
      'ssa:%arg0',
      'punct::',
      'type:tile',
      'punct:<',
      'type:ptr',
      'punct:<',
      'type:f32',
      'punct:>',
      'punct:>',
      'punct:)',
      'name:optimization_hints',
      'punct:=',
      'punct:<',
      'name:default',
      'punct:=',
      'punct:{',
      'punct:}',
      'punct:>',
      'punct:{'
    ]);
  });

  it('handles multi-result ops, keywords inside ops and tensor views', () => {
    const k = kinds(
      '%tile, %tok = load_view_tko weak %pview[%bid] token = %0 : partition_view<tile=(128), tensor_view<?xf32, strides=[?]>>, tile<i32> -> tile<128xf32>, token loc(#loc9)'
    );
    expect(k.slice(0, 5)).toEqual([
      'ssa:%tile',
      'punct:,',
      'ssa:%tok',
      'punct:=',
      'op:load_view_tko'
    ]);
    expect(k).toContain('keyword:weak');
    expect(k).toContain('name:token');
    expect(k).toContain('type:partition_view');
    expect(k).toContain('name:tile');
    expect(k).toContain('number:128');
    expect(k).toContain('type:tensor_view');
    expect(k).toContain('type:?xf32');
    expect(k).toContain('name:strides');
    expect(k).toContain('punct:->');
    expect(k).toContain('type:token');
    expect(k.slice(-4)).toEqual(['keyword:loc', 'punct:(', 'attr:#loc9', 'punct:)']);
  });

  it('treats a line that starts with a bare word as that operation', () => {
    expect(kinds('  return')).toEqual(['keyword:return']);
    expect(kinds('  print_tko "x"')).toEqual(['op:print_tko', 'string:"x"']);
    expect(kinds('%0 = make_token : token')).toEqual([
      'ssa:%0',
      'punct:=',
      'op:make_token',
      'punct::',
      'type:token'
    ]);
  });

  it('reads attributes, location lines, numbers and comments', () => {
    expect(kinds('%c = constant <i32: 1> : tile<i32>')).toEqual([
      'ssa:%c',
      'punct:=',
      'op:constant',
      'punct:<',
      'type:i32',
      'punct::',
      'number:1',
      'punct:>',
      'punct::',
      'type:tile',
      'punct:<',
      'type:i32',
      'punct:>'
    ]);
    expect(kinds('#loc1 = loc("<cell-3>":7:10)')).toEqual([
      'attr:#loc1',
      'punct:=',
      'keyword:loc',
      'punct:(',
      'string:"<cell-3>"',
      'punct::',
      'number:7',
      'punct::',
      'number:10',
      'punct:)'
    ]);
    expect(kinds('%f = constant <f32: -1.5e3> // note')).toContain('number:-1.5e3');
    expect(kinds('%h = constant <f32: 0x3F800000>')).toContain('number:0x3F800000');
    expect(kinds('// a comment')).toEqual(['comment:// a comment']);
    expect(kinds('%p = assume bounded<0, ?>, %a')).toContain('name:bounded');
  });

  it('is lossless on real tileirdisasm output', () => {
    const text = loadSample().tileir!.text;
    const lines = tokenize(text);
    expect(lines.map(l => l.map(t => t.text).join('')).join('\n')).toBe(text);
    const ops = lines
      .flat()
      .filter(t => t.kind === 'op')
      .map(t => t.text);
    expect(ops).toEqual(
      expect.arrayContaining([
        'make_token',
        'assume',
        'make_tensor_view',
        'load_view_tko',
        'addf',
        'store_view_tko'
      ])
    );
    expect(lines.flat().filter(t => t.kind === 'text')).toEqual([]);
  });
});

describe('tileIRStreamParser', () => {
  it('gives CodeMirror style names line by line', () => {
    const state = tileIRStreamParser.startState!(2);
    const styles: string[] = [];
    for (const line of ['%1 = addf %a, %b : tile<4xf32>', 'return']) {
      const stream = new StringStream(line, 2, 2);
      while (!stream.eol()) {
        const start = stream.pos;
        const style = tileIRStreamParser.token(stream, state);
        expect(stream.pos).toBeGreaterThan(start);
        if (style) {
          styles.push(`${style}:${line.slice(start, stream.pos)}`);
        }
      }
    }
    expect(styles).toEqual([
      'variable-2:%1',
      'punctuation:=',
      'def:addf',
      'variable-2:%a',
      'punctuation:,',
      'variable-2:%b',
      'punctuation::',
      'type:tile',
      'punctuation:<',
      'type:4xf32',
      'punctuation:>',
      'keyword:return'
    ]);
  });
});
