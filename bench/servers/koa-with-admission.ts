// Floor for bench:gateway: bare Koa plus only the database work the brief requires of every
// paid request (one atomic admission: rate-window hit, credit reservation and ledger row, sent
// in groups exactly as the gateway sends them; then the batched capture), with none of the
// gateway's own logic (no key hashing, routing, headers, metrics or logging). Its throughput is
// the most a gateway built to the brief could reach on this machine, so it shows how much of the
// gap to bare Koa is the gateway's code and how much is the required database work.
import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import { createPool } from '../../db/pool.ts';
import { AdmissionGroups } from '../../src/gateway/admissions.ts';
import { CaptureQueue } from '../../src/billing/capture-queue.ts';
import { rateWindow } from '../../src/gateway/rate-limit.ts';

const pool = createPool({ connectionString: process.env.DATABASE_URL! });
const admissions = new AdmissionGroups(pool);
const captures = new CaptureQueue(pool);
// The same keys the gateway run uses; requests rotate over them as the load generator does.
const { rows: keys } = await pool.query<{ id: string; account_id: string }>('SELECT id, account_id FROM api_keys ORDER BY id');
let n = 0;

const app = new Koa();
app.use(async (ctx) => {
  const key = keys[n++ % keys.length]!;
  const requestId = randomUUID();
  const row = await admissions.admit({
    lane: Number(key.account_id),
    subject: `key:${key.id}`,
    windowStart: rateWindow(Date.now()).start,
    limit: 1_000_000,
    accountId: Number(key.account_id),
    credits: 1,
    requestId,
    keyId: key.id,
    operation: 'market_data.ping',
  });
  if (row.outcome !== 'reserved') throw new Error(`admission refused: ${row.outcome}`);
  ctx.body = { status: 'ok' };
  // A lost capture is left to the sweeper, as in the gateway; it must not end the benchmark.
  captures.capture(requestId, 200).catch(() => {});
});
app.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
