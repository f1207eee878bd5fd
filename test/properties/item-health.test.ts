// Property test of an item's health fields (issue 38) through the real gateway and PostgreSQL:
// whatever the monitors' tables say of the item's target (its last check, its failure row,
// retired or revived, its snapshots, its member row, the account's served state, the item paused,
// a platform incident), GET /watchlist/{id} and GET /watchlist answer the three fields with the
// types the served OpenAPI document gives them (checked against the document's own JSON Schema,
// not the zod schemas behind it), and these hold, read from the issue:
//   - `pending` has both times null, and an item with no check on record is pending or paused;
//   - `paused` exactly when task_active is false or the account is not served;
//   - `ok` has a last_checked_at;
//   - last_changed_at is null while fewer than two versions of the content are stored;
//   - the list carries the same item, fields and values.
// The states are written straight into the tables, as the pollers and the sweep would leave them.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { APIS } from '../../src/apis/index.ts';
import { buildOpenApi } from '../../src/gateway/openapi.ts';
import { parseEventRef, targetKey } from '../../src/platform/event-ref.ts';
import { CHECK_STATUS_VALUES, HEALTH_FIELDS } from '../apis/watchlist/helpers.ts';
import { call, databaseUrl, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../support/harness.ts';

const RUNS = 200;

let scratch: ScratchDatabase;
let gw: TestGateway;
let acct: TestAccount;
let itemId: number;
let target: string;
let incidents: boolean;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_item_health', databaseUrl());
  gw = await startTestGateway({ env: { DATABASE_URL: scratch.url } });
  acct = await newAccount(gw.db);
  const event = 'https://pf03.example/e/health-property';
  const r = await call(gw.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
  expect(r.status, r.text).toBe(201);
  itemId = r.body.id as number;
  const ref = parseEventRef('pf_03', event, 'fr');
  if (!ref.ok) throw new Error(ref.message);
  target = targetKey(ref.ref);
  // The platform incidents are another change's table (migration 032): used when it is there.
  incidents = Boolean((await gw.db.raw(`SELECT to_regclass('monitor_platform_incidents') IS NOT NULL AS present`)).rows[0].present);
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await scratch?.drop();
});

// ---- the OpenAPI document's schemas of the three fields, and a checker for what they use ------

type JsonSchema = { type?: string | string[]; enum?: unknown[]; pattern?: string; anyOf?: JsonSchema[]; format?: string; description?: string };

/** Whether `v` matches `s`, for the keywords these fields' schemas use (anyOf, type, enum, pattern; format as its pattern says). */
function matches(s: JsonSchema, v: unknown): boolean {
  const known = new Set(['type', 'enum', 'pattern', 'anyOf', 'format', 'description']);
  for (const k of Object.keys(s)) if (!known.has(k)) throw new Error(`the checker does not know the keyword ${k}`);
  if (s.anyOf && !s.anyOf.some((x) => matches(x, v))) return false;
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    const actual = v === null ? 'null' : typeof v;
    if (!types.includes(actual)) return false;
  }
  if (s.enum && !s.enum.includes(v)) return false;
  if (s.pattern !== undefined && (typeof v !== 'string' || !new RegExp(s.pattern, 'u').test(v))) return false;
  if (s.format === 'date-time' && typeof v === 'string' && !Number.isFinite(Date.parse(v))) return false;
  return true;
}

function healthSchemas(): Record<string, JsonSchema> {
  const doc = buildOpenApi(
    APIS.flatMap((a) => a.routes),
    { localPort: 8080 },
  ) as { components: { schemas: Record<string, { properties: Record<string, JsonSchema>; required: string[] }> } };
  const item = doc.components.schemas.WatchlistItem!;
  for (const f of HEALTH_FIELDS) expect(item.required, f).toContain(f);
  return Object.fromEntries(HEALTH_FIELDS.map((f) => [f, item.properties[f]!]));
}

// ---- the states -------------------------------------------------------------------------------

const instant = fc.date({ min: new Date('2001-01-01T00:00:00Z'), max: new Date('2090-12-31T00:00:00Z'), noInvalidDate: true });
const FAILURE_KINDS = ['not_found', 'upstream', 'attempt_timeout', 'blocked', 'browser_missing', 'internal', 'parse', null];

// Weighted towards a monitored item, so that every status comes up in a run.
const stateArb = fc.record({
  taskActive: fc.constantFrom(true, true, true, false),
  served: fc.constantFrom<boolean | null>(true, true, null, false),
  member: fc.constantFrom('baselined', 'baselined', 'waiting', 'none'),
  memberUpdatedAt: instant,
  check: fc.option(fc.record({ at: instant, ok: fc.constantFrom(true, true, false) }), { nil: null, freq: 4 }),
  status: fc.option(
    fc.record({
      kind: fc.constantFrom('blocked', 'failing', 'retired'),
      lastFailure: fc.constantFrom(...FAILURE_KINDS),
      notFoundSince: fc.option(instant, { nil: null }),
      retiredAt: instant,
      updatedAt: instant,
    }),
    { nil: null, freq: 2 },
  ),
  snapshots: fc.array(instant, { maxLength: 3 }),
  incident: fc.constantFrom('none', 'open', 'ended'),
});
type State = typeof stateArb extends fc.Arbitrary<infer T> ? T : never;

/**
 * One state per status, run before the random ones: the rarest statuses (not_found needs a
 * failing target whose last failure was a 404, no open incident, the item active and served)
 * come up in only about 1 random state in 100, so a coverage check on random states alone
 * failed a full run (not_found unseen in 100 runs).
 */
const at = (iso: string) => new Date(iso);
const healthy: State = {
  taskActive: true,
  served: true,
  member: 'baselined',
  memberUpdatedAt: at('2026-01-01T00:00:00Z'),
  check: { at: at('2026-01-02T00:00:00Z'), ok: true },
  status: null,
  snapshots: [at('2026-01-01T00:00:00Z'), at('2026-01-01T01:00:00Z')],
  incident: 'none',
};
const failingStatus = (kind: NonNullable<State['status']>['kind'], lastFailure: string | null): State['status'] => ({
  kind,
  lastFailure,
  notFoundSince: lastFailure === 'not_found' ? at('2026-01-01T12:00:00Z') : null,
  retiredAt: at('2026-01-01T18:00:00Z'),
  updatedAt: at('2026-01-02T00:00:00Z'),
});
const EXAMPLES: [State][] = [
  [healthy],
  [{ ...healthy, member: 'none', check: null, snapshots: [] }],
  [{ ...healthy, taskActive: false }],
  [{ ...healthy, served: false }],
  [{ ...healthy, status: failingStatus('blocked', 'blocked') }],
  [{ ...healthy, status: failingStatus('failing', 'not_found') }],
  [{ ...healthy, status: failingStatus('failing', 'upstream') }],
  [{ ...healthy, status: failingStatus('failing', 'not_found'), incident: 'open' }],
  [{ ...healthy, status: { ...failingStatus('retired', 'not_found')!, retiredAt: at('2090-01-01T00:00:00Z') } }],
];

/** Writes `s` as the pollers, the relay and the sweep would have left it. */
async function write(s: State): Promise<void> {
  const db = gw.db;
  await db('watchlist_items').where({ id: itemId }).update({ task_active: s.taskActive });
  await db('account_service').where({ account_id: acct.accountId }).delete();
  if (s.served !== null) await db('account_service').insert({ account_id: acct.accountId, served: s.served });
  await db('monitor_members').where({ item_id: itemId }).delete();
  await db('monitor_target_checks').where({ target }).delete();
  await db('monitor_target_status').where({ target }).delete();
  await db('target_snapshots').where({ target }).delete();
  if (incidents) await db('monitor_platform_incidents').where({ platform: 'pf_03' }).delete();
  const snapshotIds: number[] = [];
  for (const [i, at] of s.snapshots.entries()) {
    const [row] = await db('target_snapshots').insert({ target, hash: `h${i}`, data: '{}', scraped_at: at }).returning('id');
    snapshotIds.push(Number(row.id));
  }
  if (s.member !== 'none') {
    await db('monitor_members').insert({
      item_id: itemId,
      account_id: acct.accountId,
      target,
      platform: 'pf_03',
      shard: 0,
      ref: '{}',
      item: '{}',
      config: '{}',
      version: 1,
      baseline_snapshot_id: s.member === 'baselined' ? (snapshotIds.at(-1) ?? 1) : null,
      updated_at: s.memberUpdatedAt,
    });
  }
  if (s.check) await db('monitor_target_checks').insert({ target, checked_at: s.check.at, ok: s.check.ok });
  if (s.status) {
    const retired = s.status.kind === 'retired';
    await db('monitor_target_status').insert({
      target,
      platform: 'pf_03',
      shard: 0,
      kind: s.status.kind,
      failures: 1,
      last_error: 'x',
      last_failure: s.status.lastFailure,
      not_found_since: s.status.notFoundSince,
      retired_at: retired ? s.status.retiredAt : null,
      updated_at: s.status.updatedAt,
    });
  }
  if (incidents && s.incident !== 'none') {
    await db('monitor_platform_incidents').insert({
      platform: 'pf_03',
      ended_at: s.incident === 'ended' ? new Date() : null,
      targets: 10,
      not_found: 10,
      blocked: 0,
      peak_failing: 10,
    });
  }
}

describe('an item’s health fields', () => {
  it('match the OpenAPI document’s schema, and the issue’s rules, in any state of the monitors', { timeout: 120_000 }, async () => {
    const schemas = healthSchemas();
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(stateArb, async (s) => {
        await write(s);
        const one = await call(gw.url, 'GET', `/watchlist/${itemId}`, { key: acct.key });
        expect(one.status, one.text).toBe(200);
        const item = one.body as Record<string, unknown>;
        for (const f of HEALTH_FIELDS) expect(matches(schemas[f]!, item[f]), `${f}: ${JSON.stringify(item[f])}`).toBe(true);
        expect(CHECK_STATUS_VALUES).toContain(item.check_status);
        seen.add(item.check_status as string);

        const served = s.served ?? true; // no row yet: account_served(), and the account is served
        expect(item.check_status === 'paused', JSON.stringify({ s, item })).toBe(!s.taskActive || !served);
        if (item.check_status === 'pending') expect([item.last_checked_at, item.last_changed_at]).toEqual([null, null]);
        if (item.check_status === 'ok') expect(item.last_checked_at).not.toBeNull();
        if (s.check === null && s.status === null) expect(['pending', 'paused']).toContain(item.check_status);
        if (s.snapshots.length < 2) expect(item.last_changed_at).toBeNull();

        const list = await call(gw.url, 'GET', '/watchlist', { key: acct.key });
        expect(list.body).toEqual([item]);
      }),
      { numRuns: RUNS, examples: EXAMPLES },
    );
    // The states reached every status but platform_failing, which needs the incidents' table.
    const expected = CHECK_STATUS_VALUES.filter((v) => incidents || v !== 'platform_failing');
    expect([...seen].sort()).toEqual(expected.sort());
  });

  // A create reads its health in the statement that takes the writers' lock (newItemsFacts: the new item has
  // no member row yet, so its target's and its account's facts are all it depends on). Its answer
  // must be what a read of the stored item answers, in any state of the target.
  it('a create answers the health a read of the created item gives, in any state of the monitors', { timeout: 120_000 }, async () => {
    const event = 'https://pf03.example/e/health-property';
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(stateArb, async (s) => {
        await write(s);
        const created = await call(gw.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr', task_active: s.taskActive } });
        expect(created.status, created.text).toBe(201);
        const id = created.body.id as number;
        const read = await call(gw.url, 'GET', `/watchlist/${id}`, { key: acct.key });
        expect(read.status, read.text).toBe(200);
        const fields = (b: Record<string, unknown>) => Object.fromEntries(HEALTH_FIELDS.map((f) => [f, b[f]]));
        expect(fields(created.body), JSON.stringify(s)).toEqual(fields(read.body));
        seen.add(created.body.check_status as string);
        expect((await call(gw.url, 'DELETE', `/watchlist/${id}`, { key: acct.key })).status).toBe(204);
      }),
      { numRuns: 100, examples: EXAMPLES },
    );
    // A new item has no member row: never ok; every other status comes up.
    expect([...seen].sort()).toEqual(CHECK_STATUS_VALUES.filter((v) => v !== 'ok' && (incidents || v !== 'platform_failing')).sort());
  });
});
