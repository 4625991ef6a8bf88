/**
 * The extension against the report bundle's JSON Schema
 * (`cutile_lab/notebook/report.schema.json`, which the Python side is tested against too):
 * the TypeScript types name exactly the schema's fields, require nothing the schema does not,
 * and `parseBundle` + `renderReport` read every example the schema carries.
 */
import * as fs from 'fs';
import * as path from 'path';

import {
  IBenchmark,
  IDiagnostic,
  IDiff,
  IDiffSide,
  ILabel,
  ILineDiff,
  IRemark,
  IReportBundle,
  ISource,
  ISpan,
  ITileIR,
  parseBundle
} from '../bundle';
import { renderReport } from '../render';

interface ISchemaObject {
  properties: Record<string, unknown>;
  required?: string[];
}

interface ISchema extends ISchemaObject {
  $defs: Record<string, ISchemaObject>;
  examples: Record<string, unknown>[];
}

const SCHEMA: ISchema = JSON.parse(
  fs.readFileSync(
    path.join(__dirname, '..', '..', '..', 'cutile_lab', 'notebook', 'report.schema.json'),
    'utf-8'
  )
);

/** The keys of `T` that are not optional. */
type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];

/**
 * The keys of `T`, checked complete at compile time (ts-jest type-checks this file): leaving
 * one out, or naming one that `T` does not have, is a type error.
 */
function keysOf<T>() {
  return <const K extends readonly (keyof T)[]>(
    ...keys: K &
      (Exclude<keyof T, K[number]> extends never
        ? unknown
        : { missing: Exclude<keyof T, K[number]> })
  ): string[] => [...keys].map(String);
}

/** [schema object, the TypeScript type's keys, its required keys] for each shape. */
const SHAPES: [string, ISchemaObject, string[], string[]][] = [
  [
    'bundle',
    SCHEMA,
    keysOf<IReportBundle>()(
      'version',
      'kind',
      'kernel',
      'arch',
      'cell_id',
      'status',
      'consts',
      'const_generics',
      'notes',
      'summary',
      'lowered',
      'device',
      'source',
      'diagnostics',
      'tileir',
      'resources',
      'sass',
      'sass_hint',
      'ptx',
      'unchecked',
      'diff',
      'remarks',
      'timings',
      'benchmark'
    ),
    keysOf<Pick<IReportBundle, RequiredKeys<IReportBundle>>>()('version', 'kind')
  ],
  [
    'span',
    SCHEMA.$defs.span,
    keysOf<ISpan>()('line', 'col', 'end_line', 'end_col'),
    keysOf<Pick<ISpan, RequiredKeys<ISpan>>>()('line')
  ],
  [
    'label',
    SCHEMA.$defs.label,
    keysOf<ILabel>()('span', 'message'),
    keysOf<Pick<ILabel, RequiredKeys<ILabel>>>()('span')
  ],
  [
    'diagnostic',
    SCHEMA.$defs.diagnostic,
    keysOf<IDiagnostic>()(
      'code',
      'severity',
      'message',
      'span',
      'labels',
      'help',
      'url',
      'explanation',
      'notes'
    ),
    keysOf<Pick<IDiagnostic, RequiredKeys<IDiagnostic>>>()('message')
  ],
  [
    'source',
    SCHEMA.$defs.source,
    keysOf<ISource>()('filename', 'first_line', 'text'),
    keysOf<Pick<ISource, RequiredKeys<ISource>>>()()
  ],
  [
    'tileir',
    SCHEMA.$defs.tileir,
    keysOf<ITileIR>()('text', 'line_map'),
    keysOf<Pick<ITileIR, RequiredKeys<ITileIR>>>()('text')
  ],
  [
    'remark',
    SCHEMA.$defs.remark,
    keysOf<IRemark>()('line', 'col', 'kind', 'pass', 'name', 'message'),
    keysOf<Pick<IRemark, RequiredKeys<IRemark>>>()('message')
  ],
  [
    'benchmark',
    SCHEMA.$defs.benchmark,
    keysOf<IBenchmark>()('rows', 'plot_png'),
    keysOf<Pick<IBenchmark, RequiredKeys<IBenchmark>>>()()
  ],
  [
    'diff',
    SCHEMA.$defs.diff,
    keysOf<IDiff>()('left', 'right', 'tileir', 'sass'),
    keysOf<Pick<IDiff, RequiredKeys<IDiff>>>()('left', 'right')
  ],
  [
    'diff_side',
    SCHEMA.$defs.diff_side,
    keysOf<IDiffSide>()('label', 'arch', 'consts', 'options', 'resources', 'timings', 'summary'),
    keysOf<Pick<IDiffSide, RequiredKeys<IDiffSide>>>()('label')
  ],
  [
    'line_diff',
    SCHEMA.$defs.line_diff,
    keysOf<ILineDiff>()('rows', 'added', 'removed', 'left_lines', 'right_lines'),
    keysOf<Pick<ILineDiff, RequiredKeys<ILineDiff>>>()('rows', 'added', 'removed')
  ]
];

const sorted = (keys: string[]) => [...keys].sort();

describe('the TypeScript types and the JSON Schema', () => {
  it.each(SHAPES)('%s: the same fields', (_name, schema, keys) => {
    expect(sorted(keys)).toEqual(sorted(Object.keys(schema.properties)));
  });

  it.each(SHAPES)(
    '%s: the type requires only what the schema requires',
    (_name, schema, _keys, required) => {
      for (const key of required) {
        expect(schema.required ?? []).toContain(key);
      }
    }
  );
});

describe("the schema's examples", () => {
  const kinds = SCHEMA.examples.map(e => String(e.kind));

  it('cover every kind of report', () => {
    expect(sorted([...new Set(kinds)])).toEqual(['benchmark', 'compile', 'diff', 'launch']);
  });

  it.each(SCHEMA.examples.map((e, i) => [`${i}: ${e.kind} ${e.status ?? ''}`, e] as const))(
    'parse and render: %s',
    (_title, example) => {
      const bundle = parseBundle(JSON.stringify(example));
      expect(parseBundle(example)).toEqual(bundle);
      const root = renderReport(bundle, { reveal: () => undefined });
      document.body.replaceChildren(root);
      expect(root.dataset.kind).toBe(bundle.kind);
      expect(root.querySelector('.cutile-lab-header')?.textContent).toContain(
        bundle.kernel || bundle.kind
      );
      const tabs = [...root.querySelectorAll<HTMLElement>('.cutile-lab-tab')].map(
        t => t.dataset.tab
      );
      // every section the bundle holds has its tab, and each diagnostic its box
      const expected: [unknown, string][] = [
        [bundle.diagnostics?.length, 'diagnostics'],
        [bundle.tileir, 'tileir'],
        // a compiled kernel always has a SASS tab: its SASS, or why there is none
        [
          bundle.sass ||
            bundle.sass_hint ||
            (bundle.status === 'compiled' && bundle.kind === 'compile'),
          'sass'
        ],
        [bundle.remarks?.length, 'remarks'],
        [bundle.lowered, 'lowered'],
        [bundle.benchmark?.rows?.length, 'benchmark'],
        [bundle.diff?.tileir, 'tileirdiff'],
        [bundle.diff?.sass, 'sassdiff']
      ];
      for (const [present, tab] of expected) {
        expect(tabs.includes(tab)).toBe(Boolean(present));
      }
      expect(root.querySelectorAll('.cutile-lab-diagnostic').length).toBe(
        bundle.diagnostics?.length ?? 0
      );
      for (const d of bundle.diagnostics ?? []) {
        expect(root.textContent).toContain(d.message);
      }
    }
  );

  it('are refused by parseBundle without the fields the schema requires', () => {
    for (const key of SCHEMA.required ?? []) {
      const example = { ...SCHEMA.examples[0] };
      delete example[key];
      expect(() => parseBundle(example)).toThrow(key);
    }
  });
});
