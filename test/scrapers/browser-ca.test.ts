// The browser trusts a CA it is given (issue 37: the simulator's own, SCRAPE_CA_FILE) the way a
// desktop does, through an NSS database in a home of its own, with certificate verification on:
// a local HTTPS site whose leaf a test CA signed loads with the CA file given, and is refused (a
// certificate error) without it. Without certutil, a browser given a CA file fails saying what to
// install. Real Chromium, a real TLS server on 127.0.0.1.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBrowserPages, type BrowserPages } from '../../src/scrapers/browser-pages.ts';
import { ScrapeFailure } from '../../src/scrapers/types.ts';
import { makeTestCa } from '../support/test-ca.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const TIMEOUT_MS = 10_000;

let dir: string;
let caFile: string;
let server: https.Server;
let url: string;
const opened: BrowserPages[] = [];

function browser(options: { caFile?: string } = {}): BrowserPages {
  const pages = createBrowserPages({ pages: 1, chromiumPath: CHROMIUM, timeoutMs: TIMEOUT_MS, ...options });
  opened.push(pages);
  return pages;
}

function homes(): string[] {
  return readdirSync(tmpdir()).filter((name) => name.startsWith('scrape-browser-home-'));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'browser-ca-test-'));
  const ca = makeTestCa('Test Simulator CA');
  caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, ca.cert);
  server = https.createServer(ca.leaf(), (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><html><head><title>t</title></head><body><p id="hello">over TLS</p></body></html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  await Promise.all(opened.map((p) => p.close()));
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('a CA file given to the browser', () => {
  it('is trusted: the site its CA signed loads, with verification on', async () => {
    const before = new Set(homes());
    const pages = browser({ caFile });
    expect(await pages.withPage(url, (page) => page.textContent('#hello'))).toBe('over TLS');
    // Its own home, removed with the browser. Other files' browsers make and remove homes in the
    // same directory meanwhile (a full run): the homes that appeared while it opened include its
    // own, and one of them goes with its close (counting every home failed a full run: 36 for 35).
    const appeared = homes().filter((h) => !before.has(h));
    expect(appeared.length).toBeGreaterThanOrEqual(1);
    await pages.close();
    const left = new Set(homes());
    expect(appeared.filter((h) => !left.has(h)).length).toBeGreaterThanOrEqual(1);
  });

  it('is needed: without it the same site is refused with a certificate error', async () => {
    const err = await browser()
      .withPage(url, (page) => page.textContent('#hello'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScrapeFailure);
    expect((err as ScrapeFailure).message).toMatch(/ERR_CERT_AUTHORITY_INVALID/);
  });

  it('needs certutil: without it the browser fails saying what to install', async () => {
    const path = process.env.PATH;
    process.env.PATH = dir;
    try {
      const err = await browser({ caFile })
        .withPage(url, (page) => page.textContent('#hello'))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ScrapeFailure);
      expect((err as ScrapeFailure).kind).toBe('browser_missing');
      expect((err as ScrapeFailure).message).toMatch(/certutil not found.*apt-get install -y libnss3-tools/);
    } finally {
      process.env.PATH = path;
    }
  });

  it('must be a certificate: a file certutil refuses fails as clearly', async () => {
    const bad = join(dir, 'not-a-ca.pem');
    writeFileSync(bad, 'not a certificate\n');
    const err = await browser({ caFile: bad })
      .withPage(url, (page) => page.textContent('#hello'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScrapeFailure);
    expect((err as ScrapeFailure).message).toMatch(/certutil -A failed/);
  });
});
