// Webhook delivery retention: finished deliveries (and their attempts) older than the retention
// are pruned, in batches; recent ones and pending ones of any age stay.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { pruneDeliveries } from '../../src/webhooks/retention.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_webhook_retention', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 2 });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

const DAY = 86_400_000;

describe('webhook delivery retention', () => {
  it('prunes finished deliveries past the retention with their attempts, across batches; keeps recent and pending ones', async () => {
    const [account] = await db('accounts').insert({ name: 'retention' }).returning('id');
    const [hook] = await db('webhooks')
      .insert({ account_id: account.id, kind: 'discord', url_sealed: 'sealed', active: true, created_at: new Date(), updated_at: new Date() })
      .returning('id');
    let n = 0;
    const add = async (count: number, state: string, ageDays: number) => {
      const updatedAt = new Date(Date.now() - ageDays * DAY);
      const rows = Array.from({ length: count }, () => ({
        webhook_id: hook.id,
        account_id: account.id,
        type: 'ping',
        message_id: `msg_retention_${++n}`,
        body: '{}',
        state,
        dispatched: true,
        created_at: updatedAt,
        updated_at: updatedAt,
      }));
      const ids: { id: string }[] = await db('webhook_deliveries').insert(rows).returning('id');
      await db('webhook_attempts').insert(ids.map(({ id }) => ({ delivery_id: id, attempted_at: updatedAt, status_code: 204, latency_ms: 3 })));
      return ids.map((r) => Number(r.id));
    };
    // More old ones than one batch (1,000), so the loop is exercised.
    await add(1_200, 'delivered', 31);
    await add(50, 'failed', 45);
    const keptRecent = await add(20, 'delivered', 29);
    const keptPending = await add(10, 'pending', 90);

    expect(await pruneDeliveries(db, 30 * DAY)).toBe(1_250);
    const left = (await db('webhook_deliveries').select('id')).map((r) => Number(r.id)).sort((a, b) => a - b);
    expect(left).toEqual([...keptRecent, ...keptPending].sort((a, b) => a - b));
    expect(Number((await db('webhook_attempts').count({ n: '*' }).first())!.n)).toBe(30);
    expect(await pruneDeliveries(db, 30 * DAY)).toBe(0);
  });
});
