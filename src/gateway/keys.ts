// API key format: a recognisable prefix (so leaked keys are easy to spot and scan for) and
// 240 bits of randomness. Only the SHA-256 of a key is stored; a slow hash buys nothing for
// keys this random and would cost every request.
import { createHash, randomBytes } from 'node:crypto';

export const KEY_PREFIX = 'tmk_';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(bytes: number, length: number): string {
  const buf = randomBytes(bytes);
  let out = '';
  for (let i = 0; out.length < length; i++) {
    // Rejection sampling keeps every character equally likely.
    if (i >= buf.length) return out + base62(bytes, length - out.length);
    const b = buf[i]!;
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

export function generateApiKey(): { key: string; hash: Buffer; prefix: string } {
  const key = KEY_PREFIX + base62(48, 40);
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 10) };
}

export function generateKeyId(): string {
  return 'key_' + base62(24, 16);
}

export function generateOpaqueId(prefix: string): string {
  return `${prefix}_${base62(24, 16)}`;
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Cheap shape check so garbage never reaches the key store. */
export function looksLikeApiKey(value: string): boolean {
  return value.length === KEY_PREFIX.length + 40 && value.startsWith(KEY_PREFIX) && /^[0-9A-Za-z]+$/.test(value.slice(4));
}
