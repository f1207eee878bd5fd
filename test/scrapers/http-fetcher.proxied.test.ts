// The HTTP fetcher (http-fetcher.ts) with sessions through real proxies (issue 27): proxy-chain
// servers whose outgoing connections come from 127.0.0.2 and 127.0.0.3 (test/support/
// loopback-proxies.ts) in front of a local server that records who asked and how. Each request of
// a session leaves through its proxy with its header set and its cookies, and never another's;
// every block signal (403, 429 with Retry-After, each family's 200 challenge page, HTML and JSON)
// is a `blocked` failure the platform answered, never a page; compressed answers are read; and
// the proxies' credentials appear in no failure and no log line.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudflareChallenge, datadomeBlock, perimeterxBlock } from '../../src/scrapers/block-pages.ts';
import { ExitPool } from '../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrls } from '../../src/scrapers/egress/proxy-urls.ts';
import { createHttpFetcher, type HttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { startLoopbackProxies, type LoopbackProxies } from '../support/loopback-proxies.ts';
import { failureOf } from './platform-harness.ts';

const PASSWORD = 'pr0xy-s3cret-pw';

interface Seen {
  address: string;
  path: string;
  headers: http.IncomingHttpHeaders;
}

let server: http.Server;
let base: string;
let proxies: LoopbackProxies;
let fetcher: HttpFetcher;
let pool: ExitPool;
const seen: Seen[] = [];

function answer(req: http.IncomingMessage, res: http.ServerResponse): void {
  const path = new URL(req.url!, 'http://x').pathname;
  seen.push({ address: req.socket.remoteAddress!.replace(/^::ffff:/, ''), path, headers: req.headers });
  switch (path) {
    case '/set-cookie':
      res.setHeader('set-cookie', [`sid=${req.socket.remoteAddress}-${seen.length}; Path=/`, 'theme=dark; Path=/']);
      return void res.end('<html><body>hello</body></html>');
    case '/cf':
      res.setHeader('cf-mitigated', 'challenge');
      res.setHeader('content-type', 'text/html');
      return void res.end('<!doctype html><html><head><title>Just a moment...</title></head><body></body></html>');
    case '/cf-title':
      return void res.end('<!doctype html><html><head><title>Just a moment...</title></head><body></body></html>');
    case '/px':
      res.setHeader('content-type', 'application/json');
      return void res.end(JSON.stringify({ appId: 'PXsim0001', blockScript: '/px/captcha.js', vid: 'v' }));
    case '/px-html':
      return void res.end('<html><head><title>Access to this page has been denied</title></head><body><div id="px-captcha"></div></body></html>');
    case '/dd':
      res.setHeader('content-type', 'application/json');
      res.setHeader('x-datadome', 'protected');
      return void res.end(JSON.stringify({ url: 'https://geo.captcha-delivery.com/captcha/?initialCid=sim' }));
    case '/403':
      res.statusCode = 403;
      return void res.end('denied');
    case '/429':
      res.statusCode = 429;
      res.setHeader('retry-after', '7');
      return void res.end('slow down');
    case '/gzip':
      res.setHeader('content-encoding', 'gzip');
      return void res.end(zlib.gzipSync(JSON.stringify({ ok: 'gzip' })));
    case '/br':
      res.setHeader('content-encoding', 'br');
      return void res.end(zlib.brotliCompressSync(JSON.stringify({ ok: 'br' })));
    default:
      res.setHeader('content-type', 'application/json');
      return void res.end(JSON.stringify({ ok: true }));
  }
}

beforeAll(async () => {
  server = http.createServer(answer);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxies = await startLoopbackProxies(2, { credentials: { username: 'scraper', password: PASSWORD } });
  pool = new ExitPool('pf_03', parseProxyUrls(proxies.setting).pf_03, { rpsPerExit: 5, sessionMaxRequests: 1_000, sessionMaxAgeMs: 600_000, cooldownMs: 60_000 });
  fetcher = createHttpFetcher({ concurrency: 8, timeoutMs: 5_000 });
});

afterAll(async () => {
  fetcher?.close();
  pool?.close();
  await proxies?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

const last = () => seen.at(-1)!;


describe('a session', () => {
  it("leaves through its proxy with its own headers and cookies, and never another session's", async () => {
    const [a, b] = pool.exits;
    const sa = pool.session(a!);
    const sb = pool.session(b!);
    await fetcher.html(`${base}/set-cookie`, { session: sa });
    expect(last()).toMatchObject({ address: '127.0.0.2', path: '/set-cookie' });
    expect(last().headers['user-agent']).toBe(sa.headers['user-agent']);
    expect(last().headers['sec-ch-ua']).toBe(sa.headers['sec-ch-ua']);
    expect(last().headers['sec-fetch-mode']).toBe('navigate');
    expect(last().headers.cookie).toBeUndefined();
    // The proxy's credentials went to the proxy, not to the platform.
    expect(last().headers['proxy-authorization']).toBeUndefined();
    expect(last().headers['proxy-connection']).toBeUndefined();

    await fetcher.json(`${base}/api`, { session: sa });
    expect(last().address).toBe('127.0.0.2');
    expect(last().headers.cookie).toMatch(/^sid=[^;]+; theme=dark$/);
    expect(last().headers['user-agent']).toBe(sa.headers['user-agent']);
    expect(last().headers.accept).toBe('application/json, text/plain, */*');
    expect(last().headers['sec-fetch-mode']).toBe('cors');
    const cookieOfA = last().headers.cookie;

    await fetcher.json(`${base}/api`, { session: sb });
    expect(last().address).toBe('127.0.0.3');
    expect(last().headers['user-agent']).toBe(sb.headers['user-agent']);
    expect(last().headers.cookie).toBeUndefined();
    await fetcher.html(`${base}/set-cookie`, { session: sb });
    await fetcher.html(`${base}/api`, { session: sb });
    expect(last().headers.cookie).not.toBe(cookieOfA);
    expect(last().headers.cookie).toMatch(/^sid=[^;]+; theme=dark$/);

    // Every request as the server saw it: each session's from its own address, with its own headers.
    const ours = seen.slice(-5);
    expect(ours.map((r) => r.address)).toEqual(['127.0.0.2', '127.0.0.2', '127.0.0.3', '127.0.0.3', '127.0.0.3']);
    ours.forEach((r, i) => expect(r.headers['user-agent']).toBe((i < 2 ? sa : sb).headers['user-agent']));
    ours.forEach((r, i) => expect(r.headers['sec-ch-ua-platform']).toBe((i < 2 ? sa : sb).headers['sec-ch-ua-platform']));
    expect(sa.requests).toBe(2);
    expect(a!.requests).toBe(2);
  });

  it('goes out from this machine as the origin\'s default client when there is none', async () => {
    await fetcher.json(`${base}/api`);
    expect(last().address).toBe('127.0.0.1');
    expect(last().headers['user-agent']).toMatch(/Chrome\/143\./);
  });

  it('reads gzip and brotli answers', async () => {
    const s = pool.session(pool.exits[0]!);
    expect((await fetcher.json(`${base}/gzip`, { session: s })).data).toEqual({ ok: 'gzip' });
    expect((await fetcher.json(`${base}/br`, { session: s })).data).toEqual({ ok: 'br' });
    expect(last().headers['accept-encoding']).toBe('gzip, deflate, br, zstd');
  });
});

describe('block signals', () => {
  it.each([
    ['html', '/cf', cloudflareChallenge, /Cloudflare challenge page \(cf-mitigated/],
    ['html', '/cf-title', cloudflareChallenge, /Just a moment/],
    ['json', '/cf', cloudflareChallenge, /Cloudflare/],
    ['json', '/px', perimeterxBlock, /PerimeterX block/],
    ['html', '/px-html', perimeterxBlock, /PerimeterX CAPTCHA page/],
    ['json', '/dd', datadomeBlock, /DataDome/],
  ] as const)('a %s answer of %s (status 200) is blocked, not a page', async (kind, path, rule, message) => {
    const session = pool.session(pool.exits[1]!);
    const failure = await failureOf(fetcher[kind](`${base}${path}`, { session, blockPage: rule }));
    expect(failure.kind).toBe('blocked');
    expect(failure.refusedByPlatform).toBe(true);
    expect(failure.message).toMatch(message);
  });

  it("passes a page another family's rule does not match", async () => {
    const page = await fetcher.json(`${base}/px`, { blockPage: cloudflareChallenge });
    expect(page.status).toBe(200);
  });

  it('403 and 429 block through a proxy, with Retry-After', async () => {
    const session = pool.session(pool.exits[0]!);
    const forbidden = await failureOf(fetcher.html(`${base}/403`, { session }));
    expect(forbidden).toMatchObject({ kind: 'blocked', refusedByPlatform: true, retryAfterMs: null });
    const limited = await failureOf(fetcher.json(`${base}/429`, { session }));
    expect(limited).toMatchObject({ kind: 'blocked', refusedByPlatform: true });
    expect(limited.retryAfterMs).toBeGreaterThan(6_000);
    expect(limited.retryAfterMs).toBeLessThanOrEqual(7_000);
  });
});

describe('credentials', () => {
  it('a proxy that refuses them is a failure of ours, and no message or log line holds the password', async () => {
    const wrong = parseProxyUrls(proxies.proxies[0]!.url.replace(encodeURIComponent(PASSWORD), 'not-the-password')).pf_03;
    const badPool = new ExitPool('pf_03', wrong, { rpsPerExit: 5, sessionMaxRequests: 10, sessionMaxAgeMs: 60_000, cooldownMs: 1_000 });
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
    try {
      const refused = await failureOf(fetcher.html(`${base}/api`, { session: badPool.session(badPool.exits[0]!) }));
      expect(refused.kind).toBe('upstream');
      expect(refused.message).toMatch(/407/);
      log.warn({ err: refused, exit: badPool.exits[0]!.label }, 'poll failed');
      // A proxy that is down.
      const down = parseProxyUrls(`http://scraper:${PASSWORD}@127.0.0.1:1`).pf_03;
      const downPool = new ExitPool('pf_03', down, { rpsPerExit: 5, sessionMaxRequests: 10, sessionMaxAgeMs: 60_000, cooldownMs: 1_000 });
      const unreachable = await failureOf(fetcher.html(`${base}/api`, { session: downPool.session(downPool.exits[0]!) }));
      expect(unreachable.kind).toBe('upstream');
      log.warn({ err: unreachable, exit: downPool.exits[0]!.label, stats: downPool.stats() }, 'poll failed');
      downPool.close();
      for (const failure of [refused, unreachable]) {
        expect(`${failure.message} ${String(failure.stack)} ${JSON.stringify(failure)}`).not.toContain(PASSWORD);
      }
      expect(lines.length).toBe(2);
      for (const line of lines) expect(line).not.toContain(PASSWORD);
      // The session ids and stats name the proxy by label.
      expect(JSON.stringify(pool.stats())).not.toContain(PASSWORD);
      expect(pool.session(pool.exits[0]!).id).not.toContain(PASSWORD);
    } finally {
      badPool.close();
    }
  });
});
