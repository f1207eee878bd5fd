// Small pieces the monitors bench needs: the simulator child process, a follower of the
// notifications log (LISTEN 'notifications' + a read of the table after every wake-up), a
// logger that counts warnings instead of flooding the terminal, and number helpers.
// Percentiles are bench/support/percentiles.ts, shared by every benchmark.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { listen, type Listener } from '../../db/listener.ts';
import type { Pool } from '../../db/pool.ts';
import { createLogger, type Logger } from '../../src/logger.ts';
import { NOTIFICATIONS_CHANNEL, readLog, type LogRow } from '../../src/notifications/log.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SIM_MAIN = fileURLToPath(new URL('./simulator-main.ts', import.meta.url));

export interface SimProcess {
  pid: number;
  url: string;
  baseUrls: Record<string, string>;
  stop(): Promise<void>;
}

/** Starts bench/monitors/simulator-main.ts and waits for the line with its address. */
export async function startSimulatorProcess(): Promise<SimProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', SIM_MAIN], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.stdin!.end();
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    const info = await new Promise<{ url: string; baseUrls: Record<string, string> }>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error('the simulator did not start within 60 s')), 60_000);
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const nl = out.indexOf('\n');
        if (nl >= 0) {
          clearTimeout(timer);
          try {
            resolve(JSON.parse(out.slice(0, nl)));
          } catch (err) {
            reject(err as Error);
          }
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the simulator exited (${code}) before it was ready`));
      });
    });
    child.stdout!.resume();
    return { pid: child.pid!, ...info, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export interface LogFollower {
  /** Highest log id read so far. */
  readonly last: number;
  close(): Promise<void>;
}

/** Reads every row appended after `after`, in id order, each time a NOTIFY wakes it. */
export function followLog(opts: { pool: Pool; connectionString: string; after: number; log: Logger; onRows: (rows: LogRow[], seenAt: number) => void }): LogFollower {
  let last = opts.after;
  let reading: Promise<void> | null = null;
  let again = false;
  const drain = () => {
    if (reading) {
      again = true;
      return;
    }
    reading = (async () => {
      do {
        again = false;
        for (;;) {
          const rows = await readLog(opts.pool, { after: last, limit: 5_000 });
          if (rows.length === 0) break;
          last = rows[rows.length - 1]!.id;
          opts.onRows(rows, Date.now());
          if (rows.length < 5_000) break;
        }
      } while (again);
    })()
      .catch((err: unknown) => opts.log.warn({ err }, 'bench: could not read the notifications log'))
      .finally(() => {
        reading = null;
      });
  };
  const listener: Listener = listen({ connectionString: opts.connectionString, channels: [NOTIFICATIONS_CHANNEL], onWake: drain, log: opts.log, applicationName: 'bench-monitors' });
  return {
    get last() {
      return last;
    },
    close: async () => {
      await listener.close();
      await reading;
    },
  };
}

/**
 * A logger for everything in this process (worker, relay, gateway, dev server output) at warn:
 * each distinct message is printed to stderr the first few times and counted always, so an
 * overloaded run does not bury its progress lines; the counts go into the results.
 */
export function countingLogger(): { log: Logger; counts: Map<string, number> } {
  const counts = new Map<string, number>();
  const destination = {
    write(line: string) {
      let msg = line.trim();
      let level = '';
      try {
        const parsed = JSON.parse(line) as { msg?: string; level?: number };
        msg = parsed.msg ?? msg;
        level = parsed.level && parsed.level >= 50 ? 'error' : 'warn';
      } catch {
        // not JSON: count the line as it is
      }
      const key = `${level}: ${msg.slice(0, 160)}`;
      const n = (counts.get(key) ?? 0) + 1;
      counts.set(key, n);
      if (n <= 3) process.stderr.write(`  [log] ${line.length > 600 ? `${line.slice(0, 600)}...` : line.trimEnd()}\n`);
      else if (n === 4) process.stderr.write(`  [log] (further "${key.slice(0, 80)}" lines only counted)\n`);
    },
  };
  return { log: createLogger('warn', destination), counts };
}

/** Runs fn over items, `limit` at a time. */
export async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value; throws after timeoutMs. */
export async function until<T>(check: () => Promise<T | undefined>, timeoutMs: number, everyMs = 20): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v !== undefined) return v;
    if (performance.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number, got ${raw}`);
  return v;
}

export const fmtMs = (v: number) => (Number.isFinite(v) ? (v >= 10_000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`) : 'n/a');
export const fmt1 = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a');
