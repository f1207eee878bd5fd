// GET /docs: the API reference for a person in a browser, rendered from GET /openapi.json by
// Redoc, and GET /docs/stream, the stream's reference rendered from GET /asyncapi.json by
// AsyncAPI's React component. Public like the documents themselves (no key, never metered).
// Both renderers are npm dependencies served from this process, never from a CDN: the page has
// to work offline and behind a firewall, and its Content-Security-Policy allows only this origin.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Middleware } from 'koa';
import type { RequestState } from './request-state.ts';

const DOCS_PATH = '/docs';
const STREAM_DOCS_PATH = '/docs/stream';
const ASSETS_PREFIX = '/docs/assets/';

/**
 * Everything loads from this origin only. styled-components (Redoc) and React's style attributes
 * need inline styles; Redoc runs its search index in a worker it creates from a blob; data: is
 * the Redoc logo's stand-in (withoutRemoteLogo) and the page's empty icon (no /favicon.ico
 * request, which would be a 404). Neither renderer loads a font.
 */
function pageCsp(scriptSrc: string): string {
  return [
    "default-src 'none'",
    `script-src ${scriptSrc}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    'worker-src blob:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const CSP = {
  openapi: pageCsp("'self'"),
  // The AsyncAPI parser validates the document in the browser with ajv, which compiles each
  // JSON Schema into a function: without 'unsafe-eval' the bundle fails as it loads.
  asyncapi: pageCsp("'self' 'unsafe-eval'"),
};

/** Starts the renderer the page names: the page itself stays free of inline script (CSP). */
const START_SCRIPT = `(function () {
  var el = document.getElementById('reference');
  var spec = el.getAttribute('data-spec');
  if (el.getAttribute('data-renderer') === 'redoc') {
    Redoc.init(spec, { expandResponses: '200,201', jsonSampleExpandLevel: 3, hideHostname: true }, el);
  } else {
    AsyncApiStandalone.render({ schema: { url: spec, requestOptions: {} }, config: { show: { sidebar: true } } }, el);
  }
})();
`;

const NAV_CSS = `body { margin: 0; font-family: system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif; }
.docs-nav { display: flex; gap: 1.5rem; align-items: center; padding: 0.6rem 1.2rem; background: #1f2933; font-size: 0.95rem; }
.docs-nav a { color: #e4e7eb; text-decoration: none; }
.docs-nav a[aria-current='page'] { color: #fff; font-weight: 600; border-bottom: 2px solid #7fb3ff; }
.docs-nav .docs-raw { margin-left: auto; display: flex; gap: 1rem; }
`;

interface AssetSource {
  name: string;
  ext: 'js' | 'css';
  /** A file of an installed package, or the text itself. */
  file?: string;
  text?: string;
  /** Applied to the file as it is read. */
  patch?: (text: string) => string;
}

/**
 * Redoc's side menu ends with a Redocly logo that it loads from cdn.redoc.ly, whatever the
 * options. The page must not reach out (the CSP would block it, but a blocked load is still an
 * attempt and an error in the console): the image gets an empty data: URL, fails to decode, and
 * Redoc's own onError handler removes it, leaving the text link. Exactly one occurrence, so a
 * Redoc release that moves it fails loudly here rather than quietly calling out.
 */
const REDOC_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
function withoutRemoteLogo(bundle: string): string {
  const found = bundle.split(REDOC_LOGO).length - 1;
  if (found !== 1) throw new Error(`redoc.standalone.js names ${REDOC_LOGO} ${found} times, not once: check what this Redoc version loads`);
  return bundle.replace(REDOC_LOGO, 'data:,');
}

const require = createRequire(import.meta.url);

const SOURCES = {
  redoc: { name: 'redoc.standalone', ext: 'js', file: 'redoc/bundles/redoc.standalone.js', patch: withoutRemoteLogo },
  asyncapi: { name: 'asyncapi.standalone', ext: 'js', file: '@asyncapi/react-component/browser/standalone/index.js' },
  asyncapiCss: { name: 'asyncapi', ext: 'css', file: '@asyncapi/react-component/styles/default.min.css' },
  start: { name: 'start', ext: 'js', text: START_SCRIPT },
  nav: { name: 'nav', ext: 'css', text: NAV_CSS },
} satisfies Record<string, AssetSource>;

interface Asset {
  /** Named by a hash of its content, so a browser may keep it for good. */
  path: string;
  type: string;
  body: Buffer;
  gzipped: Buffer;
}

type Assets = Record<keyof typeof SOURCES, Asset>;

interface Loaded {
  assets: Map<string, Asset>;
  pages: Map<string, { html: string; csp: string }>;
}

const CONTENT_TYPES = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' } as const;

async function loadAsset(source: AssetSource): Promise<Asset> {
  let body = source.file ? await readFile(require.resolve(source.file)) : Buffer.from(source.text!);
  if (source.patch) body = Buffer.from(source.patch(body.toString('utf8')));
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  return {
    path: `${ASSETS_PREFIX}${source.name}.${hash}.${source.ext}`,
    type: CONTENT_TYPES[source.ext],
    body,
    gzipped: await promisify(gzip)(body),
  };
}

function page(a: Assets, current: 'openapi' | 'asyncapi'): string {
  const openapi = current === 'openapi';
  const here = (kind: typeof current) => (kind === current ? ' aria-current="page"' : '');
  const styles = openapi ? [a.nav] : [a.nav, a.asyncapiCss];
  const scripts = openapi ? [a.redoc, a.start] : [a.asyncapi, a.start];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${openapi ? 'HTTP API' : 'Real-time stream'}: Ticket market service reference</title>
${styles.map((s) => `<link rel="stylesheet" href="${s.path}">`).join('\n')}
</head>
<body>
<nav class="docs-nav">
<a href="${DOCS_PATH}"${here('openapi')}>HTTP API</a>
<a href="${STREAM_DOCS_PATH}"${here('asyncapi')}>Real-time stream</a>
<span class="docs-raw"><a href="/openapi.json">openapi.json</a><a href="/asyncapi.json">asyncapi.json</a></span>
</nav>
<main id="reference" data-renderer="${openapi ? 'redoc' : 'asyncapi'}" data-spec="${openapi ? '/openapi.json' : '/asyncapi.json'}"></main>
${scripts.map((s) => `<script src="${s.path}"></script>`).join('\n')}
</body>
</html>
`;
}

async function load(): Promise<Loaded> {
  const entries = await Promise.all(Object.entries(SOURCES).map(async ([key, source]) => [key, await loadAsset(source)] as const));
  const assets = Object.fromEntries(entries) as Assets;
  return {
    assets: new Map(Object.values(assets).map((a) => [a.path, a])),
    pages: new Map([
      [DOCS_PATH, { html: page(assets, 'openapi'), csp: CSP.openapi }],
      [STREAM_DOCS_PATH, { html: page(assets, 'asyncapi'), csp: CSP.asyncapi }],
    ]),
  };
}

/**
 * The docs pages and their assets. The renderers (about 4 MB) are read and compressed on the
 * first request under /docs, not when the gateway is built: most gateways (every test's and
 * bench's) never serve one.
 */
export function docsPage(): Middleware<RequestState> {
  let loading: Promise<Loaded> | undefined;
  const loaded = () =>
    (loading ??= load().catch((err: unknown) => {
      // A failed read (a transient I/O error) is tried again by the next request, not remembered.
      loading = undefined;
      throw err;
    }));

  return async (ctx, next) => {
    // GET only: any other method, HEAD included, is 404 not_found as on every route (spec 7.1).
    if (ctx.method !== 'GET' || !(ctx.path === DOCS_PATH || ctx.path.startsWith(`${DOCS_PATH}/`))) return next();
    const { pages, assets } = await loaded();
    const docs = pages.get(ctx.path);
    if (docs) {
      ctx.state.operationId = 'docs';
      ctx.type = 'text/html; charset=utf-8';
      // The page names the current assets' hashes: always asked for again.
      ctx.set('Cache-Control', 'no-cache');
      ctx.set('Content-Security-Policy', docs.csp);
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.body = docs.html;
      return;
    }
    const asset = assets.get(ctx.path);
    if (!asset) return next();
    ctx.state.operationId = 'docs_asset';
    ctx.type = asset.type;
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.vary('Accept-Encoding');
    if (ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = asset.gzipped;
    } else {
      ctx.body = asset.body;
    }
  };
}
