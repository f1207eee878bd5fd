// `npm run admin -- <command>`: operator commands against the same database `npm start`
// uses. JSON on stdout; on error a message on stderr and a non-zero exit.
import { parseArgs } from 'node:util';
import {
  createAccount,
  createKey,
  listPlans,
  OperationError,
  revokeKey,
  setSubscriptionStatus,
  setUsage,
} from '../accounts/operations.ts';
import { loadConfig } from '../config.ts';
import type { Db } from '../../db/connection.ts';
import { openDatabase } from '../runtime/database.ts';

const USAGE = `usage: npm run admin -- <command> [options]

  plans:list
  accounts:create --plan <plan id> [--status active|trialing|past_due|paused|canceled|unpaid] [--no-billing] [--name <name>]
  keys:create --account <id> [--apis market_data,live_availability,watchlist,stream,account] [--rate-limit <n per minute>] [--expires-at <RFC 3339>]
  keys:revoke --key-id <id>
  subscriptions:set --account <id> --status <status>
  usage:set --account <id> --used <n>`;

class UsageError extends Error {}

const OPTIONS = {
  plan: { type: 'string' },
  status: { type: 'string' },
  'no-billing': { type: 'boolean' },
  name: { type: 'string' },
  account: { type: 'string' },
  apis: { type: 'string' },
  'rate-limit': { type: 'string' },
  'expires-at': { type: 'string' },
  'key-id': { type: 'string' },
  used: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

function required(values: Values, name: keyof Values): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

function integer(value: string, name: string): number {
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new UsageError(`--${name} must be a non-negative integer`);
  return Number(value);
}

const COMMANDS: Record<string, (db: Db, v: Values) => Promise<unknown>> = {
  'plans:list': (db) => listPlans(db),
  'accounts:create': (db, v) =>
    createAccount(db, { plan: required(v, 'plan'), status: v.status, billing: !v['no-billing'], name: v.name }),
  'keys:create': (db, v) => {
    let expiresAt: Date | undefined;
    if (v['expires-at'] !== undefined) {
      expiresAt = new Date(v['expires-at']);
      if (!/^\d{4}-\d{2}-\d{2}T/.test(v['expires-at']) || Number.isNaN(expiresAt.getTime())) {
        throw new UsageError('--expires-at must be an RFC 3339 timestamp');
      }
    }
    return createKey(db, {
      accountId: integer(required(v, 'account'), 'account'),
      apis: v.apis?.split(',').map((s) => s.trim()).filter(Boolean),
      rateLimitPerMinute: v['rate-limit'] === undefined ? undefined : integer(v['rate-limit'], 'rate-limit'),
      expiresAt,
    });
  },
  'keys:revoke': (db, v) => revokeKey(db, required(v, 'key-id')),
  'subscriptions:set': (db, v) => setSubscriptionStatus(db, integer(required(v, 'account'), 'account'), required(v, 'status')),
  'usage:set': (db, v) => setUsage(db, integer(required(v, 'account'), 'account'), integer(required(v, 'used'), 'used')),
};

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const [command, ...extra] = parsed.positionals;
  if (parsed.values.help || !command) {
    console.error(USAGE);
    return command || parsed.values.help ? 0 : 2;
  }
  const run = COMMANDS[command];
  if (!run || extra.length) {
    console.error(`${run ? `unexpected argument ${extra[0]}` : `unknown command ${command}`}\n\n${USAGE}`);
    return 2;
  }
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' });
  const database = await openDatabase(config, (m) => console.error(m), { applicationName: 'admin', poolMax: 2 });
  try {
    console.log(JSON.stringify(await run(database.db, parsed.values), null, 2));
    return 0;
  } catch (err) {
    if (err instanceof OperationError || err instanceof UsageError) {
      console.error(`error: ${err.message}`);
      return 1;
    }
    throw err;
  } finally {
    await database.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
