// A delivery whose send succeeded but whose record the database refused for a moment (issue 39:
// in the rehearsal's Temporal outage PostgreSQL reached max_connections, and 9 messages reached
// their receivers twice under one webhook-id). The record is retried, not the send: the receiver
// gets the message once, and the delivery ends `delivered` with one attempt on record. The
// database's refusal is real: a trigger fails the record's first writes, counted by a sequence
// (a rolled-back transaction keeps its nextval), so the test writes down how many fail.
import { afterAll, describe, expect, it } from 'vitest';
import { eventually, newAccount } from '../../support/harness.ts';
import { startReceiver, type Receiver } from '../../support/webhook-receiver.ts';
import { useWebhookStack } from '../../support/webhook-stack.ts';
import { createItem } from '../watchlist/helpers.ts';
import { createWebhook } from './helpers.ts';

const stack = useWebhookStack({ scheduleMs: [300, 300, 300, 300, 300], timeoutMs: 5_000, roundMaxMs: 200 });
const REFUSED_RECORDS = 3;

let receiver: Receiver | undefined;
afterAll(async () => {
  await receiver?.close();
});

describe('an attempt sent but not recorded', { timeout: 60_000 }, () => {
  it('is recorded again, not sent again: one request at the receiver, one attempt on record', async () => {
    const acct = await newAccount(stack.db, { plan: 'enterprise' });
    const rx = (receiver = await startReceiver());
    const hook = await createWebhook(stack.gateway.url, acct.key, { url: rx.url });
    rx.secrets = [hook.secret as string];
    const item = await createItem(stack.gateway.url, acct.key, { webhook_setting_id: hook.id });
    await stack.db.raw(`
      CREATE SEQUENCE test_record_refusals;
      CREATE FUNCTION test_refuse_record() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('test_record_refusals') <= ${REFUSED_RECORDS} THEN RAISE EXCEPTION 'test: the record is refused'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_refuse_record BEFORE UPDATE ON webhook_deliveries
        FOR EACH ROW WHEN (NEW.attempt_count > OLD.attempt_count) EXECUTE FUNCTION test_refuse_record();`);
    try {
      const nid = await stack.notify(acct.accountId, item.id);
      const delivery = await eventually(async () => {
        const d = await stack.db('webhook_deliveries').where({ notification_id: nid }).first();
        return d?.state === 'delivered' ? d : undefined;
      }, 30_000);
      const refused = Number((await stack.db.raw('SELECT last_value FROM test_record_refusals')).rows[0].last_value);
      // The refusals did happen (the check could pass by refusing nothing otherwise).
      expect(refused).toBeGreaterThan(REFUSED_RECORDS);
      expect(rx.received).toHaveLength(1);
      expect(delivery.attempt_count).toBe(1);
      expect(await stack.db('webhook_attempts').where({ delivery_id: delivery.id }).count('* as n').first()).toEqual({ n: 1 });
    } finally {
      await stack.db.raw('DROP TRIGGER test_refuse_record ON webhook_deliveries; DROP FUNCTION test_refuse_record(); DROP SEQUENCE test_record_refusals;');
    }
  });
});
