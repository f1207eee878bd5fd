// The simulator's HTTPS front (src/simulator/tls/front.ts) with real clients: the installed
// Chromium (its JA4 must be in the known list, so an upgrade is caught), impit's browser profiles
// (HTTP/2, SETTINGS, pseudo-header order), Node's https and curl (never a browser's JA4), a raw
// TLS client that sends its headers in an order of its own, and plain HTTP (no ClientHello).
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { Impit } from 'impit';
import Koa from 'koa';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_ARGS } from '../../src/scrapers/browser-pages.ts';
import { sourceAddress } from '../../src/simulator/address-limits.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { makeCertificates } from '../../src/simulator/tls/ca.ts';
import { readFirstSettings, SimulatorFront, wireMiddleware } from '../../src/simulator/tls/front.ts';
import { BROWSER_FAMILIES, knownFingerprint, withSni } from '../../src/simulator/tls/known-fingerprints.ts';
import type { ClientHelloFacts, WireFacts } from '../../src/simulator/tls/wire-facts.ts';

const CHROMIUM = '/usr/bin/chromium';
const CURL_INSTALLED = spawnSync('curl', ['--version']).status === 0;

/** A front whose app answers every request with its wire facts and source address, as JSON. */
async function echoFront(options: { helloTimeoutMs?: number } = {}) {
  const app = new Koa();
  app.use(wireMiddleware());
  app.use((ctx) => {
    ctx.body = { wire: ctx.state.wire as WireFacts, source: sourceAddress(ctx) };
  });
  const certs = makeCertificates();
  const front = new SimulatorFront(app.callback(), { certPem: certs.certPem, keyPem: certs.keyPem, ...options });
  const hellos: ClientHelloFacts[] = [];
  front.on('hello', (facts) => hellos.push(facts));
  await front.listen(0, '127.0.0.1');
  const port = (front.server.address() as net.AddressInfo).port;
  return { front, certs, hellos, port, close: async () => (await front.close(), certs.dispose()) };
}
type Echo = Awaited<ReturnType<typeof echoFront>>;
type Answer = { wire: WireFacts; source: string };

const notABrowser = (ja4: string) => BROWSER_FAMILIES.every((family) => !knownFingerprint(family, ja4));

describe('the simulator front', () => {
  let echo: Echo;
  beforeAll(async () => {
    echo = await echoFront({ helloTimeoutMs: 500 });
  });
  afterAll(async () => echo.close());

  it("sees the installed Chromium's ClientHello and finds its JA4 in the known list", async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} missing: apt-get install -y chromium`).toBe(true);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    try {
      const page = await browser.newPage();
      // It does not trust the simulator's CA and refuses the certificate: its hello is read before that.
      await page.goto(`https://localhost:${echo.port}/`).catch(() => undefined);
      const hello = echo.hellos.at(-1);
      expect(hello, 'no ClientHello from Chromium').toBeDefined();
      expect(hello!.alpn).toEqual(['h2', 'http/1.1']);
      expect(
        knownFingerprint('chrome', hello!.ja4),
        `Chromium ${browser.version()} sends ${hello!.ja4}, which src/simulator/tls/known-fingerprints.ts does not list: ` +
          'add it to the chrome family with its source (an upgraded Chromium changed its ClientHello)',
      ).toBe(true);
      // To an IP literal it sends no SNI: the same fingerprint in its 'i' form.
      await page.goto(`https://127.0.0.1:${echo.port}/`).catch(() => undefined);
      expect(withSni(echo.hellos.at(-1)!.ja4)).toBe(hello!.ja4);
    } finally {
      await browser.close();
    }
    // A browser launch on a loaded machine can take tens of seconds.
  }, 90_000);

  it("negotiates HTTP/2 with impit's chrome profile and records its SETTINGS and pseudo-header order", async () => {
    // ignoreTlsErrors: only here, to measure the client; product code trusts the CA instead.
    const impit = new Impit({ browser: 'chrome', ignoreTlsErrors: true });
    const answer = (await (await impit.fetch(`https://localhost:${echo.port}/x`)).json()) as Answer;
    expect(answer.wire.scheme).toBe('https');
    expect(answer.wire.httpVersion).toBe('2.0');
    expect(answer.wire.hello?.alpn[0]).toBe('h2');
    expect(answer.wire.hello?.sni).toBe('localhost');
    expect(answer.wire.h2Settings).toEqual({ enablePush: false, initialWindowSize: 6291456, maxFrameSize: 16384, maxHeaderListSize: 262144 });
    expect(answer.wire.pseudoHeaderOrder).toEqual([':method', ':authority', ':scheme', ':path']);
    expect(answer.wire.headerOrder.slice(0, 3)).toEqual(['sec-ch-ua', 'sec-ch-ua-mobile', 'sec-ch-ua-platform']);
    // The source address survives HTTP/2 and TLS (the address limits read it).
    expect(answer.source).toBe('127.0.0.1');
    // Same cipher suites as Chrome (JA4 b), not the same fingerprint (see docs/simulator.md).
    expect(answer.wire.hello!.ja4.split('_')[1]).toBe('8daaf6152771');
  });

  it("gives Node's https a fingerprint that no browser family lists", async () => {
    const body = await new Promise<string>((resolve, reject) =>
      https
        .get(`https://127.0.0.1:${echo.port}/`, { ca: echo.certs.caPem }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(text));
        })
        .on('error', reject),
    );
    const node = JSON.parse(body) as Answer;
    expect(node.wire.httpVersion).toBe('1.1');
    expect(node.wire.hello?.alpn).toEqual([]);
    expect(notABrowser(node.wire.hello!.ja4)).toBe(true);

  });

  // Skipped, and so reported by vitest, only where curl is not installed.
  it.skipIf(!CURL_INSTALLED)('gives curl a fingerprint that no browser family lists (skipped when curl is absent)', async () => {
    const { stdout } = await promisify(execFile)('curl', ['-s', '--cacert', echo.certs.caFile, `https://localhost:${echo.port}/`]);
    const viaCurl = JSON.parse(stdout) as Answer;
    expect(viaCurl.wire.httpVersion).toBe('2.0');
    expect(notABrowser(viaCurl.wire.hello!.ja4)).toBe(true);
  });

  it('records the header order a raw HTTP/1.1 client sent over TLS', async () => {
    const socket = tls.connect({ host: '127.0.0.1', port: echo.port, ca: echo.certs.caPem, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
    const text = await new Promise<string>((resolve, reject) => {
      let received = '';
      socket.on('secureConnect', () =>
        socket.write('GET /order HTTP/1.1\r\nX-Zeta: 1\r\nAccept: */*\r\nHost: localhost\r\nX-Alpha: 2\r\nUser-Agent: raw\r\nx-zeta: 3\r\nConnection: close\r\n\r\n'),
      );
      socket.on('data', (c: Buffer) => (received += c.toString()));
      socket.on('end', () => resolve(received));
      socket.on('error', reject);
    });
    const answer = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Answer;
    expect(answer.wire.headerOrder).toEqual(['x-zeta', 'accept', 'host', 'x-alpha', 'user-agent', 'x-zeta', 'connection']);
    expect(answer.wire.pseudoHeaderOrder).toEqual([]);
    expect(answer.wire.h2Settings).toBeNull();
    expect(answer.wire.hello?.sni).toBe('localhost');
  });

  it("keeps an HTTP/2 client's pseudo-header and header order as sent (Node's compat rawHeaders), and its SETTINGS as sent", async () => {
    const session = http2.connect(`https://localhost:${echo.port}`, { ca: echo.certs.caPem, settings: { maxConcurrentStreams: 7, headerTableSize: 4096 } });
    try {
      const order = { ':path': '/h2', ':scheme': 'https', ':authority': `localhost:${echo.port}`, ':method': 'GET', 'x-b': '1', accept: '*/*', 'x-a': '2' };
      const text = await new Promise<string>((resolve, reject) => {
        const req = session.request(order);
        let received = '';
        req.on('data', (c: Buffer) => (received += c.toString()));
        req.on('end', () => resolve(received));
        req.on('error', reject);
      });
      const answer = JSON.parse(text) as Answer;
      expect(answer.wire.pseudoHeaderOrder).toEqual([':path', ':scheme', ':authority', ':method']);
      expect(answer.wire.headerOrder).toEqual(['x-b', 'accept', 'x-a']);
      // Node's client sends these settings, defaults included, in its own order; the front keeps what was sent.
      expect(answer.wire.h2Settings).toMatchObject({ headerTableSize: 4096, maxConcurrentStreams: 7 });
      expect(answer.source).toBe('127.0.0.1');
    } finally {
      session.close();
    }
  });

  it('serves plain HTTP on the same port, with no ClientHello', async () => {
    const text = await new Promise<string>((resolve, reject) =>
      http
        .get(`http://127.0.0.1:${echo.port}/plain`, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve(body));
        })
        .on('error', reject),
    );
    const answer = JSON.parse(text) as Answer;
    expect(answer.wire).toMatchObject({ scheme: 'http', hello: null, httpVersion: '1.1', h2Settings: null });
    expect(answer.source).toBe('127.0.0.1');
  });

  it('closes a connection that sends no whole ClientHello in time, or garbage after 0x16', async () => {
    const closedAfter = (bytes: Buffer) =>
      new Promise<number>((resolve) => {
        const started = Date.now();
        const socket = net.connect(echo.port, '127.0.0.1', () => socket.write(bytes));
        socket.on('error', () => undefined);
        socket.on('close', () => resolve(Date.now() - started));
      });
    // Half a hello: closed by the time bound (500 ms here).
    expect(await closedAfter(Buffer.from('160301020001', 'hex'))).toBeGreaterThanOrEqual(400);
    // A handshake record that is no ClientHello: closed at once.
    expect(await closedAfter(Buffer.from('16030100040200000000', 'hex'))).toBeLessThan(400);
  });

  it('forgets every connection once closed, after many', async () => {
    // A front of its own: the shared one still holds the connection of the impit client above,
    // which has no close() and keeps its pool until the garbage collector drops the client.
    const own = await echoFront({ helloTimeoutMs: 500 });
    try {
      await manyConnections(own);
    } finally {
      await own.close();
    }
  }, 60_000);
});

/** 100 HTTPS requests, half over HTTP/2, each on a connection of its own; then none is left. */
async function manyConnections(echo: Echo): Promise<void> {
  const h2Request = async () => {
    const session = http2.connect(`https://localhost:${echo.port}`, { ca: echo.certs.caPem });
    session.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      const req = session.request({ ':path': '/many' });
      req.resume();
      req.on('end', () => resolve());
      req.on('error', reject);
    });
    session.close();
  };
  const h1Request = () =>
    new Promise<void>((resolve, reject) =>
      https
        .get(`https://127.0.0.1:${echo.port}/many`, { ca: echo.certs.caPem, agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve());
        })
        .on('error', reject),
    );
  // The count must have seen the connections, or its 0 below would say nothing.
  let most = 0;
  echo.front.on('hello', () => (most = Math.max(most, echo.front.connections)));
  for (let round = 0; round < 5; round++) await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? h2Request() : h1Request())));
  expect(most).toBeGreaterThan(1);
  await expect.poll(() => echo.front.connections, { timeout: 15_000 }).toBe(0);
  expect(echo.front.pendingHandshakes).toBe(0);
}

describe('readFirstSettings', () => {
  const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
  it('reads the settings in the order sent, waits for a whole frame, and never throws', () => {
    const frame = Buffer.from('00000c040000000000' + '0001' + '00010000' + '0003' + '00000064', 'hex');
    const bytes = Buffer.concat([preface, frame]);
    for (let end = 0; end < bytes.length; end++) expect(readFirstSettings(bytes.subarray(0, end))).toBeUndefined();
    expect(Object.entries(readFirstSettings(bytes)!)).toEqual([
      ['headerTableSize', 65536],
      ['maxConcurrentStreams', 100],
    ]);
    expect(readFirstSettings(Buffer.from('GET / HTTP/1.1\r\n'))).toEqual({});
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.boolean(), (tail, withPreface) => {
        const result = readFirstSettings(withPreface ? Buffer.concat([preface, tail]) : Buffer.from(tail));
        expect(result === undefined || typeof result === 'object').toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('the simulator over HTTPS', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ empty: true });
  });
  afterAll(async () => sim.close());

  it('serves its platforms and control API on the same port over HTTP and HTTPS, and limits by source address under HTTP/2', async () => {
    expect(sim.httpsUrl).toBe(sim.url.replace('http://', 'https://'));
    expect(sim.httpsBaseUrls.pf_03).toBe(`${sim.httpsUrl}/pf_03`);
    expect(sim.httpsMarketplaceUrls.marketplace_a).toBe(`${sim.httpsUrl}/marketplace_a`);
    expect(existsSync(sim.caFile)).toBe(true);
    const impit = new Impit({ browser: 'chrome', ignoreTlsErrors: true });
    sim.limits.platform('pf_03').configure({ requests_per_minute: 1, ban_answer: 'too_many' });
    const first = await impit.fetch(`${sim.httpsBaseUrls.pf_03}/e/none`);
    await first.text();
    const second = await impit.fetch(`${sim.httpsBaseUrls.pf_03}/e/none`);
    await second.text();
    expect(second.status).toBe(429);
    expect(Object.keys(sim.limits.platform('pf_03').stats(Date.now()).addresses)).toEqual(['127.0.0.1']);
    const plain = await fetch(`${sim.url}/_sim/state`);
    expect(plain.status).toBeLessThan(500);
  });

  it('destroys every connection on close, HTTP/2 sessions included, and removes its CA file', async () => {
    const other = await startSimulator({ empty: true });
    const session = http2.connect(other.httpsUrl, { ca: other.caPem });
    await new Promise<void>((resolve, reject) => session.once('connect', () => resolve()).once('error', reject));
    const sessionClosed = new Promise<void>((resolve) => session.once('close', () => resolve()));
    session.on('error', () => undefined);
    const plain = net.connect(other.port, '127.0.0.1');
    plain.on('error', () => undefined);
    await new Promise<void>((resolve) => plain.once('connect', () => resolve()));
    const plainClosed = new Promise<void>((resolve) => plain.once('close', () => resolve()));
    plain.write('GET /_sim/state HTTP/1.1\r\nHost: x\r\n\r\n');
    const started = Date.now();
    await other.close();
    await Promise.all([sessionClosed, plainClosed]);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(existsSync(other.caFile)).toBe(false);
  });
});

describe("impit's trust of the simulator's CA", () => {
  it('is refused without it: verification stays on', async () => {
    const sim = await startSimulator({ empty: true });
    try {
      // SSL_CERT_FILE is read once per process (see docs/simulator.md); this process's does not hold the simulator's CA.
      await expect(new Impit({ browser: 'chrome' }).fetch(`${sim.httpsUrl}/_sim/state`)).rejects.toThrow(/UnknownIssuer|certificate/i);
    } finally {
      await sim.close();
    }
  });
});
