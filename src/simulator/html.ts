// Markup for the simulated platforms' pages: escaping for text and attributes, JSON that is safe
// inside a <script> element, and a bare page skeleton. Event and section names are free text set
// through the control API, so everything that reaches a page goes through here.

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text or attribute value (quoted with double quotes) in HTML. */
export function esc(value: string | number): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** JSON to embed in <script type="application/json">: nothing in it can close the element. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

export function page(options: { lang: string; title: string; head?: string; body: string }): string {
  return [
    '<!doctype html>',
    `<html lang="${esc(options.lang)}">`,
    `<head><meta charset="utf-8"><title>${esc(options.title)}</title>${options.head ?? ''}</head>`,
    `<body>${options.body}</body>`,
    '</html>',
  ].join('\n');
}
