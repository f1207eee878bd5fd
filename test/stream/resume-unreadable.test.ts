// A resuming client admitted on a spare slot while its node cannot read the notifications log
// (issue 40, src/stream/connection.ts): a spare lets an upgrade through without the database, and
// where such a client resumes (its last_id against the log's bounds) is read after the 101, so a
// log that cannot be read then must close the connection with 1011 `log_unavailable` (reconnect
// with backoff, resume with last_id) and send no hello, never leave it open and silent. A real
// stream node reaching PostgreSQL through Toxiproxy, cut off after a burst left it holding spares.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import type { Toxiproxy } from '../../rehearsal/toxiproxy.ts';
import { databaseUrl, newAccount } from '../support/harness.ts';
import { cut, heal, proxiedDatabaseUrl, testToxiproxy } from '../support/toxiproxy.ts';
import { Client, startNode, type TestNode } from './helpers.ts';

/** Spares kept far longer than the test takes: it is the cut, not their expiry, that it judges. */
const HOLDING = { touchMs: 5_000, staleMs: 60_000, fenceMs: 36_000, spareIdleMs: 60_000, spareMaxMs: 60_000 };

let toxi: Toxiproxy;
let node: TestNode;
let direct: Db;
const clients: Client[] = [];

beforeAll(async () => {
  toxi = await testToxiproxy();
  const proxied = await proxiedDatabaseUrl(toxi, 'pg-resume');
  direct = createDb({ connectionString: databaseUrl(), poolMax: 2 });
  node = await startNode({ env: { STREAM_MAX_CONNECTIONS_PER_KEY: '50', STREAM_MAX_CONNECTIONS_PER_ACCOUNT: '50' }, slotTimings: HOLDING, connectionString: proxied });
}, 180_000);
afterAll(async () => {
  for (const c of clients) c.close();
  if (toxi) await heal(toxi, 'pg-resume');
  await node?.close();
  await direct?.destroy();
  await toxi?.stop();
});

async function admittedOnSpares(): Promise<number> {
  const m = await node.registry.getSingleMetric('stream_upgrades_admitted_total')!.get();
  return m.values.filter((v) => v.labels.path === 'spare').reduce((n, v) => n + v.value, 0);
}

describe('a resuming client admitted while the log cannot be read', { timeout: 60_000 }, () => {
  it('is closed with 1011 log_unavailable and no hello', async () => {
    const acct = await newAccount(direct);
    // A burst: the node takes spare slots for the key's next upgrades.
    const burst = Array.from({ length: 6 }, () => new Client(node.url, { key: acct.key }));
    clients.push(...burst);
    await Promise.all(burst.map((c) => c.opened));
    const spares = await direct('stream_connections').where({ key_id: acct.keyId, spare: true }).count('* as n').first();
    expect(Number(spares?.n)).toBeGreaterThan(0);
    const before = await admittedOnSpares();

    await cut(toxi, 'pg-resume');
    const resuming = new Client(node.url, { key: acct.key, lastId: 1 });
    clients.push(resuming);
    // Admitted on a spare, without the database: the 101 comes.
    await resuming.opened;
    expect(await admittedOnSpares()).toBe(before + 1);
    // Within the pool's query timeout (7 s) the bounds read fails and the node says so.
    expect(await resuming.closed).toEqual({ code: 1011, reason: 'log_unavailable' });
    expect(resuming.messages.filter((m) => m.type === 'hello')).toEqual([]);
    expect(node.logs.lines.some((l) => l.msg === 'stream: notifications log unreachable')).toBe(true);
  });
});
