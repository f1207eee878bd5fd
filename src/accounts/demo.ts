// The demo account `npm start` creates on first start, so a new user can call the API at once.
// Its key is printed once and kept (mode 0600) in the data directory for later reference.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../../db/connection.ts';
import { createAccount, createKey } from './operations.ts';

const DEMO_NAME = 'demo';

export async function ensureDemoAccount(db: Db, dataDir: string): Promise<{ created: boolean; key?: string; keyFile: string }> {
  const keyFile = path.join(dataDir, 'demo-api-key');
  const existing = await db('accounts').where({ name: DEMO_NAME }).first('id');
  if (existing) return { created: false, keyFile };
  const { account_id } = await createAccount(db, { plan: 'pro', name: DEMO_NAME });
  const { key } = await createKey(db, { accountId: account_id, rateLimitPerMinute: 600 });
  await fs.mkdir(dataDir, { recursive: true });
  await fs.writeFile(keyFile, key + '\n', { mode: 0o600 });
  return { created: true, key, keyFile };
}
