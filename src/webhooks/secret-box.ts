// Encryption at rest of webhook URLs and signing secrets: AES-256-GCM under the deployment's
// key (WEBHOOK_SECRET_KEY, 32 bytes in base64). Each sealed value is bound to its account
// (additional authenticated data), so a row copied to another account does not open. Without
// a key in the environment, `npm start` keeps one in DATA_DIR (ensureWebhookKey).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const KEY_BYTES = 32;
export const KEY_FILE = 'webhook-secret.key';

export class SecretBox {
  private readonly key: Buffer;

  constructor(base64Key: string) {
    const key = Buffer.from(base64Key, 'base64');
    if (key.length !== KEY_BYTES) throw new Error(`the webhook key must be ${KEY_BYTES} bytes of base64`);
    this.key = key;
  }

  seal(plain: string, accountId: number): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(`account:${accountId}`));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  }

  open(sealed: string, accountId: number): string {
    const [version, data] = sealed.split(':');
    if (version !== VERSION || !data) throw new Error('unknown sealed value format');
    const bytes = Buffer.from(data, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(`account:${accountId}`));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}

/** A fresh key in the form WEBHOOK_SECRET_KEY takes. */
export function newWebhookKey(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

/**
 * The key from the environment when given, else the one kept in `dataDir` (made on first use,
 * readable by its owner only). Every process of one deployment must use the same key: with
 * DATA_DIR shared, `npm start` and `npm run worker` agree.
 */
export async function ensureWebhookKey(fromEnv: string | undefined, dataDir: string): Promise<{ key: string; file: string | null; created: boolean }> {
  if (fromEnv) return { key: fromEnv, file: null, created: false };
  const file = path.join(dataDir, KEY_FILE);
  try {
    return { key: (await fs.readFile(file, 'utf8')).trim(), file, created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await fs.mkdir(dataDir, { recursive: true });
  const key = newWebhookKey();
  // wx: two processes starting together do not overwrite each other's key; the loser reads it.
  try {
    await fs.writeFile(file, key + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { key: (await fs.readFile(file, 'utf8')).trim(), file, created: false };
  }
  return { key, file, created: true };
}
