// A role's password is sent to PostgreSQL as its SCRAM-SHA-256 verifier (db/scram-verifier.ts,
// issue 38), never as text that could reach the server's log. The verifier is checked against
// what it must agree with, none of it our code: RFC 7677's worked example, and the `pg` client's
// own SCRAM implementation (its proof must verify against our StoredKey, its expected server
// signature must be the one our ServerKey gives), for any password. Then setUpRoles on the run's
// PostgreSQL: no statement or parameter it sends holds the password, and the server stores the
// verifier.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { setUpRoles } from '../../db/roles.ts';
import { scramKeys, scramVerifier } from '../../db/scram-verifier.ts';
import { databaseUrl } from '../support/harness.ts';

interface SaslSession {
  clientNonce: string;
  response: string;
  serverSignature?: string;
}
const sasl = createRequire(import.meta.url)('pg/lib/crypto/sasl.js') as {
  startSession(mechanisms: string[], stream?: unknown): SaslSession;
  continueSession(session: SaslSession, password: string, serverData: string, stream?: unknown): Promise<void>;
};

const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();

function parseVerifier(verifier: string): { iterations: number; salt: string; storedKey: Buffer; serverKey: Buffer } {
  const m = /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/.exec(verifier);
  if (!m) throw new Error(`not a SCRAM-SHA-256 verifier: ${verifier}`);
  return { iterations: Number(m[1]), salt: m[2]!, storedKey: Buffer.from(m[3]!, 'base64'), serverKey: Buffer.from(m[4]!, 'base64') };
}

/** The server's side of a SCRAM exchange with the `pg` client, judged with the stored verifier only. */
async function pgClientLogsIn(password: string, verifier: string): Promise<{ proofValid: boolean; serverSignatureAgrees: boolean }> {
  const v = parseVerifier(verifier);
  const session = sasl.startSession(['SCRAM-SHA-256']);
  const nonce = `${session.clientNonce}${randomBytes(12).toString('base64')}`;
  const serverFirst = `r=${nonce},s=${v.salt},i=${v.iterations}`;
  await sasl.continueSession(session, password, serverFirst);
  const finalWithoutProof = session.response.slice(0, session.response.lastIndexOf(',p='));
  const proof = Buffer.from(session.response.slice(session.response.lastIndexOf(',p=') + 3), 'base64');
  const authMessage = `n=*,r=${session.clientNonce},${serverFirst},${finalWithoutProof}`;
  const signature = hmac(v.storedKey, authMessage);
  const clientKey = Buffer.from(proof.map((b, i) => b ^ signature[i]!));
  return {
    proofValid: createHash('sha256').update(clientKey).digest().equals(v.storedKey),
    serverSignatureAgrees: session.serverSignature === hmac(v.serverKey, authMessage).toString('base64'),
  };
}

describe('SCRAM-SHA-256 verifier', () => {
  it('gives RFC 7677’s example exchange its ClientProof and ServerSignature', () => {
    const salt = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64');
    const { storedKey, serverKey } = scramKeys('pencil', salt, 4096);
    const authMessage =
      'n=user,r=rOprNGfwEbeRWgbNEkqO,' +
      'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,' +
      'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0';
    expect(hmac(serverKey, authMessage).toString('base64')).toBe('6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=');
    // The RFC's proof, undone with our StoredKey, gives a ClientKey that hashes to it.
    const proof = Buffer.from('dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=', 'base64');
    const signature = hmac(storedKey, authMessage);
    expect(createHash('sha256').update(Buffer.from(proof.map((b, i) => b ^ signature[i]!))).digest().equals(storedKey)).toBe(true);
  });

  it('lets the `pg` client log in with any password, non-ASCII ones too (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 24 }), async (password) => {
        const verifier = scramVerifier(password);
        expect(await pgClientLogsIn(password, verifier)).toEqual({ proofValid: true, serverSignatureAgrees: true });
      }),
      { numRuns: 40 },
    );
  });

  it('refuses the `pg` client’s proof for another password', async () => {
    expect(await pgClientLogsIn('not-the-password', scramVerifier('the-password'))).toEqual({ proofValid: false, serverSignatureAgrees: false });
  });

  it('a fresh salt each time: one password, two verifiers', () => {
    expect(scramVerifier('same')).not.toBe(scramVerifier('same'));
  });
});

describe('setUpRoles sends no password', () => {
  const tag = randomBytes(4).toString('hex');
  const role = `tm_scram_${tag}`;
  const database = `tm_scram_db_${tag}`;
  const password = `pw-${randomBytes(12).toString('hex')}`;
  const admin = () => {
    const u = new URL(databaseUrl());
    u.pathname = '/postgres';
    return u.toString();
  };

  afterAll(async () => {
    const client = new pg.Client({ connectionString: admin() });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await client.query(`DROP ROLE IF EXISTS ${role}`);
    } finally {
      await client.end();
    }
  });

  it('in any statement or parameter, creating the role or setting its password again; the server stores the verifier', async () => {
    const sent: string[] = [];
    const original = pg.Client.prototype.query;
    const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const [text, values] = args as [string | { text: string; values?: unknown[] }, unknown];
      sent.push(typeof text === 'string' ? text : text.text, JSON.stringify(typeof text === 'string' ? (values ?? null) : (text.values ?? null)));
      return Reflect.apply(original, this, args) as never;
    });
    try {
      await setUpRoles(admin(), { app: { database, role: { name: role, password } } });
      await setUpRoles(admin(), { app: { database, role: { name: role, password } } });
    } finally {
      spy.mockRestore();
    }
    expect(sent.some((s) => /ROLE/.test(s))).toBe(true);
    expect(sent.filter((s) => s.includes(password))).toEqual([]);
    const client = new pg.Client({ connectionString: admin() });
    await client.connect();
    try {
      const { rows } = await client.query<{ rolpassword: string }>('SELECT rolpassword FROM pg_authid WHERE rolname = $1', [role]);
      const stored = rows[0]!.rolpassword;
      expect(stored).toMatch(/^SCRAM-SHA-256\$4096:/);
      expect(await pgClientLogsIn(password, stored)).toEqual({ proofValid: true, serverSignatureAgrees: true });
    } finally {
      await client.end();
    }
  });
});

