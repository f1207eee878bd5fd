// `npm run ops -- webhooks:failed | webhooks:retry` (issue 15): failed deliveries listed without
// URL or secret, and sent again as the same message (next generation, back to the dispatcher).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFailedDeliveries, retryDelivery } from '../../src/ops/webhooks.ts';
import { newMessageId } from '../../src/webhooks/outbox.ts';
import { databaseUrl, newAccount, runTs, startTestGateway, type TestGateway } from '../support/harness.ts';
import { createWebhook, OPEN_ENV } from '../apis/webhooks/helpers.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ env: OPEN_ENV });
});

afterAll(async () => {
  await gw?.close();
});

async function failedDelivery(): Promise<{ id: number; message_id: string }> {
  const a = await newAccount(gw.db);
  const hook = await createWebhook(gw.url, a.key, { url: 'http://127.0.0.1:9/tok_OPS_SECRET' });
  const message_id = newMessageId();
  const [row] = await gw.db('webhook_deliveries')
    .insert({ webhook_id: hook.id, account_id: a.accountId, type: 'ping', message_id, body: '{}', state: 'failed', failure_reason: 'the endpoint answered 410 (not retried)', attempt_count: 1, dispatched: true })
    .returning('id');
  return { id: Number(row.id), message_id };
}

describe('ops webhooks', () => {
  it('lists failed deliveries and requeues one as the same message', async () => {
    const d = await failedDelivery();
    const failed = await listFailedDeliveries(gw.db, new Date(Date.now() - 3_600_000));
    expect(failed.find((f) => f.delivery_id === d.id)).toMatchObject({ message_id: d.message_id, failure_reason: 'the endpoint answered 410 (not retried)', attempts: 1 });
    expect(await retryDelivery(gw.db, d.id)).toEqual({ delivery_id: d.id, result: 'retried' });
    const row = await gw.db('webhook_deliveries').where({ id: d.id }).first();
    expect(row).toMatchObject({ state: 'pending', dispatched: false, generation: 1, message_id: d.message_id, attempt_count: 0 });
    expect(await retryDelivery(gw.db, d.id)).toEqual({ delivery_id: d.id, result: 'pending' });
    expect(await retryDelivery(gw.db, 2 ** 52)).toEqual({ delivery_id: 2 ** 52, result: 'not_found' });
  });

  it('runs from the command line, JSON on stdout, never a URL', async () => {
    const d = await failedDelivery();
    const env = { ...process.env, DATABASE_URL: databaseUrl(), LOG_LEVEL: 'silent' };
    const listed = await runTs('src/ops/cli.ts', ['webhooks:failed', '--since', '1h'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).map((f: { delivery_id: number }) => f.delivery_id)).toContain(d.id);
    expect(listed.stdout).not.toContain('tok_OPS_SECRET');
    const retried = await runTs('src/ops/cli.ts', ['webhooks:retry', String(d.id)], env);
    expect(retried.code, retried.stderr).toBe(0);
    expect(JSON.parse(retried.stdout)).toEqual({ delivery_id: d.id, result: 'retried' });
    const bad = await runTs('src/ops/cli.ts', ['webhooks:retry', 'x'], env);
    expect(bad.code).not.toBe(0);
  }, 120_000);
});
