// `npm run seed -- --events <n>`: fills the Market Data catalog of the database `npm start` uses
// (--database-url, else DATABASE_URL, else the embedded PostgreSQL under DATA_DIR) with a
// synthetic catalog (seed.ts). Progress on stderr; a JSON summary on stdout.
import { parseArgs } from 'node:util';
import { loadConfig } from '../../config.ts';
import { exitWith, runOnDatabase } from '../../runtime/cli-command.ts';
import { DETAILS, type Detail } from './statistics.ts';
import { formatDuration, progressPrinter } from './progress.ts';

const USAGE = `usage: npm run seed -- --events <n> [options]

  --events <n>            events to add (required)
  --detail full|light|none
                          full (default): 30 days of sales, daily statistics, 4 snapshots,
                          histograms, marketplace B runs, artist social snapshots;
                          light: one snapshot per event (search counters and summaries),
                          artist social metrics; about 10x faster, for 1,000,000 events;
                          none: the catalog only (search counters 0)
  --seed <n>              random seed (default 1); same seed and --now give the same catalog
  --now <RFC 3339>        the moment the data is "as of" (default: start of the current hour)
  --append                add to a database that already has events, with new ids
                          (without it, seeding a non-empty catalog is refused)
  --batch-size <n>        events per transaction (default 2000)
  --database-url <url>    PostgreSQL to fill (default DATABASE_URL, else the embedded one)`;

const OPTIONS = {
  events: { type: 'string' },
  detail: { type: 'string' },
  seed: { type: 'string' },
  now: { type: 'string' },
  append: { type: 'boolean' },
  'batch-size': { type: 'string' },
  'database-url': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

class UsageError extends Error {}

// A CLI talks to a person on a terminal; the lint rule against console is for library code.
function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

function positiveInt(value: string | undefined, name: string, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`);
    return fallback;
  }
  // Underscores and commas allowed: --events 1_000_000.
  const digits = value.replace(/[_,]/g, '');
  if (!/^[0-9]+$/.test(digits) || !Number.isSafeInteger(Number(digits)) || Number(digits) < 1) {
    throw new UsageError(`--${name} must be a positive integer`);
  }
  return Number(digits);
}

async function main(): Promise<number> {
  let values;
  try {
    values = parseArgs({ options: OPTIONS, strict: true }).values;
  } catch (err) {
    say(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    say(USAGE);
    return 0;
  }
  let options;
  try {
    const detail = (values.detail ?? 'full') as Detail;
    if (!DETAILS.includes(detail)) throw new UsageError(`--detail must be one of ${DETAILS.join(', ')}`);
    const now = values.now === undefined ? undefined : new Date(values.now);
    if (now && Number.isNaN(now.getTime())) throw new UsageError('--now must be an RFC 3339 timestamp, e.g. 2025-06-01T12:00:00Z');
    options = {
      events: positiveInt(values.events, 'events'),
      detail,
      seed: positiveInt(values.seed, 'seed', 1),
      now,
      append: values.append ?? false,
      batchSize: positiveInt(values['batch-size'], 'batch-size', 2_000),
    };
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    say(`error: ${err.message}\n\n${USAGE}`);
    return 2;
  }

  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent' };
  if (values['database-url']) env.DATABASE_URL = values['database-url'];
  const config = loadConfig(env);
  // Loaded only now, like the database: a usage error is reported without waiting for either.
  const { seedCatalog, SeedRefusedError } = await import('./seed.ts');
  return runOnDatabase(
    config,
    say,
    {
      applicationName: 'seed',
      poolMax: 4,
      interrupted: 'interrupted: batches already committed stay; re-run with --append to add more',
      refusal: SeedRefusedError,
    },
    async (db) => {
      say(`seed: ${options.events.toLocaleString('en-US')} events, detail ${options.detail}, seed ${options.seed}`);
      const result = await seedCatalog(db, { ...options, onProgress: progressPrinter() });
      const rows = Object.values(result.rows).reduce((a, b) => a + b, 0);
      say(
        `seed: done in ${formatDuration(result.ms)}: ${result.events.toLocaleString('en-US')} events ` +
          `(ids ${result.firstEventId}..${result.lastEventId}), ${rows.toLocaleString('en-US')} rows, ` +
          `${Math.round(result.events / (result.ms / 1000)).toLocaleString('en-US')} events/s`,
      );
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      return 0;
    },
  );
}

exitWith(main(), say);
