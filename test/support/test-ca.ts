// Test certificate authorities for the HTTPS tests of the scrapers' client: a CA, leaves it signs
// for loopback (a subjectAltName for 127.0.0.1 and localhost, as a TLS client requires), and a
// self-signed leaf. Keys come from node:crypto (fast), certificates from node-forge.
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import forge from 'node-forge';

export interface TestCa {
  /** The CA's certificate, PEM. */
  cert: string;
  /** A leaf for 127.0.0.1 and localhost signed by this CA: what an HTTPS server presents. */
  leaf(): { key: string; cert: string };
  /** Writes the CA's certificate into a temporary file; returns its path. */
  writeCertFile(): string;
}

function keyPair(): { forgeKey: forge.pki.rsa.PrivateKey; forgePublic: forge.pki.rsa.PublicKey; pem: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const forgeKey = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  return { forgeKey, forgePublic: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e), pem };
}

let serial = 1;

function certificate(subject: string, publicKey: forge.pki.PublicKey, issuer: { name: string; key: forge.pki.rsa.PrivateKey }, ca: boolean): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = (serial++).toString(16).padStart(2, '0');
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 7 * 24 * 3_600_000);
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
          { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }, { type: 2, value: 'localhost' }] },
        ],
  );
  cert.sign(issuer.key, forge.md.sha256.create());
  return cert;
}

export function makeTestCa(name = 'Scrapers Test CA'): TestCa {
  const keys = keyPair();
  const caCert = certificate(name, keys.forgePublic, { name, key: keys.forgeKey }, true);
  const cert = forge.pki.certificateToPem(caCert);
  return {
    cert,
    leaf() {
      const leafKeys = keyPair();
      return { key: leafKeys.pem, cert: forge.pki.certificateToPem(certificate('localhost', leafKeys.forgePublic, { name, key: keys.forgeKey }, false)) };
    },
    writeCertFile() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'test-ca-'));
      const file = path.join(dir, 'ca.pem');
      fs.writeFileSync(file, cert);
      return file;
    },
  };
}

/** A leaf for 127.0.0.1 signed by its own key: no CA vouches for it. */
export function selfSignedLeaf(): { key: string; cert: string } {
  const keys = keyPair();
  return { key: keys.pem, cert: forge.pki.certificateToPem(certificate('localhost', keys.forgePublic, { name: 'localhost', key: keys.forgeKey }, false)) };
}
