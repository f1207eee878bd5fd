// Shared helpers for the webhook resource tests: the gateway environment (loopback receivers
// allowed, as every end-to-end test uses), a resolver that answers from a table so no test asks
// a real DNS server, and the response shapes of issue 15.
import { expect } from 'vitest';
import type { Db } from '../../../db/connection.ts';
import type { HostLookup } from '../../../src/webhooks/url-rules.ts';
import { call, type Reply } from '../../support/harness.ts';

export const OPEN_ENV = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };
export const STRICT_ENV = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' };

/** A loopback URL nothing listens on (port 9, discard): creating a webhook connects nowhere. */
export const LOOPBACK_URL = 'http://127.0.0.1:9/hook';

/** Fields of a webhook as issue 15 lists them, in order; `secret` only on create. */
export const WEBHOOK_FIELDS = ['id', 'url', 'kind', 'description', 'active', 'disabled_reason', 'created_at', 'updated_at'];

/**
 * Answers from `table`; any other name does not resolve. Names under `.public.test` resolve to a
 * documentation-free public address, so strict-mode creates succeed with no connection made.
 */
export function tableLookup(table: Record<string, string[]> = {}): HostLookup {
  return async (host) => {
    const answers = table[host] ?? (host.endsWith('.public.test') ? ['93.184.216.34'] : undefined);
    if (!answers) throw Object.assign(new Error(`no such host ${host}`), { code: 'ENOTFOUND' });
    return answers.map((address) => ({ address }));
  };
}

export function expectWebhook(body: unknown, withSecret = false): Record<string, unknown> {
  const b = body as Record<string, unknown>;
  expect(Object.keys(b)).toEqual(withSecret ? [...WEBHOOK_FIELDS, 'secret'] : WEBHOOK_FIELDS);
  expect(typeof b.id).toBe('number');
  expect(b.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  expect(b.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  return b;
}

/** Watchlist envelope (spec 7.4): exactly `{error: string}`. */
export function expectError(r: Reply, status: number): string {
  expect(r.status, r.text).toBe(status);
  expect(Object.keys(r.body ?? {}), r.text).toEqual(['error']);
  expect(typeof r.body.error).toBe('string');
  return r.body.error as string;
}

export async function createWebhook(base: string, key: string, body: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const r = await call(base, 'POST', '/webhooks', { key, body: { url: LOOPBACK_URL, kind: 'standard', ...body } });
  expect(r.status, r.text).toBe(201);
  return expectWebhook(r.body, true);
}

export async function webhookRow(db: Db, id: number): Promise<Record<string, unknown> | undefined> {
  return db('webhooks').where({ id }).first();
}
