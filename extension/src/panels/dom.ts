/**
 * Small DOM and formatting helpers shared by the report's panels.
 */

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text?: string,
  title?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  if (title) {
    node.title = title;
  }
  return node;
}

export function clamp(value: number, low: number, high: number): number {
  return Math.max(low, Math.min(high, value));
}

export function indentOf(text: string): number {
  return text.length - text.trimStart().length;
}

export function humanize(key: string): string {
  const s = key.replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Only http(s) links (and relative ones) are followed. */
export function safeUrl(url: string | null | undefined): string | null {
  if (!url) {
    return null;
  }
  try {
    const parsed = new URL(url, 'https://relative.invalid/');
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? url : null;
  } catch {
    return null;
  }
}

export function formatSeconds(s: number): string {
  if (s < 1e-3) {
    return `${(s * 1e6).toFixed(0)} µs`;
  }
  if (s < 1) {
    return `${(s * 1e3).toFixed(s < 0.01 ? 2 : 1)} ms`;
  }
  return `${s.toFixed(2)} s`;
}

export function formatBytes(n: number): string {
  if (n < 1024) {
    return `${n} B`;
  }
  const kib = n / 1024;
  return kib < 1024 ? `${+kib.toFixed(1)} KiB` : `${+(kib / 1024).toFixed(1)} MiB`;
}

export function formatValue(v: unknown): string {
  if (typeof v === 'number') {
    return Number.isInteger(v) ? String(v) : String(+v.toFixed(Math.abs(v) < 10 ? 2 : 1));
  }
  return v === null || v === undefined ? '' : String(v);
}
