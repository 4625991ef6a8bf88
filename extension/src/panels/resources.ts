/**
 * The resources panel: registers, shared/local memory, spills, ... with units.
 */
import { Context } from './context';
import { el, formatBytes, humanize } from './dom';

export const RESOURCE_LABELS: Record<string, [string, 'bytes' | 'count']> = {
  registers: ['Registers / thread', 'count'],
  shared_bytes: ['Shared memory / block', 'bytes'],
  local_bytes: ['Local memory / thread', 'bytes'],
  max_threads_per_block: ['Max threads / block', 'count'],
  spill_stores: ['Spill stores', 'bytes'],
  spill_loads: ['Spill loads', 'bytes'],
  reserved_shared_bytes: ['Reserved shared memory', 'bytes'],
  stack_bytes: ['Stack / thread', 'bytes'],
  max_registers: ['Max registers', 'count'],
  code_bytes: ['Code size', 'bytes'],
  barriers: ['Barriers', 'count']
};

export function renderResources(ctx: Context): HTMLElement | null {
  const resources = ctx.bundle.resources;
  const entries = Object.entries(resources ?? {}).filter(([, v]) => v !== null && v !== undefined);
  if (!entries.length) {
    return null;
  }
  const table = el('table', 'cutile-lab-table cutile-lab-resources');
  for (const [key, value] of entries) {
    const [label, unit] = RESOURCE_LABELS[key] ?? [humanize(key), 'count'];
    const tr = table.insertRow();
    tr.dataset.key = key;
    tr.append(el('th', '', label));
    const shown =
      typeof value === 'number' && unit === 'bytes' ? formatBytes(value) : String(value);
    const td = el('td', '', shown);
    if (key.startsWith('spill') && typeof value === 'number' && value > 0) {
      td.classList.add('cutile-lab-warn');
    }
    tr.append(td);
  }
  return table;
}
