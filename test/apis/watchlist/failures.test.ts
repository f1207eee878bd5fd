// Upstream failures of the Watchlist API (spec 7.4): a database that times out answers 504, one
// that cannot be reached 502, anything unexpected 500, each as `{error}` with a fixed message
// (never the underlying error), and a failed write leaves nothing behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../../db/connection.ts';
import { call, databaseUrl, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../../support/harness.ts';
import { changeCount, changesOf, createItem, dbRow, expectWatchlistError, rowCount, target } from './helpers.ts';

// Only a locked row makes a statement run out of it; every other statement of this gateway's
// (its admission's too) must finish inside it on a loaded machine.
const STATEMENT_TIMEOUT_MS = 2_000;

let gw: TestGateway;
let acct: TestAccount;

beforeAll(async () => {
  gw = await startTestGateway({ env: { DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS) } });
  acct = await newAccount(gw.db);
});

afterAll(async () => {
  await gw?.close();
});

/** The same server, another database (where no watchlist tables exist). */
function otherDatabaseUrl(name: string): string {
  const u = new URL(databaseUrl());
  u.pathname = `/${name}`;
  return u.toString();
}

describe('database failures', () => {
  it('answers 504 {error} when a PATCH times out waiting for the row, and changes nothing', async () => {
    const item = await createItem(gw.url, acct.key);
    const changes = await changesOf(gw.db, { item_id: item.id });
    const trx = await gw.db.transaction();
    try {
      await trx('watchlist_items').where({ id: item.id }).forUpdate().first();
      const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { priority: 5 } });
      const msg = expectWatchlistError(r, 504);
      expect(msg).not.toMatch(/canceling statement|statement timeout|select|watchlist_items/i);
    } finally {
      await trx.rollback();
    }
    expect((await dbRow(gw.db, item.id))!.priority).toBe(0);
    expect(await changesOf(gw.db, { item_id: item.id })).toEqual(changes);
    // Once the row is free the same PATCH goes through.
    const ok = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { priority: 5 } });
    expect(ok.status, ok.text).toBe(200);
  });

  it('answers 504 {error} when a DELETE times out, and the item stays', async () => {
    const item = await createItem(gw.url, acct.key);
    const trx = await gw.db.transaction();
    try {
      await trx('watchlist_items').where({ id: item.id }).forUpdate().first();
      expectWatchlistError(await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: acct.key }), 504);
    } finally {
      await trx.rollback();
    }
    expect((await dbRow(gw.db, item.id))!.deleted).toBe(false);
    expect((await call(gw.url, 'GET', `/watchlist/${item.id}`, { key: acct.key })).status).toBe(200);
  });

  it('answers 500 {error: "internal error"} without details when the tables are missing, storing nothing', async () => {
    const wrong = createDb({ connectionString: otherDatabaseUrl('postgres'), poolMax: 2 });
    const broken = await startTestGateway({ services: { db: wrong } });
    try {
      const a = await newAccount(broken.db);
      const rows = await rowCount(gw.db, a.accountId);
      for (const [method, path, body] of [
        ['GET', '/watchlist'],
        ['POST', '/watchlist', target()],
        ['GET', '/watchlist/1'],
        ['PATCH', '/watchlist/1', { priority: 1 }],
        ['DELETE', '/watchlist/1'],
      ] as [string, string, unknown?][]) {
        const r = await call(broken.url, method, path, { key: a.key, body });
        const msg = expectWatchlistError(r, 500);
        expect(msg).toBe('internal error');
      }
      expect(await rowCount(gw.db, a.accountId)).toBe(rows);
      expect(await changeCount(gw.db, a.accountId)).toBe(0);
      // The health probe only needs a working connection, which this one is.
      expect((await call(broken.url, 'GET', '/watchlist/health', { key: a.key })).status).toBe(200);
    } finally {
      await broken.close();
      await wrong.destroy();
    }
  });

  it('answers 502 {error} when the database cannot be reached; health answers 503 service_unavailable', async () => {
    const u = new URL(databaseUrl());
    u.port = '1';
    const unreachable = createDb({ connectionString: u.toString(), poolMax: 1 });
    const broken = await startTestGateway({ services: { db: unreachable } });
    try {
      const a = await newAccount(broken.db);
      const health = await call(broken.url, 'GET', '/watchlist/health', { key: a.key });
      // Health reports its dependency in the gateway envelope (issue 14; test/apis/watchlist/health.test.ts).
      expect(health.status, health.text).toBe(503);
      expect(health.body.error.code).toBe('service_unavailable');
      expect(health.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|:1\b/);
      expectWatchlistError(await call(broken.url, 'POST', '/watchlist', { key: a.key, body: target() }), 502);
      expect(await rowCount(gw.db, a.accountId)).toBe(0);
    } finally {
      await broken.close();
      await unreachable.destroy();
    }
  }, 30_000);
});
