// What real clients send, measured on loopback, and the walls' HTTP/2 and header rules held against
// it (src/simulator/walls/http2-check.ts, header-check.ts): real Chromium (/usr/bin/chromium, its
// navigations and fetch() calls) and impit 0.14.5's browser profiles, against a Node HTTP/2 secure
// server that records each request's pseudo-header and header order, and a raw TLS server that
// reads the client's first HTTP/2 frames: the SETTINGS exactly as sent (Node's remoteSettings fills
// in the defaults of those not sent, so a value equal to its default proves nothing there).
// Self-signed certificates and ignored certificate errors only here: this test measures clients.
import { generateKeyPairSync } from 'node:crypto';
import { createSecureServer, type Http2SecureServer, type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { Impit } from 'impit';
import forge from 'node-forge';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_ARGS } from '../../src/scrapers/browser-pages.ts';
import type { WireFacts } from '../../src/simulator/tls/wire-facts.ts';
import { browserClaim } from '../../src/simulator/walls/browser-claim.ts';
import { checkHeaders, orderBroken, ORDER_RULES } from '../../src/simulator/walls/header-check.ts';
import { checkHttp2 } from '../../src/simulator/walls/http2-check.ts';

interface Seen {
  path: string;
  httpVersion: string;
  settings: Record<string, unknown> | null;
  pseudo: string[];
  headers: string[];
  values: Record<string, string>;
}

function selfSigned(): { key: string; cert: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  const attrs = [{ name: 'commonName', value: '127.0.0.1' }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }]);
  const key = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  cert.sign(forge.pki.privateKeyFromPem(key), forge.md.sha256.create());
  return { key, cert: forge.pki.certificateToPem(cert) };
}

const PAGE = '<!doctype html><html><head><title>m</title></head><body>measure</body></html>';

let server: Http2SecureServer;
let base: string;
/** A TLS server that reads the client's first HTTP/2 frames raw: SETTINGS exactly as sent (Node fills in defaults). */
let raw: TlsServer;
let rawBase: string;
const rawSettings: { settings: [number, number][]; windowUpdate: number | null }[] = [];

/** The SETTINGS entries and the connection WINDOW_UPDATE after the client preface, or null until they are all in. */
function readFirstFrames(data: Buffer): { settings: [number, number][]; windowUpdate: number | null } | null {
  let at = 24;
  const out: { settings: [number, number][]; windowUpdate: number | null } = { settings: [], windowUpdate: null };
  let sawSettings = false;
  while (at + 9 <= data.length) {
    const length = data.readUIntBE(at, 3);
    const type = data[at + 3]!;
    if (at + 9 + length > data.length) return null;
    const payload = data.subarray(at + 9, at + 9 + length);
    if (type === 4 && !sawSettings) {
      sawSettings = true;
      for (let i = 0; i + 6 <= payload.length; i += 6) out.settings.push([payload.readUInt16BE(i), payload.readUInt32BE(i + 2)]);
    } else if (type === 8 && out.windowUpdate === null) {
      out.windowUpdate = payload.readUInt32BE(0) & 0x7fffffff;
    } else if (type === 1) {
      return out;
    }
    at += 9 + length;
  }
  return sawSettings && out.windowUpdate !== null ? out : null;
}
let browser: Browser | undefined;
const seen: Seen[] = [];
const sessions = new Set<ServerHttp2Session>();

beforeAll(async () => {
  server = createSecureServer({ ...selfSigned(), allowHTTP1: true });
  server.on('session', (session: ServerHttp2Session) => sessions.add(session.on('close', () => sessions.delete(session))));
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, _flags: number, rawHeaders: string[]) => {
    const names = rawHeaders.filter((_, i) => i % 2 === 0);
    const values: Record<string, string> = {};
    for (let i = 0; i < rawHeaders.length; i += 2) values[rawHeaders[i]!] = rawHeaders[i + 1]!;
    seen.push({
      path: String(headers[':path']),
      httpVersion: '2.0',
      settings: { ...stream.session!.remoteSettings },
      pseudo: names.filter((n) => n.startsWith(':')),
      headers: names.filter((n) => !n.startsWith(':')),
      values,
    });
    const json = String(headers[':path']).startsWith('/api');
    stream.respond({ ':status': 200, 'content-type': json ? 'application/json' : 'text/html' });
    stream.end(json ? '{"ok":true}' : PAGE);
  });
  server.on('request', (req, res) => {
    if (req.httpVersion === '2.0') return;
    seen.push({ path: req.url ?? '', httpVersion: req.httpVersion, settings: null, pseudo: [], headers: req.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase()), values: {} });
    res.end(PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  raw = createTlsServer({ ...selfSigned(), ALPNProtocols: ['h2'] }, (socket) => {
    let data = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const frames = readFirstFrames(data);
      if (frames) {
        rawSettings.push(frames);
        socket.destroy();
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  rawBase = `https://127.0.0.1:${(raw.address() as AddressInfo).port}`;
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await browser?.close();
  // Clients keep their connections open: end them, or close() waits for them.
  for (const session of sessions) session.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await new Promise<void>((resolve) => raw.close(() => resolve()));
});

/** Node's names of the SETTINGS ids, for the raw frames. */
const SETTING_NAMES: Record<number, string> = { 1: 'headerTableSize', 2: 'enablePush', 3: 'maxConcurrentStreams', 4: 'initialWindowSize', 5: 'maxFrameSize', 6: 'maxHeaderListSize', 8: 'enableConnectProtocol', 9: 'noRfc7540Priorities' };

/** The facts a front would record for `request`, with the SETTINGS the connection really sent. */
function factsOf(request: Seen, raw: [number, number][]): WireFacts {
  const h2Settings = Object.fromEntries(raw.map(([id, value]) => [SETTING_NAMES[id] ?? String(id), id === 2 || id === 8 ? value === 1 : value]));
  return { scheme: 'https', hello: { ja4: '', ciphers: [], extensions: [], alpn: ['h2', 'http/1.1'], sni: null, signatureAlgorithms: [], tlsVersion: 0x0304 }, httpVersion: request.httpVersion, h2Settings, pseudoHeaderOrder: request.pseudo, headerOrder: request.headers };
}

describe('measured on this machine', () => {
  it("real Chromium: Chrome's SETTINGS and pseudo-header order, and the header rules hold for its navigations and fetch() calls", async () => {
    // --ignore-certificate-errors only here: this test measures, it trusts nothing it reads.
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: [...CHROMIUM_ARGS, '--ignore-certificate-errors'], headless: true });
    const page = await browser.newPage();
    await page.goto(`${base}/page`);
    await page.evaluate(async () => {
      await (await fetch('/api/get')).text();
      await (await fetch('/api/post', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).text();
      await (await fetch('/api/accept', { headers: { accept: 'application/json' } })).text();
    });
    const requests = seen.splice(0).filter((r) => r.path !== '/favicon.ico');
    await page.goto(`${rawBase}/`).catch(() => undefined);
    const [raw] = rawSettings.splice(0);
    // Akamai's HTTP/2 fingerprint of Chrome: 1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p.
    expect(raw).toEqual({ settings: [[1, 65536], [2, 0], [4, 6291456], [6, 262144]], windowUpdate: 15663105 });
    expect(requests.map((r) => r.path)).toEqual(['/page', '/api/get', '/api/post', '/api/accept']);
    for (const request of requests) {
      expect(request.httpVersion).toBe('2.0');
      // Node's view agrees for the four Chrome sends.
      expect(request.settings).toMatchObject({ headerTableSize: 65536, enablePush: false, initialWindowSize: 6291456, maxHeaderListSize: 262144 });
      const ua = request.values['user-agent']!;
      expect(ua).toContain('HeadlessChrome/');
      const claim = browserClaim(ua);
      expect(claim).toMatchObject({ family: 'chrome', os: 'Linux' });
      expect(checkHttp2(factsOf(request, raw!.settings), claim), request.path).toBeNull();
      // Headless as the browser is: refused for that alone, and for nothing else.
      expect(checkHeaders(request.values, request.headers, claim)).toBe('HeadlessChrome in the user agent or sec-ch-ua');
      const headed = { ...request.values, 'user-agent': ua.replace('HeadlessChrome/', 'Chrome/') };
      expect(checkHeaders(headed, request.headers, claim), `${request.path}: ${request.headers.join(' ')}`).toBeNull();
    }
    // The hints sit before the user agent on a navigation and around it in a fetch(): no rule on them.
    expect(requests[0]!.headers.slice(0, 5)).toEqual(['sec-ch-ua', 'sec-ch-ua-mobile', 'sec-ch-ua-platform', 'upgrade-insecure-requests', 'user-agent']);
    expect(requests[1]!.headers.slice(0, 3)).toEqual(['sec-ch-ua-platform', 'user-agent', 'sec-ch-ua']);
    // Chromium retries a connection the raw server dropped: gone before impit is measured.
    await browser.close();
    browser = undefined;
  }, 60_000);

  it("impit's Chrome profiles: Chrome's order and pseudo-headers, but no HEADER_TABLE_SIZE in SETTINGS (refused by the HTTP/2 check)", async () => {
    for (const profile of ['chrome', 'chrome142', 'chrome151'] as const) {
      const impit = new Impit({ browser: profile, ignoreTlsErrors: true });
      await (await impit.fetch(`${base}/page`)).text();
      await (await impit.fetch(`${base}/api/get`, { headers: { accept: 'application/json' } })).text();
      await (await impit.fetch(`${base}/api/post`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).text();
      const requests = seen.splice(0);
      rawSettings.length = 0;
      await impit.fetch(`${rawBase}/`).catch(() => undefined);
      const [raw] = rawSettings.splice(0);
      // 2:0;4:6291456;5:16384;6:262144: Chrome's but for 1:65536 missing and 5:16384 added.
      expect(raw!.settings, profile).toEqual([[2, 0], [4, 6291456], [5, 16384], [6, 262144]]);
      expect(requests).toHaveLength(3);
      for (const request of requests) {
        expect(request.pseudo).toEqual([':method', ':authority', ':scheme', ':path']);
        const claim = browserClaim(request.values['user-agent']);
        expect(claim?.family).toBe('chrome');
        expect(checkHeaders(request.values, request.headers, claim), `${profile} ${request.path}: ${request.headers.join(' ')}`).toBeNull();
        expect(checkHttp2(factsOf(request, raw!.settings), claim)).toBe('SETTINGS headerTableSize undefined, a chrome sends 65536');
      }
    }
  });

  it("impit puts headers given by the caller first: accept-language given breaks Chrome's accept-encoding, accept-language order", async () => {
    const impit = new Impit({ browser: 'chrome142', ignoreTlsErrors: true });
    await (await impit.fetch(`${base}/api/own`, { headers: { 'accept-language': 'de-DE,de;q=0.9', cookie: 'a=b' } })).text();
    const [request] = seen.splice(0);
    expect(request!.headers.slice(0, 2)).toEqual(['accept-language', 'cookie']);
    expect(orderBroken(request!.headers, ORDER_RULES.chrome)).toBe('accept-language before accept-encoding');
  });

  it("impit's Firefox profile: Firefox's order and pseudo-headers", async () => {
    const impit = new Impit({ browser: 'firefox', ignoreTlsErrors: true });
    await (await impit.fetch(`${base}/page`)).text();
    const [request] = seen.splice(0);
    rawSettings.length = 0;
    await impit.fetch(`${rawBase}/`).catch(() => undefined);
    const [raw] = rawSettings.splice(0);
    // Firefox itself sends 1:65536;2:0;4:131072;5:16384|12517377; impit's profile omits 1 and adds 6.
    expect(raw).toEqual({ settings: [[2, 0], [4, 131072], [5, 16384], [6, 16384]], windowUpdate: 12451842 });
    expect(request!.pseudo).toEqual([':method', ':path', ':authority', ':scheme']);
    const claim = browserClaim(request!.values['user-agent']);
    expect(claim?.family).toBe('firefox');
    expect(checkHeaders(request!.values, request!.headers, claim)).toBeNull();
  });
});
