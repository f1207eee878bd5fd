// `npm run ops -- <command>`: operations on the service's Temporal runs and monitors. JSON on
// stdout; on error a message on stderr and a non-zero exit. Talks to TEMPORAL_ADDRESS, or to the
// dev server `npm start` runs (127.0.0.1:TEMPORAL_PORT); monitors:blocked, billing:sync-status,
// scrapers:sessions, scrapers:proxies and accounts:signals read DATABASE_URL.
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { loadConfigOrExit, type Config } from '../config.ts';
import { temporalDataConverter } from '../../temporal/payload-codec.ts';
import { listFailedScrapes, parseSince, retryScrape } from './failed-scrapes.ts';
import { listPollers, showMonitor, troubledTargets } from './monitors.ts';
import { listFailedDeliveries, retryDelivery } from './webhooks.ts';

const USAGE = `usage: npm run ops -- <command> [options]

  scrapes:failed [--since 1h]                       failed or timed-out scrape runs (newest run per id)
  scrapes:retry <workflow id>                       run a failed scrape again and wait for it
  scrapes:retry --all-failed [--since 1h]           the same for every failed scrape run
  monitors:blocked [--platform pf_03]               watched targets a platform refuses (429/403), that keep failing, or retired (not found)
  monitors:show <item id>                           an item's monitor: config version, state, baseline, last notification
  monitors:pollers [--platform pf_03]               the running shard pollers and their last run
  monitors:incidents [--platform pf_03]             platform-wide incidents (most watched targets not found or blocked
                                                    at once): open ones with how their platform stands now, then the last 20
  scrapers:sessions [--platform pf_01]              each worker's browser page loads and browser-made sessions
                                                    (ready, made, renewed, refused, why none can be made)
  scrapers:proxies [--platform pf_03]               each proxied platform's proxies: requests, blocks, cooling down, health,
                                                    and its budget against what its targets need (which budget ran out)
  webhooks:failed [--since 1h]                      webhook deliveries that gave up (newest first)
  webhooks:retry <delivery id>                      send a failed delivery again (same webhook-id)
  webhooks:retry --all-failed [--since 1h]          the same for every failed delivery
  billing:sync-status [--all]                       Stripe meter sync lag per account (credits not yet accepted by Stripe);
                                                    --all: every account ever reported too
  accounts:signals                                  accounts' served-state changes Temporal has not been told yet
                                                    (trackings to wake, pollers to start), and those being retried`;

class UsageError extends Error {}

/** The webhook commands: the database only (the worker's dispatcher starts the new runs). */
async function webhooksCommand(config: Config, command: string, rest: string[], values: { since?: string; 'all-failed'?: boolean }): Promise<unknown> {
  const since = parseSince(values.since ?? '1h');
  if (command === 'webhooks:retry' && !values['all-failed'] && (rest.length !== 1 || !/^[1-9][0-9]{0,15}$/.test(rest[0]!))) {
    throw new UsageError('webhooks:retry needs one delivery id (see webhooks:failed) or --all-failed');
  }
  if (command === 'webhooks:failed' && rest.length) throw new UsageError(`unexpected argument ${rest[0]}`);
  const { openDatabase } = await import('../runtime/database.ts');
  const database = await openDatabase(config, (msg) => console.error(msg), { applicationName: 'ops', poolMax: 2 });
  try {
    if (command === 'webhooks:failed') return await listFailedDeliveries(database.db, since);
    if (!values['all-failed']) return await retryDelivery(database.db, Number(rest[0]));
    const out = [];
    for (const f of await listFailedDeliveries(database.db, since)) out.push(await retryDelivery(database.db, f.delivery_id));
    return out;
  } finally {
    await database.close();
  }
}

async function main(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { since: { type: 'string' }, 'all-failed': { type: 'boolean' }, all: { type: 'boolean' }, platform: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) throw new UsageError('');
  const config = loadConfigOrExit();
  if (command === 'webhooks:failed' || command === 'webhooks:retry') return webhooksCommand(config, command, rest, values);
  if (command === 'monitors:blocked' || command === 'monitors:incidents' || command === 'billing:sync-status' || command === 'scrapers:sessions' || command === 'scrapers:proxies' || command === 'accounts:signals') {
    if (rest.length) throw new UsageError(`unexpected argument ${rest[0]}`);
    const { openDatabase } = await import('../runtime/database.ts');
    const database = await openDatabase(config, (msg) => console.error(msg), { applicationName: 'ops', poolMax: 2 });
    try {
      if (command === 'billing:sync-status') {
        const { meterSyncStatus } = await import('../billing/stripe/meter-sync.ts');
        return await meterSyncStatus(database.db, { all: values.all });
      }
      if (command === 'scrapers:proxies') {
        const { platformProxies } = await import('./proxies.ts');
        return await platformProxies(database.db, { platform: values.platform, intervalMs: config.MONITOR_INTERVAL_MS });
      }
      if (command === 'monitors:incidents') {
        const { platformIncidents } = await import('./monitors.ts');
        return await platformIncidents(database.db, { platform: values.platform, windowMs: config.MONITOR_INCIDENT_WINDOW_MS });
      }
      if (command === 'accounts:signals') {
        const { signalBacklog } = await import('../accounts/service-signals.ts');
        return await signalBacklog(database.db);
      }
      if (command === 'scrapers:sessions') {
        const { workerSessions } = await import('./scrapers.ts');
        return await workerSessions(database.db, { platform: values.platform });
      }
      return await troubledTargets(database.db, { platform: values.platform });
    } finally {
      await database.close();
    }
  }
  const address = config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`;
  let connection: Connection;
  try {
    connection = await Connection.connect({ address, connectTimeout: 5_000 });
  } catch {
    throw new Error(`no Temporal server answers at ${address}: start the service (npm start) or set TEMPORAL_ADDRESS`);
  }
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter: temporalDataConverter });
  try {
    const since = parseSince(values.since ?? '1h');
    if (command === 'scrapes:failed') {
      if (rest.length) throw new UsageError(`unexpected argument ${rest[0]}`);
      return await listFailedScrapes(client, since);
    }
    if (command === 'scrapes:retry') {
      if (values['all-failed']) {
        if (rest.length) throw new UsageError('give a workflow id or --all-failed, not both');
        const failed = await listFailedScrapes(client, since);
        const outcomes = [];
        for (const f of failed) outcomes.push(await retryScrape(client, f.workflow_id));
        return outcomes;
      }
      if (rest.length !== 1) throw new UsageError('scrapes:retry needs one workflow id (see scrapes:failed) or --all-failed');
      return await retryScrape(client, rest[0]!);
    }
    if (command === 'monitors:show') {
      const id = Number(rest[0]);
      if (rest.length !== 1 || !Number.isSafeInteger(id) || id <= 0) throw new UsageError('monitors:show needs one watchlist item id');
      return await showMonitor(client, id);
    }
    if (command === 'monitors:pollers') {
      if (rest.length) throw new UsageError(`unexpected argument ${rest[0]}`);
      return await listPollers(client, { platform: values.platform });
    }
    throw new UsageError(`unknown command ${command}`);
  } finally {
    await connection.close();
  }
}

main(process.argv.slice(2)).then(
  (out) => {
    console.log(JSON.stringify(out, null, 2));
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      console.error(`${err.message ? `${err.message}\n\n` : ''}${USAGE}`);
      process.exit(2);
    }
    console.error((err as Error).message);
    process.exit(1);
  },
);
