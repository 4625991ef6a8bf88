/**
 * The text panels: the SASS (or why there is none and what to do) and the lowered cuTile
 * Python.
 */
import { Context } from './context';
import { el } from './dom';

export function renderSass(ctx: Context): HTMLElement | null {
  const { sass, sass_hint: hint, status } = ctx.bundle;
  if (sass) {
    return el('pre', 'cutile-lab-pre cutile-lab-sass', sass);
  }
  if (hint || (status === 'compiled' && ctx.bundle.kind === 'compile')) {
    // A compiled kernel always has a SASS tab: the SASS, or why there is none and what to do.
    return el('div', 'cutile-lab-note cutile-lab-sass-hint', hint || 'No SASS in this report.');
  }
  return null;
}

export function renderLowered(ctx: Context): HTMLElement | null {
  const lowered = ctx.bundle.lowered;
  return lowered ? el('pre', 'cutile-lab-pre cutile-lab-lowered', lowered) : null;
}
