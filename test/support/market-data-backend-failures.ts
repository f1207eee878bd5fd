// The backend-failure tests every Market Data read endpoint owes (spec 7.2, 8), defined once so
// each endpoint is held to the same rule: a dead database is 503 EDGE_UNAVAILABLE, a query stuck
// past the statement timeout is 504 EDGE_TIMEOUT, the answer comes promptly (a client is not
// left hanging on a sick backend) and the held credits are released, never charged.
import { describe, expect, it } from 'vitest';
import { newAccount } from './harness.ts';
import { deadDataPool, expectBilled, slowDataPool, startGatewayWithDataPool, whileLocked, type ReadGateway } from './market-data-fixtures.ts';

/** Short enough that the lock makes the query fail well inside ANSWER_WITHIN_MS. */
const STATEMENT_TIMEOUT_MS = 300;
const ANSWER_WITHIN_MS = 3_000;

export interface BackendFailureCase {
  /** The request, with its query string; a function because fixtures are only set in beforeAll. */
  path: () => string;
  /** A table the request reads: locking it is what holds the query past the statement timeout. */
  lockedTable: string;
}

const FAILURES = [
  { kind: 'dead', title: 'an unreachable database is 503 EDGE_UNAVAILABLE', status: 503, code: 'EDGE_UNAVAILABLE', message: 'data backend unreachable' },
  { kind: 'slow', title: 'a query past the statement timeout is 504 EDGE_TIMEOUT', status: 504, code: 'EDGE_TIMEOUT', message: 'data backend exceeded its timeout' },
] as const;

/**
 * Registers the calling file's `backend failures` tests: the request of `c` through a gateway whose
 * data pool is dead, then slow with `c.lockedTable` locked. Admission and billing stay on `t`'s
 * live database, so the ledger can be read afterwards.
 */
export function describeBackendFailures(t: ReadGateway, c: BackendFailureCase): void {
  describe('backend failures: answered in time, never billed', () => {
    for (const f of FAILURES) {
      it(f.title, async () => {
        const g = await startGatewayWithDataPool(f.kind === 'dead' ? deadDataPool() : slowDataPool(STATEMENT_TIMEOUT_MS));
        try {
          const a = await newAccount(t.gw.db);
          const send = async () => {
            const started = Date.now();
            const r = await fetch(g.gw.url + c.path(), { headers: { apikey: a.key } });
            return { r, ms: Date.now() - started };
          };
          const { r, ms } = f.kind === 'dead' ? await send() : await whileLocked(t.gw.db, c.lockedTable, send);
          const text = await r.text();
          expect(ms).toBeLessThan(ANSWER_WITHIN_MS);
          expect(r.status, text.slice(0, 500)).toBe(f.status);
          expect(JSON.parse(text)).toEqual({ status: 'error', code: f.code, message: f.message });
          await expectBilled(t.gw.db, a.accountId, r.headers.get('x-request-id'), 0, 'released');
        } finally {
          await g.close();
        }
      });
    }
  });
}
