import * as fs from 'fs';
import * as path from 'path';

import { IReportBundle, parseBundle } from '../bundle';

/** The sample bundle shared with the browser test (tests/browser/sample_report.json). */
export function loadSample(): IReportBundle {
  const file = path.join(__dirname, '..', '..', '..', 'tests', 'browser', 'sample_report.json');
  return parseBundle(fs.readFileSync(file, 'utf-8'));
}
