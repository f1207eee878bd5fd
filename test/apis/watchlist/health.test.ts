// GET /watchlist/health reports what the Watchlist API depends on (issue 14): its database. When
// that database cannot be reached it answers 503 service_unavailable in the gateway envelope
// (spec 7.1) within a few seconds; the route is free, so nothing is ever billed. Real PostgreSQL:
// keys and billing stay on the live database, only the Watchlist's handle points at a dead port.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/connection.ts';
import { newAccount, startTestGateway, type TestGateway } from '../../support/harness.ts';
import { clientFor, GATEWAY_ENV, gatewayCode, ledgerRows, unreachableDb, usedCredits } from '../../support/gateway-helpers.ts';

describe('GET /watchlist/health', () => {
  let gw: TestGateway;
  let down: TestGateway;
  let deadDb: Db;
  beforeAll(async () => {
    gw = await startTestGateway({ env: GATEWAY_ENV });
    deadDb = unreachableDb();
    down = await startTestGateway({ env: GATEWAY_ENV, services: { db: deadDb } });
  });
  afterAll(async () => {
    await gw?.close();
    await down?.close();
    await deadDb?.destroy();
  });

  it('answers 200 {status: "ok"} while its database answers', async () => {
    const a = await newAccount(gw.db);
    const r = await clientFor(gw.url)('GET', '/watchlist/health', { key: a.key });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ status: 'ok' });
  });

  it('503 service_unavailable in the gateway envelope, within the deadline, when its database cannot be reached', async () => {
    const a = await newAccount(gw.db);
    const started = Date.now();
    const r = await clientFor(down.url)('GET', '/watchlist/health', { key: a.key });
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(r.status, r.text).toBe(503);
    expect(gatewayCode(r)).toBe('service_unavailable');
    expect(r.text).not.toMatch(/127\.0\.0\.1|ECONN|postgres:|stack/);
    expect(await usedCredits(gw.db, a.accountId)).toBe(0);
    expect(await ledgerRows(gw.db, a.accountId)).toEqual([]);
  });
});
