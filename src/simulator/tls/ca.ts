// The simulator's own certificate authority and the leaf certificate its HTTPS front serves. The
// scrapers trust the CA (by a setting, never by turning verification off), as a browser trusts
// the public CAs of the platforms the simulator stands for. A fresh CA at every start: no key
// lives in the repository. The leaf is signed by the CA, not self-signed (impit, like browsers,
// refuses a self-signed leaf), and names 127.0.0.1, ::1 and localhost.
//
// Cost: tests start and stop many simulators. Making two RSA keys takes 0.2-0.9 s here, and
// forge's pure-JS signing 65 ms a certificate; so the two key pairs are made once per process
// and every start signs fresh certificates with node:crypto (a few ms).
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';

export interface SimulatorCertificates {
  /** The CA certificate (PEM): what a client trusts. */
  caPem: string;
  /** Where caPem is written: a file a client's setting can name. */
  caFile: string;
  /** The leaf certificate (PEM) and its key, for the HTTPS server. */
  certPem: string;
  keyPem: string;
  /** How long making the keys and certificates took (docs/simulator.md). */
  tookMs: number;
  /** Removes caFile's temporary directory (not a caFile given by the caller). */
  dispose(): void;
}

export interface CertificateOptions {
  /** Write the CA's PEM here instead of a fresh temporary directory (which close removes). */
  caFile?: string;
}

const DAY_MS = 86_400_000;

interface KeyPair {
  node: KeyObject;
  forge: forge.pki.rsa.PublicKey;
  pem: string;
}

function rsaKeys(): KeyPair {
  // node:crypto makes the key in native code; forge's own generator takes seconds.
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    node: privateKey,
    forge: forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString()) as forge.pki.rsa.PublicKey,
    pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

let processKeys: { ca: KeyPair; leaf: KeyPair } | null = null;

/** Temporary CA directories not yet disposed: removed when the process exits, so a test that never closes its simulator leaves none behind. */
const liveDirs = new Set<string>();
let exitHookInstalled = false;
function removeOnExit(dir: string): void {
  liveDirs.add(dir);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
  });
}

/** Signs `cert` with node:crypto: forge computes the to-be-signed bytes and hands them to `sign`. */
function signWith(cert: forge.pki.Certificate, key: KeyObject): void {
  let tbs = '';
  const md = {
    algorithm: 'sha256',
    update(bytes: string) {
      tbs += bytes;
      return md;
    },
  };
  const signer = { sign: () => sign('sha256', Buffer.from(tbs, 'binary'), key).toString('binary') };
  cert.sign(signer as unknown as forge.pki.rsa.PrivateKey, md as unknown as forge.md.MessageDigest);
}

/** A positive serial number (the top bit clear), random so two runs' certificates never collide. */
function serialNumber(): string {
  const bytes = forge.random.getBytesSync(16);
  return (((bytes.charCodeAt(0) & 0x7f) | 0x01).toString(16).padStart(2, '0') + forge.util.bytesToHex(bytes.slice(1)));
}

export function makeCertificates(options: CertificateOptions = {}): SimulatorCertificates {
  const started = performance.now();
  const now = Date.now();
  processKeys ??= { ca: rsaKeys(), leaf: rsaKeys() };
  const caKeys = processKeys.ca;
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.forge;
  ca.serialNumber = serialNumber();
  // A little in the past, so a client whose clock is a second behind still accepts it.
  ca.validity.notBefore = new Date(now - DAY_MS);
  ca.validity.notAfter = new Date(now + 365 * DAY_MS);
  const caName = [
    { name: 'commonName', value: `ticket-market simulator CA ${ca.serialNumber.slice(0, 12)}` },
    { name: 'organizationName', value: 'ticket-market simulator' },
  ];
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  signWith(ca, caKeys.node);

  const leafKeys = processKeys.leaf;
  const leaf = forge.pki.createCertificate();
  leaf.publicKey = leafKeys.forge;
  leaf.serialNumber = serialNumber();
  leaf.validity.notBefore = new Date(now - DAY_MS);
  // Under 398 days: the longest a browser accepts for a server certificate.
  leaf.validity.notAfter = new Date(now + 365 * DAY_MS);
  leaf.setSubject([{ name: 'commonName', value: 'localhost' }]);
  leaf.setIssuer(caName);
  leaf.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [
        { type: 7, ip: '127.0.0.1' },
        { type: 7, ip: '::1' },
        { type: 2, value: 'localhost' },
      ],
    },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  signWith(leaf, caKeys.node);

  const caPem = forge.pki.certificateToPem(ca);
  let caFile = options.caFile;
  let dir: string | null = null;
  if (!caFile) {
    dir = mkdtempSync(join(tmpdir(), 'sim-ca-'));
    removeOnExit(dir);
    caFile = join(dir, 'ca.pem');
  }
  writeFileSync(caFile, caPem);
  return {
    caPem,
    caFile,
    certPem: forge.pki.certificateToPem(leaf),
    keyPem: leafKeys.pem,
    tookMs: performance.now() - started,
    dispose: () => {
      if (!dir) return;
      rmSync(dir, { recursive: true, force: true });
      liveDirs.delete(dir);
    },
  };
}
