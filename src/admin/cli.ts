// `npm run admin -- <command>`: operator commands against the same database `npm start`
// uses. JSON on stdout; on error a message on stderr and a non-zero exit.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import {
  createAccount,
  createKey,
  listPlans,
  OperationError,
  revokeKey,
  setSubscriptionStatus,
  setUsage,
} from '../accounts/operations.ts';
import { SUBSCRIPTION_STATUSES } from '../billing/provider.ts';
import { loadConfig, type Config } from '../config.ts';
import { API_NAMES } from '../gateway/catalog.ts';
import { exitWith, runOnDatabase } from '../runtime/cli-command.ts';
import type { Db } from '../../db/connection.ts';

const USAGE = `usage: npm run admin -- <command> [options]

  plans:list
  accounts:create --plan <plan id> [--status active|trialing|past_due|paused|canceled|unpaid] [--no-billing] [--no-payment-method] [--name <name>]
                  with BILLING_PROVIDER=stripe: [--idempotency-key <key>], or --customer <cus_…> --subscription <sub_…> [--plan <plan id>] to attach existing ones
  keys:create --account <id> [--apis market_data,live_availability,watchlist,stream,account] [--rate-limit <n per minute>] [--stream-connections <n open>] [--expires-at <RFC 3339>]
  keys:revoke --key-id <id>
  subscriptions:set --account <id> --status <status>
  usage:set --account <id> --used <n>
  billing:sync                (BILLING_PROVIDER=stripe: the plans' meter, product and prices in Stripe)`;

class UsageError extends Error {}

const RFC3339 = z.iso.datetime({ offset: true });

const OPTIONS = {
  plan: { type: 'string' },
  status: { type: 'string' },
  'no-billing': { type: 'boolean' },
  'no-payment-method': { type: 'boolean' },
  name: { type: 'string' },
  account: { type: 'string' },
  apis: { type: 'string' },
  'rate-limit': { type: 'string' },
  'stream-connections': { type: 'string' },
  'expires-at': { type: 'string' },
  'key-id': { type: 'string' },
  used: { type: 'string' },
  customer: { type: 'string' },
  subscription: { type: 'string' },
  'idempotency-key': { type: 'string' },
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

function positive(value: string, name: string): number {
  const n = integer(value, name);
  if (n < 1) throw new UsageError(`--${name} must be a positive integer`);
  return n;
}

function apiList(value: string): string[] {
  const apis = value.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = apis.filter((a) => !(API_NAMES as readonly string[]).includes(a));
  if (unknown.length) throw new UsageError(`--apis: unknown API ${unknown.join(', ')}; one of ${API_NAMES.join(', ')}`);
  if (!apis.length) throw new UsageError(`--apis must name at least one of ${API_NAMES.join(', ')}`);
  return apis;
}

function status(value: string): string {
  if (!(SUBSCRIPTION_STATUSES as readonly string[]).includes(value)) {
    throw new UsageError(`--status must be one of ${SUBSCRIPTION_STATUSES.join(', ')}`);
  }
  return value;
}

function timestamp(value: string, name: string): Date {
  // RFC 3339 (section 5.6): full date and time with seconds and an offset; `t`/`z` may be
  // lower-case. A real calendar date: `new Date` alone would roll Feb 30 over to March.
  const text = value.toUpperCase();
  if (!RFC3339.safeParse(text).success) {
    throw new UsageError(`--${name} must be an RFC 3339 timestamp with an offset, e.g. 2030-01-31T23:59:59Z`);
  }
  return new Date(text);
}

type Run = (db: Db, config: Config) => Promise<unknown>;

const say = (message: string) => console.error(message);

/**
 * Each command checks its arguments first and returns what to run against the database, so a
 * mistyped option is reported at once, before the database (perhaps an embedded server) is opened.
 */
const COMMANDS: Record<string, (v: Values) => Run> = {
  'plans:list': () => (db) => listPlans(db),
  'accounts:create': (v) => {
    if ((v.customer === undefined) !== (v.subscription === undefined)) throw new UsageError('--customer and --subscription go together');
    const attach = v.customer !== undefined ? { customer: required(v, 'customer'), subscription: required(v, 'subscription') } : null;
    const opts = {
      plan: attach ? v.plan : required(v, 'plan'),
      status: v.status === undefined ? undefined : status(v.status),
      billing: !v['no-billing'],
      paymentMethod: !v['no-payment-method'],
      name: v.name,
      idempotencyKey: v['idempotency-key'],
    };
    return async (db, config) => {
      if (config.BILLING_PROVIDER !== 'stripe') return createAccount(db, { ...opts, plan: opts.plan! });
      const { attachStripeAccount, createStripeAccount } = await import('../billing/stripe/accounts.ts');
      const stripe = await adminStripeClient(config);
      return attach ? attachStripeAccount(db, stripe, { ...opts, ...attach }) : createStripeAccount(db, stripe, { ...opts, plan: opts.plan! });
    };
  },
  'keys:create': (v) => {
    const opts = {
      accountId: integer(required(v, 'account'), 'account'),
      apis: v.apis === undefined ? undefined : apiList(v.apis),
      rateLimitPerMinute: v['rate-limit'] === undefined ? undefined : positive(v['rate-limit'], 'rate-limit'),
      streamConnectionLimit: v['stream-connections'] === undefined ? undefined : positive(v['stream-connections'], 'stream-connections'),
      expiresAt: v['expires-at'] === undefined ? undefined : timestamp(v['expires-at'], 'expires-at'),
    };
    return (db) => createKey(db, opts);
  },
  'keys:revoke': (v) => {
    const keyId = required(v, 'key-id');
    return (db) => revokeKey(db, keyId);
  },
  'subscriptions:set': (v) => {
    const accountId = integer(required(v, 'account'), 'account');
    const to = status(required(v, 'status'));
    return (db) => setSubscriptionStatus(db, accountId, to);
  },
  'usage:set': (v) => {
    const accountId = integer(required(v, 'account'), 'account');
    const used = integer(required(v, 'used'), 'used');
    return (db) => setUsage(db, accountId, used);
  },
  'billing:sync': () => async (db, config) => {
    const { CatalogError, syncCatalog } = await import('../billing/stripe/catalog.ts');
    const stripe = await adminStripeClient(config);
    try {
      return await syncCatalog(db, stripe, { meterEventName: config.STRIPE_METER_EVENT_NAME });
    } catch (err) {
      if (err instanceof CatalogError) throw new OperationError(err.message);
      throw err;
    }
  },
};

/** Loaded only for Stripe commands; an operator waits, so it may take longer and retry (same Idempotency-Key). */
async function adminStripeClient(config: Config) {
  const { createStripeClient } = await import('../billing/stripe/client.ts');
  return createStripeClient(config, { timeoutMs: 30_000, maxNetworkRetries: 2 });
}

/** What the configured provider cannot do, said before the database is opened; null when it can. */
function providerRefusal(command: string, v: Values, config: Config): string | null {
  if (config.BILLING_PROVIDER === 'stripe') {
    if (command === 'subscriptions:set') {
      return 'with BILLING_PROVIDER=stripe a subscription’s state comes from Stripe: change it there (its webhook, or the reconcile run, brings it here)';
    }
    if (command === 'accounts:create' && v.status !== undefined) {
      return 'with BILLING_PROVIDER=stripe --status cannot be set: the subscription’s status is Stripe’s (a trial or a cancellation is set there)';
    }
    if (command === 'accounts:create' && v['no-payment-method']) {
      return 'with BILLING_PROVIDER=stripe --no-payment-method cannot be set: whether the customer has a default payment method is read from Stripe';
    }
    if (command === 'accounts:create' && v['no-billing']) {
      return 'with BILLING_PROVIDER=stripe every account is a Stripe customer: --no-billing is for BILLING_PROVIDER=local';
    }
    return null;
  }
  if (command === 'billing:sync') return 'billing:sync writes the catalog to Stripe: it needs BILLING_PROVIDER=stripe (and STRIPE_SECRET_KEY)';
  if (command === 'accounts:create' && (v.customer !== undefined || v['idempotency-key'] !== undefined)) {
    return '--customer, --subscription and --idempotency-key are for BILLING_PROVIDER=stripe';
  }
  if (command === 'accounts:create' && v.plan === undefined) return '--plan is required';
  return null;
}

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
  const prepare = COMMANDS[command];
  if (!prepare || extra.length) {
    console.error(`${prepare ? `unexpected argument ${extra[0]}` : `unknown command ${command}`}\n\n${USAGE}`);
    return 2;
  }
  let run: Run;
  try {
    run = prepare(parsed.values);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`error: ${err.message}`);
      return 2;
    }
    throw err;
  }
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' });
  const refusal = providerRefusal(command, parsed.values, config);
  if (refusal) {
    console.error(`error: ${refusal}`);
    return 1;
  }
  return runOnDatabase(
    config,
    say,
    { applicationName: 'admin', poolMax: 2, interrupted: 'interrupted', refusal: OperationError },
    async (db) => {
      console.log(JSON.stringify(await run(db, config), null, 2));
      return 0;
    },
  );
}

exitWith(main(), say);
