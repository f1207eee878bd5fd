// Discord deliveries end to end (issue 15): a Discord-shaped loopback receiver gets
// execute-webhook JSON whose content mentions the item's roles, whose allowed_mentions permits
// exactly those roles, and whose embed carries the change; a 429 with Discord's `retry_after`
// is honoured. Discord webhooks are not signed (their URL is the secret).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, eventually, newAccount, type TestAccount } from '../../support/harness.ts';
import { startReceiver, type Receiver } from '../../support/webhook-receiver.ts';
import { useWebhookStack } from '../../support/webhook-stack.ts';
import { createItem } from '../watchlist/helpers.ts';
import { createWebhook } from './helpers.ts';

const stack = useWebhookStack({ scheduleMs: [200, 200, 200] });
let acct: TestAccount;
let rx: Receiver;

beforeAll(async () => {
  acct = await newAccount(stack.db);
  rx = await startReceiver();
});

afterAll(async () => {
  await rx?.close();
});

async function delivered(nid: number) {
  return eventually(async () => {
    const d = await stack.db('webhook_deliveries').where({ notification_id: nid }).first();
    return d && d.state !== 'pending' ? d : undefined;
  });
}

describe('discord delivery', () => {
  it('mentions the item\'s roles, allows exactly those, and describes the change in one embed', async () => {
    const hook = await createWebhook(stack.gateway.url, acct.key, { kind: 'discord', url: rx.url });
    const item = await createItem(stack.gateway.url, acct.key, { event: 'https://pf03.example/e/42', webhook_setting_id: hook.id, role_id: 111, roles_json: ['222', 333, 'not-a-role', { id: '444' }] });
    const nid = await stack.notify(acct.accountId, item.id, {
      section: 'Floor A',
      currency: 'EUR',
      before: { stock: 1, min_price: 50, avg_price: 55 },
      after: { stock: 5, min_price: 45, avg_price: 52.5 },
    });
    expect((await delivered(nid)).state).toBe('delivered');
    const got = rx.received.at(-1)!;
    expect(got.headers['webhook-signature']).toBeUndefined();
    const msg = JSON.parse(got.body);
    expect(msg.content).toMatch(/^<@&111> <@&222> <@&333> <@&444> /);
    expect(msg.allowed_mentions).toEqual({ parse: [], roles: ['111', '222', '333', '444'] });
    expect(msg.embeds).toHaveLength(1);
    const fields = Object.fromEntries(msg.embeds[0].fields.map((f: { name: string; value: string }) => [f.name, f.value]));
    expect(fields).toMatchObject({
      Event: 'https://pf03.example/e/42',
      Platform: 'pf_03',
      Section: 'Floor A',
      Change: 'stock_increase',
      Before: 'stock 1, min price 50 EUR, avg price 55 EUR',
      After: 'stock 5, min price 45 EUR, avg price 52.5 EUR',
    });
  });

  it('mentions a snowflake role id past 2^53 - 1 digit for digit, from role_id and from roles_json (issue 24)', async () => {
    const hook = await createWebhook(stack.gateway.url, acct.key, { kind: 'discord', url: rx.url });
    const item = await createItem(stack.gateway.url, acct.key, {
      webhook_setting_id: hook.id,
      role_id: '112233445566778899',
      roles_json: { roles: ['18446744073709551615', { id: '99887766554433221' }] },
    });
    expect(item.role_id).toBe('112233445566778899');
    const nid = await stack.notify(acct.accountId, item.id);
    expect((await delivered(nid)).state).toBe('delivered');
    const msg = JSON.parse(rx.received.at(-1)!.body);
    expect(msg.content).toMatch(/^<@&112233445566778899> <@&18446744073709551615> <@&99887766554433221> /);
    expect(msg.allowed_mentions).toEqual({ parse: [], roles: ['112233445566778899', '18446744073709551615', '99887766554433221'] });
  });

  it('waits as long as Discord\'s retry_after says on a 429', async () => {
    const hook = await createWebhook(stack.gateway.url, acct.key, { kind: 'discord', url: rx.url });
    const item = await createItem(stack.gateway.url, acct.key, { webhook_setting_id: hook.id });
    const before = rx.received.length;
    rx.script = [{ status: 429, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'You are being rate limited.', retry_after: 1.5, global: false }) }];
    const nid = await stack.notify(acct.accountId, item.id);
    expect((await delivered(nid)).state).toBe('delivered');
    const mine = rx.received.slice(before);
    expect(mine).toHaveLength(2);
    expect(mine[1]!.at - mine[0]!.at).toBeGreaterThanOrEqual(1_400);
    const msg = JSON.parse(mine[1]!.body);
    expect(msg.allowed_mentions).toEqual({ parse: [], roles: [] });
  });

  it('pings a discord webhook from POST /webhooks/{id}/test', async () => {
    const hook = await createWebhook(stack.gateway.url, acct.key, { kind: 'discord', url: rx.url });
    const r = await call(stack.gateway.url, 'POST', `/webhooks/${hook.id}/test`, { key: acct.key });
    expect(r.status, r.text).toBe(201);
    expect(r.body.attempts[0]).toMatchObject({ status_code: 204 });
    expect(JSON.parse(rx.received.at(-1)!.body)).toMatchObject({ allowed_mentions: { parse: [] } });
  });
});
