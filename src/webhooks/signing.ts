// Standard Webhooks 1.0 signatures: `v1,` + base64 HMAC-SHA256, keyed by the base64 part of a
// `whsec_` secret, over `{webhook-id}.{webhook-timestamp}.{body}`. Every secret that currently
// signs contributes one signature, space-separated, so a receiver holding either the old or
// the new secret during a rotation verifies.
import { createHmac } from 'node:crypto';
import { SECRET_PREFIX } from './signing-secret.ts';

export function signature(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The three Standard Webhooks headers for one attempt. */
export function signedHeaders(secrets: readonly string[], messageId: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signature(s, messageId, timestampSeconds, body)).join(' '),
  };
}
