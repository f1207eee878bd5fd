// The bot walls behind the simulator's real HTTPS front (issue 37): nothing here is told what the
// client is; the front reads each ClientHello, HTTP version, HTTP/2 SETTINGS and header order off
// the wire. Node's default TLS client, curl, and an HTTP/1.1 client with a Chrome user agent
// (plaintext and over TLS) are each refused by a wall of every family and by a marketplace's,
// while the service's browser (Chromium with the identity browser-pages.ts gives it, the CA
// trusted through its NSS database) passes every one of them.
import { execFile } from 'node:child_process';
import https from 'node:https';
import http from 'node:http';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBrowserPages, type BrowserPages } from '../../src/scrapers/browser-pages.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import type { WalledSite } from '../../src/simulator/walls/wall.ts';
import { CHROME_UA, chromeHeaders } from '../support/wall-clients.ts';

const run = promisify(execFile);

/** One site per wall family, and a marketplace. */
const SITES: readonly WalledSite[] = ['pf_03', 'pf_02', 'pf_04', 'pf_07', 'marketplace_a'];

let sim: Simulator;
let browser: BrowserPages;

beforeAll(async () => {
  sim = await startSimulator({ walls: 'on' });
  browser = createBrowserPages({ pages: 2, chromiumPath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', timeoutMs: 20_000, caFile: sim.caFile });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await sim?.close();
});

function siteUrl(site: WalledSite, scheme: 'http' | 'https'): string {
  return `${scheme === 'https' ? sim.httpsUrl : sim.url}/${site}/`;
}

/** The wall's refusals of `site` so far, all reasons summed. */
function refused(site: WalledSite): number {
  return Object.values(sim.walls.site(site).stats().refused).reduce((a, b) => a + b, 0);
}

/** Runs `send` and says what the wall of `site` made of it. */
async function judged(site: WalledSite, send: () => Promise<unknown>): Promise<'refused' | 'passed'> {
  const before = { refused: refused(site), passed: sim.walls.site(site).stats().passed };
  await send();
  const after = { refused: refused(site), passed: sim.walls.site(site).stats().passed };
  if (after.refused === before.refused + 1 && after.passed === before.passed) return 'refused';
  if (after.passed === before.passed + 1 && after.refused === before.refused) return 'passed';
  throw new Error(`the wall of ${site} judged ${after.refused - before.refused} refused, ${after.passed - before.passed} passed for one request`);
}

/** Node's own TLS client (its ClientHello, HTTP/1.1), the CA trusted, with Chrome's headers. */
function nodeHttps(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca: sim.caPem, headers: Object.fromEntries(chromeHeaders()) }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
}

/** Plain HTTP/1.1 with a Chrome user agent and Chrome's headers in Chrome's order. */
function plainChrome(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: Object.fromEntries(chromeHeaders()) }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
}

describe.each(SITES)('the wall of %s, every check on', (site) => {
  it("refuses Node's default TLS client, Chrome's headers and all", async () => {
    expect(await judged(site, () => nodeHttps(siteUrl(site, 'https')))).toBe('refused');
    expect(sim.walls.site(site).stats().last_refusal?.reason).toBe('tls');
  });

  it('refuses curl over HTTPS (the CA given), under its own user agent and under Chrome\'s', async () => {
    expect(await judged(site, () => run('curl', ['-s', '-o', '/dev/null', '--cacert', sim.caFile, siteUrl(site, 'https')]))).toBe('refused');
    expect(await judged(site, () => run('curl', ['-s', '-o', '/dev/null', '--cacert', sim.caFile, '-A', CHROME_UA, siteUrl(site, 'https')]))).toBe('refused');
    expect(sim.walls.site(site).stats().last_refusal?.reason).toBe('tls');
  });

  it('refuses an HTTP/1.1 client with a Chrome user agent: over TLS (curl --http1.1) and in plaintext', async () => {
    expect(await judged(site, () => run('curl', ['-s', '-o', '/dev/null', '--http1.1', '--cacert', sim.caFile, '-A', CHROME_UA, siteUrl(site, 'https')]))).toBe('refused');
    expect(await judged(site, () => plainChrome(siteUrl(site, 'http')))).toBe('refused');
    expect(sim.walls.site(site).stats().last_refusal?.reason).toBe('plaintext');
  });

  it("lets the service's browser through (its own TLS and HTTP/2, no HeadlessChrome, the CA trusted)", async () => {
    const verdict = await judged(site, () => browser.withPage(siteUrl(site, 'https'), async () => undefined));
    expect(verdict, JSON.stringify(sim.walls.site(site).stats().last_refusal)).toBe('passed');
  }, 30_000);
});
