// GET /svc/data/ping reports what Market Data depends on (issue 14): its database, read through
// the per-request pool every Market Data endpoint uses. When that database cannot be reached it
// answers 503 service_unavailable in the gateway envelope (spec 7.1), within a few seconds, and
// is not billed. Real PostgreSQL: billing and keys stay on the live database, only the Market
// Data pool points at a port nobody listens on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../../db/pool.ts';
import { newAccount, startTestGateway, type TestGateway } from '../../support/harness.ts';
import { clientFor, GATEWAY_ENV, gatewayCode, ledgerRows, unreachablePool, usedCredits } from '../../support/gateway-helpers.ts';

describe('GET /svc/data/ping', () => {
  let gw: TestGateway;
  let down: TestGateway;
  let deadPool: Pool;
  beforeAll(async () => {
    gw = await startTestGateway({ env: GATEWAY_ENV });
    deadPool = unreachablePool();
    down = await startTestGateway({ env: GATEWAY_ENV, services: { pool: deadPool } });
  });
  afterAll(async () => {
    await gw?.close();
    await down?.close();
  });

  it('answers 200 {status: "ok", time} for 1 credit while the database answers', async () => {
    const a = await newAccount(gw.db);
    const r = await clientFor(gw.url)('GET', '/svc/data/ping', { key: a.key });
    expect(r.status, r.text).toBe(200);
    expect(r.body.status).toBe('ok');
    expect(await usedCredits(gw.db, a.accountId)).toBe(1);
  });

  it('503 service_unavailable, not billed, within the deadline when its database cannot be reached', async () => {
    const a = await newAccount(down.db);
    const started = Date.now();
    const r = await clientFor(down.url)('GET', '/svc/data/ping', { key: a.key });
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(r.status, r.text).toBe(503);
    expect(gatewayCode(r)).toBe('service_unavailable');
    expect(r.text).not.toMatch(/127\.0\.0\.1|ECONN|postgres:|stack/);
    expect(await usedCredits(down.db, a.accountId)).toBe(0);
    expect((await ledgerRows(down.db, a.accountId)).filter((row) => row.state !== 'released')).toEqual([]);
  });
});
