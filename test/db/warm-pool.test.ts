// warmPool (db/pool.ts) opens a stream node's first connections before it listens. Found by CI:
// a Ctrl-C while the node was starting stopped the embedded PostgreSQL under connections it held
// checked out, with no 'error' listener on them, and the process crashed with exit 1. Twice: the
// second time the goodbye reached a client in the microtask between pool.connect() resolving and
// its caller's first line (reproduced 3 times in 12 Ctrl-Cs of `npm start`; 0 in 20 since).
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPool, warmPool } from '../../db/pool.ts';
import { databaseUrl } from '../support/harness.ts';

const admin = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
afterAll(() => admin.end());

function pool(name: string, max: number): pg.Pool {
  return new pg.Pool({ connectionString: databaseUrl(), max, application_name: name, connectionTimeoutMillis: 1_500 });
}

async function backends(name: string): Promise<number> {
  const r = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [name]);
  return r.rows[0]!.n;
}

describe('warmPool', () => {
  it('leaves n connections open and idle', async () => {
    const name = `warm_ok_${process.pid}`;
    const p = pool(name, 3);
    await warmPool(p, 3);
    expect({ total: p.totalCount, idle: p.idleCount }).toEqual({ total: 3, idle: 3 });
    expect(await backends(name)).toBe(3);
    await p.end();
  });

  it('the server ending the connections it holds: rejects, crashes nothing, and leaves none checked out', { timeout: 15_000 }, async () => {
    const name = `warm_killed_${process.pid}`;
    // Two of three connect; the third waits for a slot the first two hold. A pool of createPool's,
    // as every caller's: its clients' listener is what keeps a held one's error from crashing.
    const p = createPool({ connectionString: databaseUrl(), max: 2, applicationName: name });
    const unhandled: unknown[] = [];
    const onUncaught = (err: unknown) => unhandled.push(err);
    process.on('uncaughtException', onUncaught);
    let connected = 0;
    p.on('connect', () => connected++);
    try {
      const warming = warmPool(p, 3).then(
        () => 'resolved',
        (err: Error) => err.message,
      );
      // Connected as the client sees it (pg-pool's 'connect', on ReadyForQuery), not as the server
      // lists it: a backend is in pg_stat_activity while its start-up is still on the way, and one
      // ended then rejects its own connect with 57P01 (CI, once in a full run, on a loaded machine).
      for (let i = 0; i < 150 && connected < 2; i++) await new Promise((r) => setTimeout(r, 20));
      expect(connected).toBe(2);
      expect(await backends(name)).toBe(2);
      // What a fast shutdown does to each session (57P01), to these two only.
      const killed = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [name]);
      expect(killed.rowCount).toBe(2);
      expect(await warming).toMatch(/timeout/);
      expect(unhandled).toEqual([]);
      // Both clients were given back (and dropped as failed): end() would wait for ever on one held.
      expect({ total: p.totalCount, idle: p.idleCount }).toEqual({ total: 0, idle: 0 });
      await p.end();
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  it("createPool's clients listen for errors from their first moment, checked out or not", async () => {
    const p = createPool({ connectionString: databaseUrl(), max: 2, applicationName: `warm_listen_${process.pid}` });
    const client = await p.connect();
    // Checked out, pg-pool's own idle listener is gone: without ours, an error now would crash.
    expect(client.listenerCount('error')).toBeGreaterThan(0);
    client.release();
    await p.end();
  });
});
