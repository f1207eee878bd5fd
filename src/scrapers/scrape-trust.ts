// Which certificate authorities the scrapers' HTTP client (http-fetcher.ts, on impit) trusts: the
// system's store, plus those of SCRAPE_CA_FILE (a simulator's own CA, a TLS-inspecting gateway's).
// TLS verification is never turned off.
//
// impit takes no CA option: it reads the file named by SSL_CERT_FILE, which REPLACES the system
// store rather than adding to it, once per process, when its first client is built (measured with
// impit 0.14.5: a change of SSL_CERT_FILE after that is ignored by every later client). So the
// extra CAs are written, after the system's bundle, into a private file of our own, and
// SSL_CERT_FILE is pointed at it before the first client: a process-wide setting, fixed for the
// process's life, which is why a second, different CA file is refused instead of silently ignored.
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

/** The CA file the process's clients were set up with: undefined before the first, null for none. */
let fixed: string | null | undefined;

/**
 * Sets up the trust of the process's impit clients, before the first is built: the system store,
 * plus `caFile`'s CAs when given. Later calls asking for no file, or for the same one, change
 * nothing; one asking for another file throws, as impit would not read it.
 */
export function trustScrapeCa(caFile: string | undefined): void {
  const wanted = caFile === undefined || caFile === '' ? null : path.resolve(caFile);
  if (fixed !== undefined) {
    if (wanted === null || wanted === fixed) return;
    throw new Error(`the scrapers' CAs were set for this process at its first HTTP client (${fixed ?? 'the system store only'}); ${wanted} cannot be added later`);
  }
  if (wanted !== null) {
    const extra = readCaCertificates(wanted);
    // An operator's own SSL_CERT_FILE stands for the system store, as impit would read it.
    const base = [process.env.SSL_CERT_FILE, ...SYSTEM_BUNDLES].find((f) => f !== undefined && f !== '' && fs.existsSync(f));
    const system = base === undefined ? '' : fs.readFileSync(base, 'utf8');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-ca-'));
    const bundle = path.join(dir, 'bundle.pem');
    fs.writeFileSync(bundle, `${system.trimEnd()}\n${extra.join('\n')}\n`, { mode: 0o600 });
    process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    process.env.SSL_CERT_FILE = bundle;
  }
  fixed = wanted;
}
