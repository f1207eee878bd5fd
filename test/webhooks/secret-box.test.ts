// Encryption at rest of webhook URLs and secrets: round trip, binding to the account, and the
// key `npm start` keeps in DATA_DIR when the environment has none (made once, owner-only).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ensureWebhookKey, KEY_FILE, newWebhookKey, SecretBox } from '../../src/webhooks/secret-box.ts';

describe('SecretBox', () => {
  it('opens what it sealed, for the same account only, and never repeats a ciphertext', () => {
    const box = new SecretBox(newWebhookKey());
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 2 ** 40 }), (plain, account) => {
        const a = box.seal(plain, account);
        expect(box.open(a, account)).toBe(plain);
        expect(box.seal(plain, account)).not.toBe(a);
        expect(() => box.open(a, account + 1)).toThrow();
      }),
      { numRuns: 200 },
    );
    expect(() => new SecretBox('c2hvcnQ=')).toThrow(/32 bytes/);
  });
});

describe('ensureWebhookKey', () => {
  it('takes the environment\'s key, else makes one in DATA_DIR once (mode 0600) and reuses it', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wh-key-'));
    try {
      const given = newWebhookKey();
      expect(await ensureWebhookKey(given, dir)).toEqual({ key: given, file: null, created: false });
      const made = await ensureWebhookKey(undefined, path.join(dir, 'data'));
      expect(made.created).toBe(true);
      expect(made.file).toBe(path.join(dir, 'data', KEY_FILE));
      expect(Buffer.from(made.key, 'base64')).toHaveLength(32);
      expect((await fs.stat(made.file!)).mode & 0o777).toBe(0o600);
      const again = await ensureWebhookKey(undefined, path.join(dir, 'data'));
      expect(again).toEqual({ key: made.key, file: made.file, created: false });
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
