// The service's configuration: one schema, parsed once at start-up from the environment.
// A bad value stops the process with a message naming the variable (see ConfigError).
import path from 'node:path';
import { z } from 'zod';

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();

const schema = z.object({
  /** PostgreSQL connection string; when unset, an embedded PostgreSQL is started under DATA_DIR. */
  DATABASE_URL: z.string().url().optional(),
  /** Where the embedded PostgreSQL and other local state live between runs. */
  DATA_DIR: z.string().min(1).default('./data'),
  /** Port of the embedded PostgreSQL (5432 is usually a system server's). */
  EMBEDDED_PG_PORT: port.default(5433),
  /** Public gateway port. */
  PORT: port.default(8080),
  /** Address the gateway and metrics servers bind to. */
  HOST: z.string().min(1).default('0.0.0.0'),
  /** Trust X-Forwarded-For from a reverse proxy when limiting unauthenticated callers by address. */
  TRUST_PROXY: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /** Largest accepted request body, in bytes. */
  MAX_BODY_BYTES: positiveInt.default(1_048_576),
  /** Internal Prometheus metrics port (never routed publicly). */
  METRICS_PORT: port.default(9464),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** How long a verified key is trusted in-process: the upper bound on revocation delay. */
  KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
  /** Default per-key requests per calendar minute (spec section 8); keys may override. */
  RATE_LIMIT_PER_MINUTE: positiveInt.default(30),
  /** Requests per minute per client address that carry no valid key. */
  UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: positiveInt.default(30),
  /** Reservations older than this are released by the sweeper (a crashed request is never billed). */
  RESERVATION_TIMEOUT_MS: positiveInt.default(10 * 60_000),
  /** Most live (not deleted) watchlist items one account may hold. */
  WATCHLIST_MAX_ITEMS: positiveInt.default(1000),
  /** Statement timeout for API queries, so no request hangs on the database. */
  DB_STATEMENT_TIMEOUT_MS: positiveInt.default(5_000),
  DB_POOL_MAX: positiveInt.default(20),
  /** Create a demo account and key on first start (printed once). */
  DEMO_ACCOUNT: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  /** Which billing provider backs plans and subscriptions. */
  BILLING_PROVIDER: z.enum(['local']).default('local'),
});

export type Config = z.infer<typeof schema> & { dataDir: string };

export class ConfigError extends Error {}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean "unset" so `PORT= npm start` behaves like no PORT at all.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return { ...parsed.data, dataDir: path.resolve(parsed.data.DATA_DIR) };
}
