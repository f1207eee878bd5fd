// A watchlist item's webhook_setting_id (issue 15): it must name an active webhook of the same
// account (400 otherwise, nothing stored), and deleting a webhook sets it back to null on every
// item naming it, each as an ordinary recorded update (the monitors and the stream see it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, newAccount, startTestGateway, type TestGateway } from '../../support/harness.ts';
import { changeCount, changesOf, createItem, dbRow, expectItem, rowCount, specPart, target } from '../watchlist/helpers.ts';
import { createWebhook, expectError, OPEN_ENV } from './helpers.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ env: OPEN_ENV });
});

afterAll(async () => {
  await gw?.close();
});

describe('webhook_setting_id', () => {
  it('takes an active webhook of the account, on create and PATCH', async () => {
    const a = await newAccount(gw.db);
    const one = await createWebhook(gw.url, a.key);
    const two = await createWebhook(gw.url, a.key, { kind: 'discord' });
    const item = await createItem(gw.url, a.key, { webhook_setting_id: one.id });
    expect(item.webhook_setting_id).toBe(one.id);
    const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: a.key, body: { webhook_setting_id: two.id } });
    expect(expectItem(r.body).webhook_setting_id).toBe(two.id);
    const cleared = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: a.key, body: { webhook_setting_id: null } });
    expect(expectItem(cleared.body).webhook_setting_id).toBeNull();
  });

  it('refuses an unknown id, another account\'s webhook, an inactive one and a deleted one, storing nothing', async () => {
    const a = await newAccount(gw.db);
    const b = await newAccount(gw.db);
    const others = await createWebhook(gw.url, b.key);
    const inactive = await createWebhook(gw.url, a.key, { active: false });
    const deleted = await createWebhook(gw.url, a.key);
    await call(gw.url, 'DELETE', `/webhooks/${deleted.id}`, { key: a.key });
    const item = await createItem(gw.url, a.key);
    for (const id of [Number.MAX_SAFE_INTEGER, others.id, inactive.id, deleted.id]) {
      const rows = await rowCount(gw.db, a.accountId);
      const changes = await changeCount(gw.db, a.accountId);
      const created = await call(gw.url, 'POST', '/watchlist', { key: a.key, body: target({ webhook_setting_id: id }) });
      expect(expectError(created, 400)).toMatch(/^webhook_setting_id: /);
      const before = await dbRow(gw.db, item.id);
      const patched = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: a.key, body: { webhook_setting_id: id } });
      expect(expectError(patched, 400)).toMatch(/^webhook_setting_id: /);
      expect(await dbRow(gw.db, item.id)).toEqual(before);
      expect(await rowCount(gw.db, a.accountId)).toBe(rows);
      expect(await changeCount(gw.db, a.accountId)).toBe(changes);
    }
  });

  it('keeps naming a webhook deactivated later (its deliveries stop; the item is not rewritten)', async () => {
    const a = await newAccount(gw.db);
    const hook = await createWebhook(gw.url, a.key);
    const item = await createItem(gw.url, a.key, { webhook_setting_id: hook.id });
    await call(gw.url, 'PATCH', `/webhooks/${hook.id}`, { key: a.key, body: { active: false } });
    const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: a.key, body: { priority: 5 } });
    expect(expectItem(r.body)).toMatchObject({ priority: 5, webhook_setting_id: hook.id });
  });
});

describe('DELETE /webhooks/{id} and the items naming it', () => {
  it('sets webhook_setting_id to null on each live item naming it, recorded as an update; other items untouched', async () => {
    const a = await newAccount(gw.db);
    const gone = await createWebhook(gw.url, a.key);
    const kept = await createWebhook(gw.url, a.key);
    const i1 = await createItem(gw.url, a.key, { webhook_setting_id: gone.id });
    const i2 = await createItem(gw.url, a.key, { webhook_setting_id: gone.id, priority: 9 });
    const i3 = await createItem(gw.url, a.key, { webhook_setting_id: kept.id });
    expect((await call(gw.url, 'DELETE', `/webhooks/${gone.id}`, { key: a.key })).status).toBe(204);
    for (const it of [i1, i2]) {
      const now = expectItem((await call(gw.url, 'GET', `/watchlist/${it.id}`, { key: a.key })).body);
      expect(now.webhook_setting_id).toBeNull();
      expect(now.priority).toBe(it.priority);
      expect(now.updated_at > it.updated_at).toBe(true);
      const changes = await changesOf(gw.db, { item_id: it.id });
      expect(changes.map((c) => c.op)).toEqual(['create', 'update']);
      expect(changes[1]!.item).toEqual(specPart(now));
    }
    const untouched = expectItem((await call(gw.url, 'GET', `/watchlist/${i3.id}`, { key: a.key })).body);
    expect(untouched).toEqual(i3);
    // The stream log carries the update for the account's clients.
    const logged = await gw.db('notifications').where({ account_id: a.accountId, kind: 'watchlist' }).count('* as n').first();
    expect(Number(logged?.n)).toBe(5);
  });
});
