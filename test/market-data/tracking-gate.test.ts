// The tracking gate (src/market-data/tracking-lifecycle.ts trackingGate) on real PostgreSQL, for
// trackings from before accounts were recorded (`unattributed`, migration 027; issue 38): one that
// no account claims counts as held and served for TRACKING_UNATTRIBUTED_MAX_MS after its wait
// began (`unattributed_since`, migration 034), then ends as `untracked` like any tracking no
// account holds, its event's date however far away; a tracking with links is not affected.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { trackingGate, type TrackingLimits } from '../../src/market-data/tracking-lifecycle.ts';
import { trackingWorkflowId } from '../../src/market-data/tracking-ref.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_tracking_gate', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 2 });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

const DAY = 86_400_000;
const limits: TrackingLimits = { endAfterEventMs: DAY, undatedMaxMs: 30 * DAY, unattributedMaxMs: 30 * DAY };
const EPOCH = 'chain-1';
let seq = 0;

/** A running tracking scraped by this chain, its event a year away: only the claim rule can end it soon. */
async function tracking(opts: { unattributedSinceDaysAgo?: number; linkedAccount?: number } = {}) {
  const externalId = `E-${Date.now()}${++seq}`;
  const [event] = await db('events')
    .insert({ id: 1_000 + seq, name: `gate ${seq}`, event_date: new Date(Date.now() + 365 * DAY) })
    .returning('id');
  const unattributed = opts.unattributedSinceDaysAgo !== undefined;
  const [row] = await db('tracked_events')
    .insert({
      marketplace: 'marketplace_a',
      external_id: externalId,
      workflow_id: trackingWorkflowId('marketplace_a', externalId),
      status: 'active',
      event_id: event.id,
      tick_epoch: EPOCH,
      last_tick: 3,
      // Started long ago, as every tracking from before migration 027 was.
      started_at: new Date(Date.now() - 200 * DAY),
      unattributed,
      unattributed_since: unattributed ? new Date(Date.now() - opts.unattributedSinceDaysAgo! * DAY) : null,
    })
    .returning('id');
  if (opts.linkedAccount !== undefined) await db('tracked_event_accounts').insert({ tracked_event_id: row.id, account_id: opts.linkedAccount });
  const gate = () => trackingGate(db, { marketplace: 'marketplace_a', externalId, epoch: EPOCH }, limits);
  const record = () => db('tracked_events').where({ id: row.id }).first();
  return { gate, record };
}

describe('the tracking gate: unattributed trackings', () => {
  it('scrapes one still awaiting its claim, whatever its start', async () => {
    const t = await tracking({ unattributedSinceDaysAgo: 29 });
    expect((await t.gate()).decision).toEqual({ action: 'scrape' });
    expect(await t.record()).toMatchObject({ status: 'active', ended_at: null });
  });

  it('ends one nobody claimed within TRACKING_UNATTRIBUTED_MAX_MS as untracked, recorded, its event a year away', async () => {
    const t = await tracking({ unattributedSinceDaysAgo: 31 });
    expect((await t.gate()).decision).toEqual({ action: 'end', reason: 'untracked', record: true });
    expect(await t.record()).toMatchObject({ status: 'ended', end_reason: 'untracked', ended_at: expect.any(Date) });
    // Ended stays ended: a stale tick of its chain records nothing more.
    expect((await t.gate()).decision).toMatchObject({ action: 'end', record: false });
  });

  it('leaves a claimed tracking (a live link, not unattributed) to its account: scraped while served, paused while not', async () => {
    const [account] = await db('accounts').insert({ name: 'gate' }).returning('id');
    // No billing account: not served.
    const t = await tracking({ linkedAccount: Number(account.id) });
    expect((await t.gate()).decision).toEqual({ action: 'pause' });
    expect(await t.record()).toMatchObject({ status: 'active', ended_at: null });
  });

  it('refuses an unattributed tracking with no start to its wait (the rule needs one)', async () => {
    await expect(
      db('tracked_events').insert({ marketplace: 'marketplace_a', external_id: `E-bad${++seq}`, workflow_id: 'track:bad', unattributed: true }),
    ).rejects.toThrow(/tracked_events_unattributed_since/);
  });
});
