// Platform incidents (issue 38, src/monitors/platform-incidents.ts). The rule on its own (a
// property against the rule as docs/monitoring.md states it), then the evaluation against a real
// PostgreSQL: a platform whose watched targets mostly answer not-found opens an incident, its
// items are told once, no target of it is retired while it lasts, and at its end the items are
// told once more and the not-found clocks restart. A platform watched on a few events, or with a
// small share failing, retires them one by one as before.
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { evaluateIncidents, incidentStep, readPlatforms, type IncidentRule, type PlatformReading } from '../../src/monitors/platform-incidents.ts';
import { recordFailure, retireTarget } from '../../src/monitors/target-status.ts';
import { platformIncidents } from '../../src/ops/monitors.ts';
import { databaseUrl, newAccount } from '../support/harness.ts';
import { insertWatchlistItem } from '../support/watchlist-rows.ts';

const RULE: IncidentRule = { share: 0.5, minTargets: 5, windowMs: 120_000 };

describe('the rule', () => {
  it('opens at MIN_TARGETS and SHARE failing together, closes below half the share', () => {
    const r = (targets: number, notFound: number, blocked = 0): PlatformReading => ({ platform: 'pf_07', targets, notFound, blocked });
    expect(incidentStep(r(8, 8), false, RULE)).toBe('open');
    expect(incidentStep(r(8, 3, 1), false, RULE)).toBe('stay'); // 4 failing: under MIN_TARGETS
    expect(incidentStep(r(10, 3, 2), false, RULE)).toBe('open'); // 5 of 10, blocked counted
    expect(incidentStep(r(11, 5), false, RULE)).toBe('stay'); // 45 %
    expect(incidentStep(r(4, 4), false, RULE)).toBe('stay'); // a platform watched on four events
    expect(incidentStep(r(8, 2), true, RULE)).toBe('stay'); // 25 %: not below half the share
    expect(incidentStep(r(8, 1), true, RULE)).toBe('close');
    expect(incidentStep(r(0, 0), true, RULE)).toBe('close'); // nobody watches it any more
  });

  it('random readings step as the rule says', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 200 }).chain((targets) =>
          fc.record({
            targets: fc.constant(targets),
            notFound: fc.integer({ min: 0, max: targets }),
            blockedShare: fc.double({ min: 0, max: 1, noNaN: true }),
            open: fc.boolean(),
            share: fc.constantFrom(0.3, 0.5, 0.8, 1),
            minTargets: fc.integer({ min: 2, max: 20 }),
          }),
        ),
        ({ targets, notFound, blockedShare, open, share, minTargets }) => {
          const blocked = Math.floor((targets - notFound) * blockedShare);
          const failing = notFound + blocked;
          const step = incidentStep({ platform: 'pf_01', targets, notFound, blocked }, open, { share, minTargets, windowMs: 1 });
          // Written from the text: open when at least minTargets and at least share x targets fail;
          // close when open and fewer than share/2 x targets fail, or none is watched.
          const expected = open ? (targets === 0 || failing * 2 < share * targets ? 'close' : 'stay') : failing >= minTargets && failing >= share * targets ? 'open' : 'stay';
          expect(step).toBe(expected);
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

let scratch: ScratchDatabase;
let db: Db;
/** Two accounts the items belong to in turn. */
let accounts: number[] = [];

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_platform_incidents', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 4 });
  accounts = [(await newAccount(db)).accountId, (await newAccount(db)).accountId];
});
afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});
beforeEach(async () => {
  await db.raw('TRUNCATE monitor_members, monitor_target_status, monitor_target_checks, monitor_platform_incidents, notifications');
});

let nextItem = 1_000;
/** `n` targets of `platform`, one item each (accounts 1 and 2 in turn); returns the target keys and item ids. */
async function watch(platform: string, n: number, extraItemsOnFirst = 0): Promise<{ targets: string[]; items: number[] }> {
  const targets: string[] = [];
  const items: number[] = [];
  for (let i = 0; i < n; i++) {
    const target = `${platform}:us:ev-${nextItem}`;
    targets.push(target);
    for (let k = 0; k < 1 + (i === 0 ? extraItemsOnFirst : 0); k++) {
      const accountId = accounts[nextItem++ % 2]!;
      const item = { website: platform, event: `https://${platform}.example/e/${target.split(':')[2]}`, region: 'us' };
      const itemId = (await insertWatchlistItem(db, { accountId, ...item })).id;
      items.push(itemId);
      await db('monitor_members').insert({
        item_id: itemId,
        account_id: accountId,
        target,
        platform,
        shard: 0,
        ref: JSON.stringify({}),
        item: JSON.stringify(item),
        config: JSON.stringify({}),
        version: 1,
      });
    }
  }
  return { targets, items };
}

const notFound = (target: string) =>
  recordFailure(db, { target, platform: target.split(':')[0]!, shard: 0, kind: 'failing', failure: 'not_found', failures: 1, blockedUntil: null, message: 'answered 404' });

async function messages(kind: string): Promise<{ item_id: number; state: string; incident_id: number }[]> {
  const rows: { payload: { item_id: number; state: string; incident_id: number } }[] = await db('notifications').where({ kind }).orderBy('id').select('payload');
  return rows.map((r) => r.payload);
}

/** Writes `target`'s last check `agoMs` before now, as the check log would. */
const checked = (target: string, agoMs: number, ok = true) =>
  db.raw(
    `INSERT INTO monitor_target_checks (target, checked_at, ok) VALUES (?, now() - make_interval(secs => ?), ?)
     ON CONFLICT (target) DO UPDATE SET checked_at = EXCLUDED.checked_at, ok = EXCLUDED.ok`,
    [target, agoMs / 1000, ok],
  );

/** When `target`'s not-found clock started. */
const clockOf = async (target: string): Promise<Date> => (await db('monitor_target_status').where({ target }).first('not_found_since')).not_found_since as Date;

describe('evaluation', () => {
  it('a platform answering not-found for every event: an incident, its items told once, nothing retired; at its end told again and the clocks restart', async () => {
    const gone = await watch('pf_07', 8, 1); // 9 items on 8 targets
    const healthy = await watch('pf_03', 6);
    await notFound(healthy.targets[0]!); // one gone event elsewhere: not an incident there
    for (const t of gone.targets) await notFound(t);
    // As if the clocks had run past the retirement time before the incident was seen.
    await db('monitor_target_status').where('platform', 'pf_07').update({ not_found_since: db.raw("now() - interval '2 hours'") });
    const oldSince = (await db('monitor_target_status').where({ target: gone.targets[0] }).first('not_found_since')).not_found_since as Date;

    const opened = await evaluateIncidents(db, RULE);
    expect(opened.map((c) => [c.platform, c.state, c.reading.targets, c.reading.notFound, c.itemsTold])).toEqual([['pf_07', 'failing', 8, 8, 9]]);
    expect(await evaluateIncidents(db, RULE)).toEqual([]); // once
    const told = await messages('platform_incident');
    expect(told.map((m) => [m.item_id, m.state]).sort()).toEqual(gone.items.map((id) => [id, 'failing']).sort());

    // The ops CLI's view: open, with how the platform stands now.
    expect(await platformIncidents(db, { windowMs: RULE.windowMs })).toMatchObject([
      { platform: 'pf_07', ended_at: null, opened_with: { targets: 8, not_found: 8, blocked: 0 }, items_told: 9, now: { targets: 8, not_found: 8, blocked: 0 } },
    ]);
    // Nothing of pf_07 is retired while it lasts, and its targets are to be polled on; pf_03's gone event is retired as before.
    for (const t of gone.targets) expect(await retireTarget(db, t, oldSince, RULE)).toEqual({ retired: false, told: 0, held: true, hold: 'incident_open' });
    await db('monitor_target_status').where({ target: healthy.targets[0] }).update({ not_found_since: db.raw("now() - interval '2 hours'") });
    const since3 = (await db('monitor_target_status').where({ target: healthy.targets[0] }).first('not_found_since')).not_found_since as Date;
    expect(await retireTarget(db, healthy.targets[0]!, since3, RULE)).toMatchObject({ retired: true, held: false });
    expect(Number((await db('monitor_target_status').where('platform', 'pf_07').whereNotNull('retired_at').count({ n: '*' }))[0]!.n)).toBe(0);

    // The platform answers again: 7 of 8 targets answered (their rows cleared), one still 404s.
    await db('monitor_target_status').whereIn('target', gone.targets.slice(1)).delete();
    const closed = await evaluateIncidents(db, RULE);
    expect(closed.map((c) => [c.platform, c.state, c.itemsTold])).toEqual([['pf_07', 'recovered', 9]]);
    expect(await evaluateIncidents(db, RULE)).toEqual([]);
    const all = await messages('platform_incident');
    expect(all.filter((m) => m.state === 'recovered').map((m) => m.item_id).sort()).toEqual([...gone.items].sort());
    expect(new Set(all.map((m) => m.incident_id)).size).toBe(1);
    // The one still answering 404: its clock restarted at the end, so the old reading no longer retires it.
    const restarted = (await db('monitor_target_status').where({ target: gone.targets[0] }).first('not_found_since')).not_found_since as Date;
    expect(restarted.getTime()).toBeGreaterThan(oldSince.getTime() + 3_600_000);
    expect(await retireTarget(db, gone.targets[0]!, oldSince, RULE)).toEqual({ retired: false, told: 0, held: true });
    // Its own full clock later: retired as before.
    expect(await retireTarget(db, gone.targets[0]!, restarted, RULE)).toMatchObject({ retired: true, held: false });
    expect(await platformIncidents(db, { windowMs: RULE.windowMs, platform: 'pf_07' })).toMatchObject([{ platform: 'pf_07', ended_at: expect.any(String), now: null }]);
    const incident = await db('monitor_platform_incidents').first();
    expect(incident).toMatchObject({ platform: 'pf_07', targets: 8, not_found: 8, blocked: 0, peak_failing: 8, items_told: 9, ended_at: expect.any(Date) });
  });

  it('a platform watched on a few events, or with a small share failing, opens none and retires as before', async () => {
    const few = await watch('pf_05', 4);
    const many = await watch('pf_09', 20);
    for (const t of few.targets) await notFound(t);
    for (const t of many.targets.slice(0, 9)) await notFound(t); // 45 %
    expect(await evaluateIncidents(db, RULE)).toEqual([]);
    const since = (await db('monitor_target_status').where({ target: few.targets[0] }).first('not_found_since')).not_found_since as Date;
    expect(await retireTarget(db, few.targets[0]!, since, RULE)).toMatchObject({ retired: true, held: false });
    // One more of pf_09 fails: 10 of 20 is the share.
    await notFound(many.targets[9]!);
    expect((await evaluateIncidents(db, RULE)).map((c) => [c.platform, c.state])).toEqual([['pf_09', 'failing']]);
  });

  it('failures older than the window do not count, and blocks count while their Retry-After lasts', async () => {
    const w = await watch('pf_04', 6);
    for (const t of w.targets) {
      await recordFailure(db, { target: t, platform: 'pf_04', shard: 0, kind: 'blocked', failure: 'blocked', failures: 1, blockedUntil: null, message: '429' });
    }
    await db('monitor_target_status').where('platform', 'pf_04').update({ updated_at: db.raw("now() - interval '10 minutes'") });
    expect(await evaluateIncidents(db, RULE)).toEqual([]);
    await db('monitor_target_status').where('platform', 'pf_04').update({ blocked_until: db.raw("now() + interval '5 minutes'") });
    expect((await evaluateIncidents(db, RULE)).map((c) => [c.platform, c.state, c.reading.blocked])).toEqual([['pf_04', 'failing', 6]]);
  });

  it('two evaluations at once open one incident and tell each item once', async () => {
    const w = await watch('pf_08', 6);
    for (const t of w.targets) await notFound(t);
    const [a, b] = await Promise.all([evaluateIncidents(db, RULE), evaluateIncidents(db, RULE)]);
    expect([...a, ...b].filter((c) => c.state === 'failing')).toHaveLength(1);
    expect(Number((await db('monitor_platform_incidents').count({ n: '*' }))[0]!.n)).toBe(1);
    expect((await messages('platform_incident')).length).toBe(6);
  });
});

describe('which platforms an evaluation reads', () => {
  // An evaluation reads only the platforms with a failing target or an open incident (a healthy
  // service then groups no monitor_members row). Its changes must be those of the rule applied
  // to every platform read in full, as readPlatforms reads them without that narrowing.
  it('changes exactly as the rule on every platform read in full would (property)', async () => {
    const PLATFORMS = ['pf_02', 'pf_03', 'pf_04'];
    const targetState = fc.constantFrom('ok', 'not_found', 'not_found_old', 'blocked', 'blocked_old', 'blocked_retry', 'retired');
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          // Two kinds of failure per platform at most, so a platform failing in one way only (which
          // one clause of the narrowing must catch on its own) comes up often.
          states: fc.tuple(...PLATFORMS.map(() => fc.tuple(targetState, targetState).chain(([a, b]) => fc.array(fc.constantFrom(a, b, 'ok'), { maxLength: 9 })))),
          open: fc.tuple(...PLATFORMS.map(() => fc.boolean())),
          unwatchedFailing: fc.boolean(),
        }),
        async ({ states, open, unwatchedFailing }) => {
          await db.raw('TRUNCATE monitor_members, monitor_target_status, monitor_target_checks, monitor_platform_incidents, notifications');
          for (const [p, platform] of PLATFORMS.entries()) {
            const w = await watch(platform, states[p]!.length);
            for (const [i, state] of states[p]!.entries()) {
              const target = w.targets[i]!;
              if (state === 'ok') continue;
              const blocked = state.startsWith('blocked');
              await recordFailure(db, { target, platform, shard: 0, kind: blocked ? 'blocked' : 'failing', failure: blocked ? 'blocked' : 'not_found', failures: 1, blockedUntil: null, message: 'x' });
              if (state.endsWith('_old')) await db('monitor_target_status').where({ target }).update({ updated_at: db.raw("now() - interval '10 minutes'") });
              if (state === 'blocked_retry') await db('monitor_target_status').where({ target }).update({ updated_at: db.raw("now() - interval '10 minutes'"), blocked_until: db.raw("now() + interval '5 minutes'") });
              if (state === 'retired') await db('monitor_target_status').where({ target }).update({ retired_at: db.raw('now()') });
            }
            if (open[p]) await db('monitor_platform_incidents').insert({ platform, targets: 1, not_found: 1, blocked: 0, peak_failing: 1 });
          }
          // A failing target nobody watches: its platform is read, and counts it nowhere.
          if (unwatchedFailing) await notFound('pf_02:us:nobody');
          const openBefore = new Set(PLATFORMS.filter((_, p) => open[p]));
          const expected = (await readPlatforms(db, RULE.windowMs))
            .map((r) => [r.platform, incidentStep(r, openBefore.has(r.platform), RULE)] as const)
            .filter(([, step]) => step !== 'stay')
            .map(([platform, step]) => [platform, step === 'open' ? 'failing' : 'recovered']);
          const changes = await evaluateIncidents(db, RULE);
          expect(changes.map((c) => [c.platform, c.state])).toEqual(expected);
        },
      ),
      { numRuns: 80 },
    );
  });
});

describe('a retirement and the platform around it', () => {
  // The race bench:alerts met on pf_01 (a retirement window of 8 s, a platform whose targets take
  // longer than that to be polled round): the first targets of an outage ran out their clocks
  // while the rest still read healthy from polls made before it began, were retired, and left the
  // incident short of its quorum.
  it('waits until every recently checked target of the platform has been checked since its clock started', async () => {
    const w = await watch('pf_01', 8);
    for (const t of w.targets) await checked(t, 30_000);
    const [first, ...rest] = w.targets as [string, ...string[]];
    await notFound(first);
    await db('monitor_target_status').where({ target: first }).update({ not_found_since: db.raw("now() - interval '10 seconds'") });
    const since = await clockOf(first);
    // The other seven were last heard 30 s ago, before this clock started: they may be failing too.
    expect(await retireTarget(db, first, since, RULE)).toEqual({ retired: false, told: 0, held: true, hold: 'platform_unheard' });
    // Six have answered since; one not yet.
    for (const t of rest.slice(1)) await checked(t, 1_000);
    expect(await retireTarget(db, first, since, RULE)).toMatchObject({ held: true, hold: 'platform_unheard' });
    // A target not checked within the window says nothing either way (its poller is gone or backs off).
    await checked(rest[0]!, RULE.windowMs + 60_000);
    expect(await retireTarget(db, first, since, RULE)).toMatchObject({ retired: true, told: 1, held: false });
  });

  it('waits while the platform, read now, meets the rule for an incident the next evaluation opens; then the incident holds it', async () => {
    const w = await watch('pf_01', 8);
    const [first, ...rest] = w.targets as [string, ...string[]];
    await notFound(first);
    await db('monitor_target_status').where({ target: first }).update({ not_found_since: db.raw("now() - interval '10 seconds'") });
    const since = await clockOf(first);
    // Four more answered not-found since: five of eight, the rule's quorum.
    for (const t of rest.slice(0, 4)) {
      await notFound(t);
      await checked(t, 0);
    }
    for (const t of rest.slice(4)) await checked(t, 0);
    expect(await retireTarget(db, first, since, RULE)).toEqual({ retired: false, told: 0, held: true, hold: 'incident_due' });
    expect((await evaluateIncidents(db, RULE)).map((c) => [c.platform, c.state])).toEqual([['pf_01', 'failing']]);
    expect(await retireTarget(db, first, since, RULE)).toMatchObject({ held: true, hold: 'incident_open' });
    expect(Number((await db('notifications').where({ kind: 'target_retired' }).count({ n: '*' }))[0]!.n)).toBe(0);
  });

  it('retires a gone event of a healthy platform once the rest has answered', async () => {
    const w = await watch('pf_01', 8);
    const [first, ...rest] = w.targets as [string, ...string[]];
    await notFound(first);
    await db('monitor_target_status').where({ target: first }).update({ not_found_since: db.raw("now() - interval '10 seconds'") });
    for (const t of rest) await checked(t, 0);
    expect(await retireTarget(db, first, await clockOf(first), RULE)).toMatchObject({ retired: true, told: 1, held: false });
  });
});
