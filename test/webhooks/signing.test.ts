// Our Standard Webhooks signatures against the reference verifier (`standardwebhooks`), and the
// retry schedule's pure rules: its bounds and jitter, which answers are final, Retry-After.
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SCHEDULE_MS, JITTER, MAX_RETRY_AFTER_MS, nextDelayMs, retryAfterMs, verdictFor } from '../../src/webhooks/retry-schedule.ts';
import { newSigningSecret } from '../../src/webhooks/signing-secret.ts';
import { signedHeaders } from '../../src/webhooks/signing.ts';

describe('signedHeaders', () => {
  it('verifies with the reference implementation for any id and body, with each of several secrets', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !/[\s,.]/.test(s)), fc.json({ maxDepth: 3 }), (id, body) => {
        const secrets = [newSigningSecret(), newSigningSecret()];
        const now = Math.floor(Date.now() / 1000);
        const headers = signedHeaders(secrets, id, now, body);
        for (const s of secrets) expect(() => new Webhook(s).verify(body, headers)).not.toThrow();
        expect(() => new Webhook(newSigningSecret()).verify(body, headers)).toThrow();
        expect(() => new Webhook(secrets[0]!).verify(body + ' ', headers)).toThrow();
      }),
      { numRuns: 100 },
    );
  });
});

describe('retry schedule', () => {
  it('runs for at least 24 hours even at the low end of the jitter', () => {
    const total = DEFAULT_SCHEDULE_MS.reduce((a, b) => a + b, 0) * (1 - JITTER);
    expect(total).toBeGreaterThan(24 * 3600e3);
  });

  it('draws each wait within ±20% of its step and ends after the last', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: DEFAULT_SCHEDULE_MS.length + 3 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (n, r) => {
        const d = nextDelayMs(n, DEFAULT_SCHEDULE_MS, null, r);
        if (n > DEFAULT_SCHEDULE_MS.length) {
          expect(d).toBeNull();
        } else {
          const step = DEFAULT_SCHEDULE_MS[n - 1]!;
          expect(d).toBeGreaterThanOrEqual(Math.floor(step * 0.8));
          expect(d).toBeLessThanOrEqual(Math.ceil(step * 1.2));
        }
      }),
    );
  });

  it('takes Retry-After in place of the step, capped', () => {
    expect(nextDelayMs(1, DEFAULT_SCHEDULE_MS, 120_000, 0.5)).toBe(120_000);
    expect(nextDelayMs(1, DEFAULT_SCHEDULE_MS, 10 * 3600e3, 0.5)).toBe(MAX_RETRY_AFTER_MS);
    expect(retryAfterMs('7')).toBe(7000);
    expect(retryAfterMs(new Date(Date.now() + 60_000).toUTCString())).toBeGreaterThan(55_000);
    expect(retryAfterMs('soon')).toBeNull();
    expect(retryAfterMs(undefined)).toBeNull();
  });

  it('treats 4xx as final except 408, 409, 425 and 429', () => {
    for (let s = 400; s < 500; s++) expect(verdictFor(s), String(s)).toBe([408, 409, 425, 429].includes(s) ? 'retry' : 'permanent');
    for (const s of [200, 201, 204, 299]) expect(verdictFor(s)).toBe('delivered');
    for (const s of [null, 301, 302, 500, 502, 503, 504]) expect(verdictFor(s)).toBe('retry');
  });
});
