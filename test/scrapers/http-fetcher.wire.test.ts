// What the HTTP fetcher (http-fetcher.ts) puts on the wire (issue 37), against real local servers:
// an HTTPS server (HTTP/2 and HTTP/1.1) whose leaf a test CA signs, trusted through the fetcher's
// caFile (SCRAPE_CA_FILE), never by turning verification off. It speaks HTTP/2 over TLS with
// Chrome's header order, one browser and version in its user agent and client hints, no
// HeadlessChrome; it keeps and sends the cookies every answer sets (redirects included), so a
// server that rotates its bot cookie on every answer and refuses the old one keeps answering, with
// a session and without, directly and through a proxy; and it trusts exactly the system store
// plus the CA file: a leaf of another CA and a self-signed one are refused.
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitPool } from '../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrl } from '../../src/scrapers/egress/proxy-urls.ts';
import { createHttpFetcher, type HttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { caBundle } from '../../src/scrapers/scrape-trust.ts';
import { startLoopbackProxies, type LoopbackProxies } from '../support/loopback-proxies.ts';
import { makeTestCa, selfSignedLeaf } from '../support/test-ca.ts';
import { expectFailure } from './platform-harness.ts';

interface Seen {
  path: string;
  httpVersion: string;
  /** Header names in the order received, lower-case, pseudo-headers left out. */
  order: string[];
  headers: Record<string, string>;
}

const ca = makeTestCa();
const caFile = ca.writeCertFile();
const seen: Seen[] = [];
/** The bot cookie each rotating route expects next, per route. */
const botCookie = new Map<string, string>();
let rotations = 0;
/** Paths of never-answered requests whose stream (HTTP/2) or socket the client closed. */
const letGo = new Set<string>();

function handle(req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse): void {
  const url = new URL(req.url ?? '/', 'https://x');
  const order: string[] = [];
  const headers: Record<string, string> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    if (name.startsWith(':')) continue;
    order.push(name);
    headers[name] = req.rawHeaders[i + 1]!;
  }
  seen.push({ path: url.pathname, httpVersion: req.httpVersion, order, headers });
  // /hang/...: never answered; when the client lets go of the request, its closing is noted.
  if (url.pathname.startsWith('/hang/')) {
    req.on('close', () => letGo.add(url.pathname));
    return;
  }
  // /rot/<name>/...: a bot cookie rotated on every answer, the old value refused at once.
  const rot = /^\/rot\/([\w-]+)\/(page|hop)$/.exec(url.pathname);
  if (rot) {
    const route = rot[1]!;
    const expected = botCookie.get(route);
    const sent = /(?:^|;\s*)bot=([^;]+)/.exec(headers.cookie ?? '')?.[1];
    if (expected !== undefined && sent !== expected) {
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end(`stale bot cookie: sent ${sent ?? 'none'}, expected ${expected}`);
      return;
    }
    const next = `v${++rotations}`;
    botCookie.set(route, next);
    const setCookie = [`bot=${next}; Path=/; HttpOnly`];
    if (rot[2] === 'hop') {
      res.writeHead(302, { location: `/rot/${route}/page`, 'set-cookie': setCookie });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': setCookie });
    res.end(JSON.stringify({ ok: true, cookie: headers.cookie ?? null }));
    return;
  }
  res.writeHead(200, { 'content-type': url.pathname.startsWith('/api') ? 'application/json' : 'text/html' });
  res.end(url.pathname.startsWith('/api') ? '{"ok":true}' : '<p>ok</p>');
}

async function listenTls(options: { key: string; cert: string }): Promise<{ server: http2.Http2SecureServer; url: string }> {
  const server = http2.createSecureServer({ ...options, allowHTTP1: true }, handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `https://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let main: { server: http2.Http2SecureServer; url: string };
let plain: { server: http.Server; url: string };
let fetcher: HttpFetcher;
let proxies: LoopbackProxies;
const SETTINGS = { rpsPerExit: 100, sessionMaxRequests: 1_000, sessionMaxAgeMs: 3_600_000, cooldownMs: 1_000 };

beforeAll(async () => {
  fetcher = createHttpFetcher({ concurrency: 4, timeoutMs: 10_000, caFile });
  main = await listenTls(ca.leaf());
  const server = http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  plain = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  proxies = await startLoopbackProxies(1, { credentials: { username: 'scraper', password: 'wire-test-secret' } });
});
afterAll(async () => {
  fetcher?.close();
  main?.server.close();
  plain?.server.close();
  await proxies?.close();
});

/** The last request the servers saw for `path`. */
function lastSeen(path: string): Seen {
  const found = [...seen].reverse().find((s) => s.path === path);
  if (!found) throw new Error(`no request for ${path}`);
  return found;
}

/** Chrome's order (captured from Chromium 156) of the headers a request of `kind` carries. */
const CHROME_ORDER = {
  html: ['sec-ch-ua', 'sec-ch-ua-mobile', 'sec-ch-ua-platform', 'upgrade-insecure-requests', 'user-agent', 'accept', 'sec-fetch-site', 'sec-fetch-mode', 'sec-fetch-user', 'sec-fetch-dest', 'accept-encoding', 'accept-language', 'priority'],
  json: ['sec-ch-ua-platform', 'user-agent', 'sec-ch-ua', 'sec-ch-ua-mobile', 'accept', 'sec-fetch-site', 'sec-fetch-mode', 'sec-fetch-dest', 'accept-encoding', 'accept-language', 'priority'],
};

/** The user agent, client hints and language say one browser, one version, one system. */
function expectOneBrowser(headers: Record<string, string>): void {
  const ua = headers['user-agent']!;
  expect(ua).not.toMatch(/Headless/i);
  const version = /Chrome\/(\d+)\./.exec(ua)?.[1];
  expect(version).toBe('143');
  expect(headers['sec-ch-ua']).toContain(`"Google Chrome";v="${version}"`);
  expect(headers['sec-ch-ua']).toContain(`"Chromium";v="${version}"`);
  expect(headers['sec-ch-ua-mobile']).toBe('?0');
  const platform = { '"Windows"': 'Windows NT', '"macOS"': 'Macintosh', '"Linux"': 'X11; Linux' }[headers['sec-ch-ua-platform']!];
  expect(platform, headers['sec-ch-ua-platform']).toBeDefined();
  expect(ua).toContain(platform);
  expect(headers['accept-language']).toMatch(/^en/);
}

describe('on the wire', () => {
  it.each(['html', 'json'] as const)('%s: HTTP/2 over TLS, with Chrome’s headers in Chrome’s order, without a session and with one', async (kind) => {
    const pool = new ExitPool('pf_03', [], SETTINGS);
    for (const [mode, session] of [['default', undefined], ['session', pool.session(pool.exits[0]!)]] as const) {
      const path = `/${kind === 'json' ? 'api' : 'page'}/${kind}-${mode}`;
      await fetcher[kind](`${main.url}${path}`, { session });
      const got = lastSeen(path);
      expect(got.httpVersion, mode).toBe('2.0');
      expect(got.order, mode).toEqual(CHROME_ORDER[kind]);
      expectOneBrowser(got.headers);
      if (session) expect(got.headers['user-agent']).toBe(session.headers['user-agent']);
    }
  });

  it('puts a caller’s own headers where Chrome puts a script’s, and a POST’s Origin and length where Chrome does', async () => {
    await fetcher.json(`${main.url}/api/post`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'x-token': 't' }, body: '{}' });
    const got = lastSeen('/api/post');
    const order = got.order.filter((name) => name !== 'content-length');
    expect(order).toEqual(['sec-ch-ua-platform', 'user-agent', 'sec-ch-ua', 'content-type', 'x-token', 'sec-ch-ua-mobile', 'accept', 'origin', 'sec-fetch-site', 'sec-fetch-mode', 'sec-fetch-dest', 'accept-encoding', 'accept-language', 'priority']);
    expect(got.headers.origin).toBe(main.url);
    await fetcher.json(`${main.url}/api/empty-post`, { method: 'POST' });
    expect(lastSeen('/api/empty-post').order[0]).toBe('content-length');
  });

  it('over plain HTTP (HTTP/1.1), leads with Host and Connection as Chrome does', async () => {
    await fetcher.html(`${plain.url}/page/plain`);
    const got = lastSeen('/page/plain');
    expect(got.httpVersion).toBe('1.1');
    expect(got.order).toEqual(['host', 'connection', ...CHROME_ORDER.html]);
    expect(got.headers.connection).toBe('keep-alive');
  });

  it('gives each platform origin its own default identity, kept from one request to the next', async () => {
    await fetcher.html(`${main.url}/page/a1`);
    await fetcher.html(`${main.url}/page/a2`);
    expect(lastSeen('/page/a1').headers['user-agent']).toBe(lastSeen('/page/a2').headers['user-agent']);
    expect(lastSeen('/page/a1').headers['accept-language']).toBe(lastSeen('/page/a2').headers['accept-language']);
  });
});

describe('cookies', () => {
  /** Polls a rotating route 20 times, one in five through a redirect that rotates the cookie too. */
  async function poll20(route: string, init: Parameters<HttpFetcher['json']>[1] = {}): Promise<void> {
    for (let i = 0; i < 20; i++) {
      const page = await fetcher.json(`${main.url}/rot/${route}/${i % 5 === 4 ? 'hop' : 'page'}`, init);
      expect(page.status, `poll ${i}: ${page.body}`).toBe(200);
      if (i > 0) expect((page.data as { cookie: string }).cookie, `poll ${i}`).toMatch(/bot=v\d+/);
    }
  }

  it('keeps a cookie the platform rotates on every answer: 20 polls without a session', async () => {
    await poll20('direct');
  });

  it('keeps it with a session, and sends the jar’s current value over an older one the caller holds', async () => {
    const pool = new ExitPool('pf_03', [], SETTINGS);
    const session = pool.session(pool.exits[0]!);
    await poll20('session', { session });
    // A caller's cookie header (pf_01's browser-made session) with an old bot value: the jar's wins,
    // the caller's other cookies go along.
    const page = await fetcher.json(`${main.url}/rot/session/page`, { session, headers: { cookie: 'bot=v0; token=abc' } });
    expect(page.status, page.body).toBe(200);
    expect((page.data as { cookie: string }).cookie).toMatch(/^token=abc; bot=v\d+$/);
  });

  it('keeps it through a proxy too (a CONNECT tunnel, the same client for the session’s life)', async () => {
    const pool = new ExitPool('pf_03', [parseProxyUrl(proxies.proxies[0]!.url)], SETTINGS);
    const session = pool.session(pool.exits[0]!);
    const tunnels = proxies.proxies[0]!.stats().connect;
    await poll20('proxied', { session });
    const opened = proxies.proxies[0]!.stats().connect - tunnels;
    expect(opened).toBeGreaterThanOrEqual(1);
    // One connection, kept alive: the session's client is kept, not made per request.
    expect(opened).toBeLessThanOrEqual(2);
    expect(lastSeen('/rot/proxied/page').httpVersion).toBe('2.0');
  });
});

describe('abort', () => {
  it('cancels the request in flight: the server sees its stream closed at once, not at the time limit', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 200);
    const failure = await expectFailure(fetcher.json(`${main.url}/hang/h2`, { signal: controller.signal }), 'attempt_timeout');
    expect(failure.message).toMatch(/was aborted/);
    await expect.poll(() => letGo.has('/hang/h2'), { timeout: 2_000 }).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('trust', () => {
  it('trusts the system store plus the CA file, through a private bundle, and leaves the process’s SSL_CERT_FILE as it was', () => {
    expect(process.env.SSL_CERT_FILE ?? '').not.toMatch(/scrape-ca-/);
    const bundle = caBundle(caFile)!;
    expect(bundle).toMatch(/scrape-ca-/);
    const text = fs.readFileSync(bundle, 'utf8');
    expect(text).toContain(ca.cert.trim());
    // The system's CAs come first, as many as its own bundle holds.
    const system = fs.readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8');
    const count = (t: string) => t.split('-----BEGIN CERTIFICATE-----').length - 1;
    expect(count(text)).toBe(count(system) + 1);
    expect(fs.statSync(bundle).mode & 0o077).toBe(0);
  });

  it('refuses a leaf signed by another CA, and a self-signed one, as upstream failures saying why', async () => {
    const other = await listenTls(makeTestCa('Another CA').leaf());
    const self = await listenTls(selfSignedLeaf());
    try {
      const unknown = await expectFailure(fetcher.html(`${other.url}/page/x`), 'upstream');
      expect(unknown.message).toMatch(/CERTIFICATE_VERIFY_FAILED/);
      expect(unknown.proxyFailed).toBe(false);
      await expectFailure(fetcher.json(`${self.url}/api/x`), 'upstream');
      expect(seen.some((s) => s.path === '/page/x' || s.path === '/api/x')).toBe(false);
    } finally {
      other.server.close();
      self.server.close();
    }
  });

  it('gives each fetcher its own CAs: one without the CA file refuses the leaf the other trusts', async () => {
    const bare = createHttpFetcher({ concurrency: 1, timeoutMs: 10_000 });
    try {
      const refused = await expectFailure(bare.html(`${main.url}/page/bare`), 'upstream');
      expect(refused.message).toMatch(/CERTIFICATE_VERIFY_FAILED|certificate/i);
      expect((await fetcher.html(`${main.url}/page/trusted`)).status).toBe(200);
    } finally {
      bare.close();
    }
  });
});
