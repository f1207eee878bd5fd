// A role's password as PostgreSQL stores it (SCRAM-SHA-256, RFC 5802 / RFC 7677), computed here so
// that CREATE/ALTER ROLE sends the verifier and never the password: a statement's text can reach
// the server's log (log_statement, a failed statement's STATEMENT line, pg_stat_statements), and a
// verifier there gives nobody the password. It is what libpq's PQencryptPasswordConn and psql's
// \password send. The server takes a string of this form as the stored value as it is.
//
// The password goes through SASLprep's mapping steps first (RFC 4013: non-ASCII spaces to a space,
// the characters mapped to nothing removed, NFKC), as the server does with a password it is given
// and as the `pg` client and libpq do when they log in, so that all of them derive the same keys.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

/** PostgreSQL's default (scram_iterations, PostgreSQL 16 and earlier's fixed value). */
export const SCRAM_ITERATIONS = 4096;

const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();

/** RFC 3454 table C.1.2: non-ASCII spaces, mapped to U+0020. */
const NON_ASCII_SPACE = /[\u00A0\u1680\u2000-\u200B\u202F\u205F\u3000]/g;
/** RFC 3454 table B.1: commonly mapped to nothing (they join their neighbours). */
// eslint-disable-next-line no-misleading-character-class
const MAPPED_TO_NOTHING = /[\u00AD\u034F\u1806\u180B\u180C\u180D\u200C\u200D\u2060\uFE00-\uFE0F\uFEFF]/g;

/** SASLprep's mapping and normalisation (RFC 4013 §2.1-2.2), what the `pg` client applies too. */
export function saslprep(password: string): string {
  return password.replace(NON_ASCII_SPACE, ' ').replace(MAPPED_TO_NOTHING, '').normalize('NFKC');
}

/** The keys a verifier holds: what the server checks a client's proof with, and proves itself with. */
export function scramKeys(password: string, salt: Buffer, iterations = SCRAM_ITERATIONS): { storedKey: Buffer; serverKey: Buffer } {
  const salted = pbkdf2Sync(Buffer.from(saslprep(password), 'utf8'), salt, iterations, 32, 'sha256');
  return { storedKey: createHash('sha256').update(hmac(salted, 'Client Key')).digest(), serverKey: hmac(salted, 'Server Key') };
}

/** `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, base64, with a fresh 16-byte salt unless given. */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = SCRAM_ITERATIONS): string {
  const { storedKey, serverKey } = scramKeys(password, salt, iterations);
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
