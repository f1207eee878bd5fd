// The demo account `npm start` creates on first start, so a new user can call the API at once.
// Its key is printed once and kept (mode 0600) in the data directory for later reference.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../../db/connection.ts';
import { createAccount, createKey } from './operations.ts';

const DEMO_NAME = 'demo';
/** Serialises first starts that share one database (two processes, or replicas). */
const DEMO_LOCK = 7_317_001;

/**
 * Creates the demo account and key once. All or nothing: the account, its key and the key file
 * are written in one transaction, so a start that fails half-way (an unwritable data
 * directory, a crash) leaves no demo account whose key was never shown.
 */
export async function ensureDemoAccount(db: Db, dataDir: string): Promise<{ created: boolean; key?: string; keyFile: string }> {
  const keyFile = path.join(dataDir, 'demo-api-key');
  return db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(?)', [DEMO_LOCK]);
    const existing = await trx('accounts').where({ name: DEMO_NAME }).first('id');
    if (existing) return { created: false, keyFile };
    const { account_id } = await createAccount(trx, { plan: 'pro', name: DEMO_NAME });
    const { key } = await createKey(trx, { accountId: account_id, rateLimitPerMinute: 600 });
    await fs.mkdir(dataDir, { recursive: true });
    // Written whole or not at all: a temporary file renamed into place.
    const tmp = `${keyFile}.${process.pid}.tmp`;
    try {
      await fs.writeFile(tmp, key + '\n', { mode: 0o600 });
      await fs.rename(tmp, keyFile);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
    return { created: true, key, keyFile };
  });
}
