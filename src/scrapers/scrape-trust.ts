// Which certificate authorities the scrapers' HTTP client (http-fetcher.ts, on wreq-js) trusts: the
// system's store, plus those of SCRAPE_CA_FILE (a simulator's own CA, a TLS-inspecting gateway's).
// TLS verification is never turned off.
//
// wreq-js takes no CA option: its `trustStore` is Mozilla's roots plus BoringSSL's default verify
// paths, where the file named by SSL_CERT_FILE REPLACES the system's bundle rather than adding to
// it. wreq reads that variable each time it builds a transport (measured with wreq-js 3.1.0). So the
// extra CAs are written, after the system's bundle, into a private file of our own, and each
// transport is built with SSL_CERT_FILE pointing at it for that one synchronous call only.
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where Linux distributions keep the system's CA bundle (Debian's first, as our image's). */
const SYSTEM_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem'];

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * The PEM certificates of `file`, each checked to parse; throws an Error saying what is wrong
 * (missing, unreadable, no certificate, one that does not parse). For config.ts and for the fetcher.
 */
export function readCaCertificates(file: string): string[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const blocks = text.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) throw new Error(`${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new Error(`${file}: certificate ${i + 1} of ${blocks.length} does not parse (${(err as Error).message})`);
    }
  }
  return blocks;
}

/** The bundle written for each CA file asked for, by its resolved path. */
const bundles = new Map<string, string>();

/**
 * The PEM bundle a transport is to trust for `caFile`: the system store, then `caFile`'s CAs,
 * written once per file into a private file removed at exit; null for no file (the system store as
 * it is). Throws, saying why, when the file is not a PEM file of certificates.
 */
export function caBundle(caFile: string | undefined): string | null {
  if (caFile === undefined || caFile === '') return null;
  const wanted = path.resolve(caFile);
  const kept = bundles.get(wanted);
  if (kept !== undefined) return kept;
  const extra = readCaCertificates(wanted);
  // An operator's own SSL_CERT_FILE stands for the system store, as BoringSSL would read it.
  const base = [process.env.SSL_CERT_FILE, ...SYSTEM_BUNDLES].find((f) => f !== undefined && f !== '' && !isOurs(f) && fs.existsSync(f));
  const system = base === undefined ? '' : fs.readFileSync(base, 'utf8');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-ca-'));
  const bundle = path.join(dir, 'bundle.pem');
  fs.writeFileSync(bundle, `${system.trimEnd()}\n${extra.join('\n')}\n`, { mode: 0o600 });
  if (bundles.size === 0) {
    // One hook for every bundle: a test process meets a new simulator CA per file, and a hook each
    // made Node warn of a listener leak past ten.
    process.once('exit', () => {
      for (const b of bundles.values()) fs.rmSync(path.dirname(b), { recursive: true, force: true });
    });
  }
  bundles.set(wanted, bundle);
  return bundle;
}

function isOurs(file: string): boolean {
  for (const bundle of bundles.values()) if (bundle === file) return true;
  return false;
}

/**
 * Runs `make` (a synchronous call that builds a wreq transport) with SSL_CERT_FILE pointing at
 * `bundle`, and puts the variable back before returning: wreq reads it as it builds each transport
 * (measured with wreq-js 3.1.0: a transport trusts what the variable named when it was built,
 * whatever it says later), so each transport gets its own CAs and the process's setting is left as
 * it was. `bundle` null leaves the variable alone.
 */
export function withCaBundle<T>(bundle: string | null, make: () => T): T {
  if (bundle === null) return make();
  const before = process.env.SSL_CERT_FILE;
  process.env.SSL_CERT_FILE = bundle;
  try {
    return make();
  } finally {
    if (before === undefined) delete process.env.SSL_CERT_FILE;
    else process.env.SSL_CERT_FILE = before;
  }
}
