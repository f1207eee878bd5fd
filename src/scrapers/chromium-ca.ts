// A home directory whose NSS database trusts one more CA (issue 37): how the browser trusts the
// simulator's own CA (SCRAPE_CA_FILE) without turning certificate verification off. Chromium on
// Linux takes the roots a user added from the NSS database in $HOME/.pki/nssdb, so the browser is
// launched with HOME set to a private temporary directory holding such a database, made with
// NSS's certutil (Debian's libnss3-tools). The worker's own home is never touched.
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Why the browser cannot trust the CA: said to the operator as it is (no secret in it). */
export class CaTrustError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CaTrustError';
  }
}

export interface TrustHome {
  /** The directory to launch the browser with as HOME. */
  dir: string;
  remove(): Promise<void>;
}

/** The nickname the CA is filed under in the database. */
const NICKNAME = 'sim-ca';
const CERTUTIL_MS = 15_000;

async function certutil(args: string[]): Promise<void> {
  try {
    await run('certutil', args, { timeout: CERTUTIL_MS });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new CaTrustError('certutil not found: the browser cannot be made to trust the CA file (SCRAPE_CA_FILE). Install it with `apt-get install -y libnss3-tools`.', { cause: err });
    }
    const stderr = String((err as { stderr?: unknown }).stderr ?? '').trim();
    throw new CaTrustError(`certutil ${args[0]} failed: ${stderr || (err as Error).message}`, { cause: err });
  }
}

/**
 * A fresh home trusting the PEM CA certificate in `caFile` to issue server certificates (trust
 * flags `C,,`). Throws a CaTrustError when certutil is missing or refuses the file.
 */
export async function trustHome(caFile: string): Promise<TrustHome> {
  const dir = await mkdtemp(join(tmpdir(), 'scrape-browser-home-'));
  try {
    const db = join(dir, '.pki', 'nssdb');
    await mkdir(db, { recursive: true });
    await certutil(['-N', '--empty-password', '-d', `sql:${db}`]);
    await certutil(['-A', '-n', NICKNAME, '-t', 'C,,', '-i', caFile, '-d', `sql:${db}`]);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
