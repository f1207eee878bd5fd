// Small pieces the monitors bench needs: the simulator child process (and other helper processes
// that print what they serve as a JSON line: bench:proxies' proxies), a logger that counts
// warnings instead of flooding the terminal (also fed the worker child's output), progress
// lines, and number helpers. Percentiles are bench/support/percentiles.ts, shared by every
// benchmark.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createLogger, type Logger } from '../../src/logger.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SIM_MAIN = fileURLToPath(new URL('./simulator-main.ts', import.meta.url));

export interface SimProcess {
  pid: number;
  url: string;
  baseUrls: Record<string, string>;
  /** The simulator's CA (its HTTPS certificate's), for SCRAPE_CA_FILE. */
  caFile: string;
  /** The simulator-main side server counting pages served (see simulator-main.ts). */
  hitsUrl: string;
  stop(): Promise<void>;
}

/**
 * Starts bench/monitors/simulator-main.ts and waits for the line with its address: `platform`
 * decides which requests its /hits counts as polls, `pf01SessionTtlMs` and `walls` go to startSimulator.
 */
export async function startSimulatorProcess(options: { platform: string; pf01SessionTtlMs: number; walls: boolean }): Promise<SimProcess> {
  const args = [`--platform=${options.platform}`, `--pf01-session-ttl-ms=${options.pf01SessionTtlMs}`, `--walls=${options.walls ? 'on' : 'off'}`];
  const { pid, info, stop } = await startLineProcess<{ url: string; baseUrls: Record<string, string>; caFile: string; hitsUrl: string }>('the simulator', SIM_MAIN, args);
  return { pid, ...info, stop };
}

/**
 * A helper process of a bench (the simulator, the loopback proxies): `script` under tsx with
 * `args`, stdin a pipe it exits on when it closes (the bench died), its stderr the bench's.
 * Resolves with the first line it prints, parsed as JSON (what it serves, once it serves it).
 * `stop` sends SIGTERM, then SIGKILL after 5 s.
 */
export async function startLineProcess<T>(name: string, script: string, args: readonly string[]): Promise<{ pid: number; info: T; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
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
    const info = await new Promise<T>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`${name} did not start within 60 s`)), 60_000);
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const nl = out.indexOf('\n');
        if (nl >= 0) {
          clearTimeout(timer);
          try {
            resolve(JSON.parse(out.slice(0, nl)) as T);
          } catch (err) {
            reject(err as Error);
          }
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited (${code}) before it was ready`));
      });
    });
    child.stdout!.resume();
    return { pid: child.pid!, info, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * In a helper process a bench started with startLineProcess: runs `stop` once, on SIGINT or
 * SIGTERM (the bench's cleanup) or when the bench's end of stdin closes (it died without one).
 */
export function stopWithBench(stop: () => void): void {
  let stopping = false;
  const once = () => {
    if (stopping) return;
    stopping = true;
    stop();
  };
  process.on('SIGINT', once);
  process.on('SIGTERM', once);
  process.stdin.on('end', once);
  process.stdin.on('error', once);
  process.stdin.resume();
}

/**
 * A logger for everything in this process (gateway, stream node, dev server output) at warn,
 * whose `line` also takes the worker child's output: each distinct message is printed to stderr
 * the first few times and counted always, so an overloaded run does not bury its progress
 * lines; the counts go into the report.
 */
export function countingLogger(): { log: Logger; counts: Map<string, number>; line(text: string, source: string): void } {
  const counts = new Map<string, number>();
  const line = (text: string, source: string) => {
    if (!text.trim()) return;
    let msg = text.trim();
    let level = '';
    try {
      const parsed = JSON.parse(text) as { msg?: string; level?: number; err?: { message?: string } };
      msg = parsed.msg ?? msg;
      if (parsed.err?.message) msg += `: ${parsed.err.message}`;
      level = parsed.level === undefined ? '' : parsed.level >= 50 ? 'error' : parsed.level >= 40 ? 'warn' : 'info';
    } catch {
      // not JSON: count the line as it is
    }
    const key = `${source}${level ? ` ${level}` : ''}: ${msg.slice(0, 160)}`;
    const n = (counts.get(key) ?? 0) + 1;
    counts.set(key, n);
    if (n <= 3) process.stderr.write(`  [${source}] ${text.length > 600 ? `${text.slice(0, 600)}...` : text.trimEnd()}\n`);
    else if (n === 4) process.stderr.write(`  [${source}] (further "${key.slice(0, 80)}" lines only counted)\n`);
  };
  return { log: createLogger('warn', { write: (text: string) => line(text, 'bench process') }), counts, line };
}

let progressStarted = 0;
let progressLabel = 'bench:monitors';
/** Names the bench in progress lines (other benches reuse these helpers and the Lifecycle). */
export function setProgressLabel(label: string): void {
  progressLabel = label;
}

/** A progress line on stderr, stamped with the time since the first one. */
export function progress(msg: string): void {
  progressStarted ||= performance.now();
  const s = Math.round((performance.now() - progressStarted) / 1000);
  process.stderr.write(`[${progressLabel} ${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}] ${msg}\n`);
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

export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number, got ${raw}`);
  return v;
}

export const fmtMs = (v: number) => (Number.isFinite(v) ? (v >= 10_000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`) : 'n/a');
export const fmt1 = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a');
