// Test harness: a real gateway on a real port against the run's real PostgreSQL, accounts and
// keys made through the same operations the admin CLI uses, and a small HTTP client.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { inject } from 'vitest';
import { createAccount, createKey } from '../../src/accounts/operations.ts';
import { APIS } from '../../src/apis/index.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createDb, type Db } from '../../db/connection.ts';
import { createGateway, type ApiModule } from '../../src/gateway/app.ts';
import type { Services } from '../../src/gateway/request-state.ts';
import { Metrics } from '../../src/gateway/metrics.ts';
import { createLogger } from '../../src/logger.ts';
import type { Pool } from '../../db/pool.ts';
import { closeServices, createRequestPool, createServices } from '../../src/runtime/services.ts';

export function databaseUrl(): string {
  return inject('databaseUrl');
}

/** The key that seals webhook URLs and secrets in tests (WEBHOOK_SECRET_KEY; 32 bytes). */
export const TEST_WEBHOOK_KEY = Buffer.alloc(32, 7).toString('base64');

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ DATABASE_URL: databaseUrl(), LOG_LEVEL: 'silent', KEY_CACHE_TTL_MS: '200', WEBHOOK_SECRET_KEY: TEST_WEBHOOK_KEY, ...env });
}

export interface TestGateway {
  url: string;
  db: Db;
  services: Services;
  close(): Promise<void>;
}

export async function startTestGateway(
  opts: {
    env?: Record<string, string>;
    apis?: readonly ApiModule[];
    services?: Partial<Services>;
    /** A database that is not the run's (e.g. unreachable); pass the matching `pool` with it. */
    db?: Db;
    pool?: Pool;
  } = {},
): Promise<TestGateway> {
  const config = testConfig(opts.env);
  const db = opts.db ?? createDb({ connectionString: config.DATABASE_URL!, poolMax: 10, statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS });
  const pool = opts.pool ?? createRequestPool(config, config.DATABASE_URL!);
  const services = { ...createServices(config, db, pool, createLogger('silent'), new Metrics(false)), ...opts.services };
  const app = createGateway(services, opts.apis ?? APIS);
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    db,
    services,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await closeServices(services);
      if (!opts.db) await db.destroy();
    },
  };
}

export interface TestAccount {
  accountId: number;
  key: string;
  keyId: string;
}

/** A fresh account with one key (all APIs unless narrowed; a generous rate limit unless set). */
export async function newAccount(
  db: Db,
  opts: { plan?: string; status?: string; billing?: boolean; paymentMethod?: boolean; apis?: string[]; rateLimit?: number; expiresAt?: Date } = {},
): Promise<TestAccount> {
  const { account_id } = await createAccount(db, {
    plan: opts.plan ?? 'pro',
    status: opts.status,
    billing: opts.billing,
    paymentMethod: opts.paymentMethod,
  });
  const { key, key_id } = await createKey(db, {
    accountId: account_id,
    apis: opts.apis,
    rateLimitPerMinute: opts.rateLimit ?? 10_000,
    expiresAt: opts.expiresAt,
  });
  return { accountId: account_id, key, keyId: key_id };
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** One HTTP call. `body` is sent as JSON unless `raw` is given. */
export async function call(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers.apikey = opts.key;
  let payload: string | undefined = opts.raw;
  if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + path, { method, headers, body: payload }).catch((err: unknown) => {
    // A kept-alive socket the server closed as idle, reused before its FIN was read: the
    // request never reached the server, so sending it once more on a new socket is safe. Seen
    // only on a loaded machine (the client's 4 s idle timer fired late against the server's 5 s).
    if (!isStaleSocketReset(err)) throw err;
    return fetch(base + path, { method, headers, body: payload });
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: res.status, headers: res.headers, text, body };
}

function isStaleSocketReset(err: unknown): boolean {
  const cause = (err as { cause?: { code?: string } } | null)?.cause;
  return err instanceof TypeError && err.message === 'fetch failed' && (cause?.code === 'ECONNRESET' || cause?.code === 'UND_ERR_SOCKET');
}

/** The checkout's root directory (where package.json lives). */
export const PROJECT_ROOT = new URL('../../', import.meta.url).pathname;

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a TypeScript entry point of this checkout (`node --import tsx <script> ...args`) to
 * completion. `env` replaces the environment entirely; pass `{...process.env, ...}` to extend it.
 */
export async function runTs(script: string, args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<ProcessResult> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Polls until `check` returns a value (not undefined) or the time is up. */
// Generous: under a full parallel test run on two cores a poll, a workflow task and an
// activity can each wait seconds; a passing run returns as soon as the condition holds.
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 45_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
