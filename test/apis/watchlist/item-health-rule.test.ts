// The rule that turns what the monitors know of an item's target into its check_status (issue 38;
// src/apis/watchlist/health.ts deriveHealth), case by case: paused first, then retired (unless an
// item on the target was written since), then the platform's incident over the target's own
// failure, then the failure (blocked, not found, anything else), then ok or pending. The whole
// path: test/monitors/item-health.test.ts; any state, against the OpenAPI schema:
// test/properties/item-health.test.ts.
import { describe, expect, it } from 'vitest';
import { deriveHealth, type HealthFacts } from '../../../src/apis/watchlist/health.ts';

const checked = new Date('2026-05-01T10:00:05.000Z');
const changed = new Date('2026-05-01T09:00:00.000Z');
const base: HealthFacts = { paused: false, member: { baselined: true }, checkedAt: checked, lastCheckOk: true, changedAt: changed, status: null, platformFailing: false };
const failure = (kind: string, lastFailure: string | null, more: Partial<NonNullable<HealthFacts['status']>> = {}) => ({
  kind,
  lastFailure,
  notFoundSince: null,
  retired: false,
  revived: false,
  ...more,
});
const times = { last_checked_at: checked.toISOString(), last_changed_at: changed.toISOString() };
const pending = { last_checked_at: null, check_status: 'pending', last_changed_at: null };

describe('check_status', () => {
  it('ok: the last check read the event and the item has had its first check', () => {
    expect(deriveHealth(base)).toEqual({ ...times, check_status: 'ok' });
  });

  it('pending, with no times: not a member yet, no baseline yet, or its check not written yet', () => {
    expect(deriveHealth({ ...base, member: null })).toEqual(pending);
    expect(deriveHealth({ ...base, member: { baselined: false } })).toEqual(pending);
    expect(deriveHealth({ ...base, lastCheckOk: null, checkedAt: null })).toEqual(pending);
    // The last check failed and its failure is no longer on record: the target is checked afresh.
    expect(deriveHealth({ ...base, lastCheckOk: false })).toEqual(pending);
  });

  it('paused whatever the target says (task_active false, or the account not served), with the event’s times', () => {
    for (const status of [null, failure('blocked', 'blocked'), failure('retired', 'not_found', { retired: true })]) {
      expect(deriveHealth({ ...base, paused: true, status, platformFailing: true })).toEqual({ ...times, check_status: 'paused' });
    }
    expect(deriveHealth({ ...base, paused: true, member: null, checkedAt: null, changedAt: null })).toEqual({ last_checked_at: null, check_status: 'paused', last_changed_at: null });
  });

  it('blocked, not_found and failing from the last failure; not_found from the clock in rows older than last_failure', () => {
    expect(deriveHealth({ ...base, status: failure('blocked', 'blocked') }).check_status).toBe('blocked');
    expect(deriveHealth({ ...base, status: failure('failing', 'not_found', { notFoundSince: checked }) }).check_status).toBe('not_found');
    // A 5xx after not-found answers keeps the clock, but the last check failed otherwise.
    expect(deriveHealth({ ...base, status: failure('failing', 'upstream', { notFoundSince: checked }) }).check_status).toBe('failing');
    for (const kind of ['upstream', 'attempt_timeout', 'parse', 'browser_missing', 'internal']) {
      expect(deriveHealth({ ...base, status: failure('failing', kind) }).check_status).toBe('failing');
    }
    expect(deriveHealth({ ...base, status: failure('failing', null, { notFoundSince: checked }) }).check_status).toBe('not_found');
    expect(deriveHealth({ ...base, status: failure('failing', null) }).check_status).toBe('failing');
    // A new item on a failing target shows the target's failure, not pending.
    expect(deriveHealth({ ...base, member: { baselined: false }, status: failure('blocked', 'blocked') })).toEqual({ ...times, check_status: 'blocked' });
  });

  it('platform_failing over the target’s own failure, never over ok', () => {
    expect(deriveHealth({ ...base, platformFailing: true, status: failure('failing', 'not_found') }).check_status).toBe('platform_failing');
    expect(deriveHealth({ ...base, platformFailing: true, status: failure('blocked', 'blocked') }).check_status).toBe('platform_failing');
    expect(deriveHealth({ ...base, platformFailing: true }).check_status).toBe('ok');
  });

  it('retired, unless an item on the target was written since (then pending: it is checked afresh)', () => {
    expect(deriveHealth({ ...base, status: failure('retired', 'not_found', { retired: true }), platformFailing: true })).toEqual({ ...times, check_status: 'retired' });
    expect(deriveHealth({ ...base, status: failure('retired', 'not_found', { retired: true, revived: true }) })).toEqual(pending);
  });
});
