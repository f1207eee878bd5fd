// GET /docs and GET /docs/stream (issue 17): the rendered reference of /openapi.json and
// /asyncapi.json, opened in headless chromium as a reader would open it. Every operation of each
// document is on its page; the browser asks nothing of any origin but the gateway's (the
// renderers ship with the service: users may be offline) and sends no key; a full-page
// screenshot of each page is left in test-output/ and its path printed.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page, type Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumFix, chromiumFound } from '../../src/scrapers/chromium.ts';
import { CHROMIUM_ARGS } from '../../src/scrapers/browser-pages.ts';
import { PROJECT_ROOT, startTestGateway, testConfig, type TestGateway } from '../support/harness.ts';
import { clientFor, gatewayCode, GATEWAY_ENV, type Client } from '../support/gateway-helpers.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;

const OUTPUT_DIR = join(PROJECT_ROOT, 'test-output');
/** Rendering 26 operations takes a few seconds; far longer on a loaded two-core machine. */
const RENDER_TIMEOUT_MS = 45_000;

let gw: TestGateway;
let api: Client;
let browser: Browser;
let context: BrowserContext;
/** Every request the browser made, and every one that was kept from leaving loopback. */
const requests: Request[] = [];
const aborted: string[] = [];

beforeAll(async () => {
  gw = await startTestGateway({ env: GATEWAY_ENV });
  api = clientFor(gw.url);
  const { CHROMIUM_PATH } = testConfig();
  if (!(await chromiumFound(CHROMIUM_PATH))) throw new Error(chromiumFix(CHROMIUM_PATH));
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
  context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  context.on('request', (r) => requests.push(r));
  // Belt and braces with the page's CSP: whatever the page asks for elsewhere never leaves.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (sameOrigin(url)) return route.continue();
    aborted.push(url);
    return route.abort('blockedbyclient');
  });
  mkdirSync(OUTPUT_DIR, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

/** The gateway's own origin: blob: URLs the page makes itself carry it too. */
function sameOrigin(url: string): boolean {
  return url.startsWith('data:') || new URL(url).origin === new URL(gw.url).origin;
}

interface Opened {
  page: Page;
  requests: Request[];
  errors: string[];
}

/** Opens a docs page in a fresh tab, recording its traffic and its script errors. */
async function open(path: string): Promise<Opened> {
  const page = await context.newPage();
  const errors: string[] = [];
  const sent: Request[] = [];
  page.on('request', (r) => sent.push(r));
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
  });
  const res = await page.goto(gw.url + path);
  expect(res?.status(), path).toBe(200);
  return { page, requests: sent, errors };
}

/** What the tab sent anywhere but the gateway, or with a key, or answered with an error. */
async function trafficProblems(opened: Opened): Promise<string[]> {
  const problems: string[] = [];
  for (const r of opened.requests) {
    if (!sameOrigin(r.url())) problems.push(`left the gateway: ${r.url()}`);
    if ('apikey' in (await r.allHeaders())) problems.push(`sent a key: ${r.url()}`);
    const res = await r.response();
    if (res && res.status() >= 400) problems.push(`${res.status()}: ${r.url()}`);
  }
  return problems;
}

/**
 * Saves a full-page screenshot in test-output/ and prints where. It is for a person to look at,
 * not a verdict (the page's checks are the asserts): one that cannot be taken in time is said and
 * left out. A full run on two cores at a load average of 8-10 passed Playwright's default 30 s
 * on the long operations page.
 */
async function screenshot(page: Page, name: string): Promise<void> {
  const path = join(OUTPUT_DIR, name);
  try {
    await page.screenshot({ path, fullPage: true, timeout: 30_000 });
    process.stdout.write(`docs page screenshot: ${path}\n`);
  } catch (err) {
    process.stdout.write(`docs page screenshot not taken (${(err instanceof Error ? err.message : String(err)).split('\n')[0]})\n`);
  }
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

interface HttpOperation {
  id: string;
  method: string;
  path: string;
  summary: string;
}

function httpOperations(d: Doc): HttpOperation[] {
  return Object.entries(d.paths as Record<string, Doc>).flatMap(([path, item]) =>
    Object.entries(item as Record<string, Doc>)
      .filter(([m]) => HTTP_METHODS.includes(m))
      .map(([method, op]) => ({ id: op.operationId, method, path, summary: op.summary })),
  );
}

/**
 * The operations Redoc did not render, each with what is missing. Redoc gives each operation a
 * section with the id `operation/<operationId>` (its deep link); the section must show the
 * summary, the method and the path.
 */
function unrenderedHttp(page: Page, ops: HttpOperation[]): Promise<string[]> {
  return page.evaluate((list) => {
    const missing: string[] = [];
    for (const op of list) {
      const label = `${op.method.toUpperCase()} ${op.path} (${op.id})`;
      const section = document.getElementById(`operation/${op.id}`);
      if (!section) {
        missing.push(`${label}: no section`);
        continue;
      }
      const text = section.innerText;
      for (const want of [op.summary, op.path]) if (!text.includes(want)) missing.push(`${label}: no "${want}"`);
      if (!text.toLowerCase().includes(op.method)) missing.push(`${label}: no method`);
    }
    return missing;
  }, ops);
}

interface StreamPart {
  /** The element id the AsyncAPI component gives it. */
  id: string;
  label: string;
  texts: string[];
}

/** The refs' last segment: `#/channels/notifications/messages/hello` is message `hello`. */
const refName = (ref: string) => ref.split('/').pop()!;

function streamParts(d: Doc): StreamPart[] {
  const messages = d.components.messages as Record<string, Doc>;
  const operations = Object.entries(d.operations as Record<string, Doc>).map(([id, op]) => ({
    id: `operation-${op.action}-${id}`,
    label: `operation ${id}`,
    texts: [id, d.channels[refName(op.channel.$ref)].address, ...op.messages.map((m: Doc) => messages[refName(m.$ref)].title)],
  }));
  const described = Object.entries(messages).map(([name, m]) => ({ id: `message-${name}`, label: `message ${name}`, texts: [m.title, m.summary] }));
  return [...operations, ...described];
}

function unrenderedStream(page: Page, parts: StreamPart[]): Promise<string[]> {
  return page.evaluate((list) => {
    const missing: string[] = [];
    for (const part of list) {
      const el = document.getElementById(part.id);
      if (!el) {
        missing.push(`${part.label}: no #${part.id}`);
        continue;
      }
      for (const want of part.texts) if (!el.innerText.includes(want)) missing.push(`${part.label}: no "${want}"`);
    }
    return missing;
  }, parts);
}

describe('GET /docs in headless chromium', () => {
  it(
    'renders every operation of /openapi.json, from the gateway alone and with no key',
    async () => {
      const doc = await api('GET', '/openapi.json');
      expect(doc.status).toBe(200);
      const ops = httpOperations(doc.body);
      expect(ops.length).toBeGreaterThan(20);

      const opened = await open('/docs');
      // Rendered once every section is there; a missing one is reported below, by name.
      await opened.page
        .waitForFunction((n) => document.querySelectorAll('[id^="operation/"]').length >= n, ops.length, { timeout: RENDER_TIMEOUT_MS })
        .catch(() => {});
      expect(await unrenderedHttp(opened.page, ops)).toEqual([]);
      // The check is not a rubber stamp: an operation the page does not have is reported.
      const absent = { id: 'notAnOperation', method: 'get', path: '/not/an/operation', summary: 'not rendered' };
      expect(await unrenderedHttp(opened.page, [absent])).toEqual(['GET /not/an/operation (notAnOperation): no section']);

      await screenshot(opened.page, 'docs-page.png');
      // The renderer came from the gateway, and nothing else was asked of anyone.
      expect(opened.requests.map((r) => new URL(r.url()).pathname)).toEqual(expect.arrayContaining(['/docs', '/openapi.json']));
      expect(opened.requests.some((r) => /^\/docs\/assets\/redoc\.standalone\.[0-9a-f]+\.js$/.test(new URL(r.url()).pathname))).toBe(true);
      expect(await trafficProblems(opened)).toEqual([]);
      expect(opened.errors).toEqual([]);
      expect(await opened.page.locator('nav a[href="/docs/stream"]').count()).toBe(1);
      await opened.page.close();
    },
    RENDER_TIMEOUT_MS * 2,
  );

  it(
    'renders the operation and every message of /asyncapi.json at /docs/stream, linked from /docs',
    async () => {
      const doc = await api('GET', '/asyncapi.json');
      expect(doc.status).toBe(200);
      const parts = streamParts(doc.body);
      expect(parts.map((p) => p.label)).toEqual(expect.arrayContaining(['operation receiveAccountStream', 'message hello', 'message notification']));

      const opened = await open('/docs/stream');
      await opened.page
        .waitForFunction((ids) => ids.every((id) => document.getElementById(id)), parts.map((p) => p.id), { timeout: RENDER_TIMEOUT_MS })
        .catch(() => {});
      expect(await unrenderedStream(opened.page, parts)).toEqual([]);
      const absent = { id: 'message-nope', label: 'message nope', texts: ['Nope'] };
      expect(await unrenderedStream(opened.page, [absent])).toEqual(['message nope: no #message-nope']);

      await screenshot(opened.page, 'docs-stream.png');
      expect(opened.requests.map((r) => new URL(r.url()).pathname)).toEqual(expect.arrayContaining(['/docs/stream', '/asyncapi.json']));
      expect(await trafficProblems(opened)).toEqual([]);
      expect(opened.errors).toEqual([]);
      await opened.page.close();
    },
    RENDER_TIMEOUT_MS * 2,
  );

  it('kept nothing from leaving loopback, because nothing tried', () => {
    expect(aborted).toEqual([]);
    expect(requests.length).toBeGreaterThan(0);
  });
});

describe('GET /docs over HTTP', () => {
  it('serves the page with a CSP of this origin only, uncounted (no key, no RateLimit headers)', async () => {
    for (const path of ['/docs', '/docs/stream']) {
      const r = await api('GET', path);
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(r.headers.get('cache-control')).toBe('no-cache');
      expect(r.headers.get('ratelimit')).toBeNull();
      const csp = r.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("connect-src 'self'");
      // Only 'self' and keywords: no host, no scheme-wide source but blob: and data:.
      for (const source of csp.split(/[; ]+/).filter((s) => !/^[a-z-]+$/.test(s))) expect(source, `${path}: ${csp}`).toMatch(/^('[a-z-]+'|blob:|data:)$/);
      // eval only where the AsyncAPI parser needs it.
      expect(csp.includes("'unsafe-eval'"), path).toBe(path === '/docs/stream');
    }
  });

  it('serves the renderer from the gateway: named by content, cached for good, gzipped when asked', async () => {
    const page = (await api('GET', '/docs')).text;
    const assets = [...page.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (const path of assets) {
      const r = await api('GET', path, { headers: { 'accept-encoding': 'identity' } });
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-type')).toMatch(path.endsWith('.js') ? /^text\/javascript; charset=utf-8$/ : /^text\/css; charset=utf-8$/);
      expect(r.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(r.headers.get('content-encoding')).toBeNull();
      const zipped = await fetch(gw.url + path, { headers: { 'accept-encoding': 'gzip' } });
      expect(zipped.headers.get('content-encoding')).toBe('gzip');
      // fetch decompresses: the same bytes either way.
      expect(await zipped.text()).toBe(r.text);
    }
  });

  it('answers 404 not_found like any unknown path or wrong method (spec 7.1)', async () => {
    const cases: [string, string][] = [
      ['HEAD', '/docs'],
      ['POST', '/docs'],
      ['GET', '/docs/'],
      ['GET', '/docs/assets/redoc.standalone.js'],
      ['GET', '/docs/assets/redoc.standalone.000000000000.js'],
      ['HEAD', '/asyncapi.json'],
    ];
    for (const [method, path] of cases) {
      const r = await api(method, path);
      expect(r.status, `${method} ${path}`).toBe(404);
      if (method !== 'HEAD') expect(gatewayCode(r), `${method} ${path}`).toBe('not_found');
    }
  });
});
