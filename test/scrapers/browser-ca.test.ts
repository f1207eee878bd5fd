// The browser trusts a CA it is given (issue 37: the simulator's own, SCRAPE_CA_FILE) the way a
// desktop does, through an NSS database in a home of its own, with certificate verification on:
// a local HTTPS site whose leaf a test CA signed loads with the CA file given, and is refused (a
// certificate error) without it. Without certutil, a browser given a CA file fails saying what to
// install. Real Chromium, a real TLS server on 127.0.0.1.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBrowserPages, type BrowserPages } from '../../src/scrapers/browser-pages.ts';
import { ScrapeFailure } from '../../src/scrapers/types.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const TIMEOUT_MS = 10_000;

function keyPair(): { privateKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey } {
  // Node's keygen: forge's own takes seconds in pure JavaScript.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  const key = forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey;
  return { privateKey: key, publicKey: forge.pki.setRsaPublicKey(key.n, key.e) };
}

function certificate(subject: string, keys: ReturnType<typeof keyPair>, issuer: { name: string; key: forge.pki.rsa.PrivateKey }, ca: boolean): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = `01${forge.util.bytesToHex(forge.random.getBytesSync(8))}`;
  cert.validity.notBefore = new Date(Date.now() - 3_600_000);
  cert.validity.notAfter = new Date(Date.now() + 30 * 86_400_000);
  cert.setSubject([{ name: 'commonName', value: subject }]);
  cert.setIssuer([{ name: 'commonName', value: issuer.name }]);
  cert.setExtensions(
    ca
      ? [
          { name: 'basicConstraints', cA: true, critical: true },
          { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
        ]
      : [
          { name: 'basicConstraints', cA: false },
          { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
          { name: 'extKeyUsage', serverAuth: true },
          { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] },
        ],
  );
  cert.sign(issuer.key, forge.md.sha256.create());
  return cert;
}

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
  const caKeys = keyPair();
  const ca = certificate('Test Simulator CA', caKeys, { name: 'Test Simulator CA', key: caKeys.privateKey }, true);
  const leafKeys = keyPair();
  const leaf = certificate('127.0.0.1', leafKeys, { name: 'Test Simulator CA', key: caKeys.privateKey }, false);
  caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, forge.pki.certificateToPem(ca));
  server = https.createServer({ key: forge.pki.privateKeyToPem(leafKeys.privateKey), cert: forge.pki.certificateToPem(leaf) }, (_req, res) => {
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
    const before = homes();
    const pages = browser({ caFile });
    expect(await pages.withPage(url, (page) => page.textContent('#hello'))).toBe('over TLS');
    // Its own home, removed with the browser.
    expect(homes().length).toBe(before.length + 1);
    await pages.close();
    expect(homes()).toEqual(before);
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
