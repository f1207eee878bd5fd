// `npm run db:roles` (db/roles.ts) on the run's PostgreSQL (issue 25): the service's role owns
// its database and nothing else, the scrape worker's role may only connect to it and gets its
// table rights with the migrations (db/scraper-grants.ts), Temporal's role owns only its own two
// databases; none of them is a superuser or may create roles or databases. Roles and databases
// with names of this run's own, dropped afterwards.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../db/connection.ts';
import { migrateLatest } from '../../db/migrations/index.ts';
import { applyScraperGrants } from '../../db/scraper-grants.ts';
import { databaseUrl, runTs } from '../support/harness.ts';

const tag = randomBytes(4).toString('hex');
const names = { app: `tm_app_${tag}`, scraper: `tm_scraper_${tag}`, temporal: `tm_temporal_${tag}`, database: `tm_roles_${tag}`, temporalDb: `tm_tdb_${tag}` };
const password = randomBytes(12).toString('hex');

/** DATABASE_URL's server as `user` (the run's superuser when not given), on `database`. */
function urlFor(database: string, user?: string): string {
  const u = new URL(databaseUrl());
  u.pathname = `/${database}`;
  if (user) {
    u.username = user;
    u.password = password;
  }
  return u.toString();
}

async function query(url: string, sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql, params);
  } finally {
    await client.end();
  }
}

/** The SQLSTATE a query (or its connection) fails with, or null when it succeeds. */
const failure = (p: Promise<unknown>) => p.then(() => null, (err: { code?: string }) => err.code ?? String(err));

const env = () => ({
  ...process.env,
  ADMIN_DATABASE_URL: urlFor('postgres'),
  DATABASE_URL: urlFor(names.database, names.app),
  SCRAPER_DATABASE_URL: urlFor(names.database, names.scraper),
  TEMPORAL_DATABASE_URL: urlFor(names.temporalDb, names.temporal),
});

describe('npm run db:roles', () => {
  beforeAll(async () => {
    // A database from before issue 25: made by the superuser, with a table (and its sequence) and a function of the superuser's.
    await query(urlFor('postgres'), `CREATE DATABASE ${names.database}`);
    await query(urlFor(names.database), 'CREATE TABLE legacy (id serial PRIMARY KEY, answer int); INSERT INTO legacy (answer) VALUES (42)');
    await query(urlFor(names.database), 'CREATE FUNCTION legacy_answer() RETURNS int LANGUAGE sql AS $$ SELECT 42 $$');
  });
  afterAll(async () => {
    for (const d of [names.database, names.temporalDb, `${names.temporalDb}_visibility`]) await query(urlFor('postgres'), `DROP DATABASE IF EXISTS ${d} WITH (FORCE)`);
    for (const r of [names.app, names.scraper, names.temporal]) await query(urlFor('postgres'), `DROP ROLE IF EXISTS ${r}`);
  });

  it('makes three ordinary roles, each owning only its own databases, and hands an older database’s objects to the owner; running it again changes nothing', async () => {
    const run = await runTs('db/roles-main.ts', [], env());
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out.owner).toEqual({ role: names.app, database: names.database });
    expect(out.temporal).toEqual({ role: names.temporal, databases: [names.temporalDb, `${names.temporalDb}_visibility`] });
    // The table and the function (the table's sequence follows the table).
    expect(out.handed_over).toEqual({ [names.database]: 2, [names.temporalDb]: 0, [`${names.temporalDb}_visibility`]: 0 });

    const roles = await query(
      urlFor('postgres'),
      'SELECT rolname, rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = ANY($1) ORDER BY rolname',
      [[names.app, names.scraper, names.temporal]],
    );
    expect(roles.rows).toHaveLength(3);
    for (const r of roles.rows) expect(r).toMatchObject({ rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolreplication: false, rolbypassrls: false, rolcanlogin: true });
    const owners = await query(urlFor('postgres'), 'SELECT datname, pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = ANY($1) ORDER BY datname', [
      [names.database, names.temporalDb, `${names.temporalDb}_visibility`],
    ]);
    expect(Object.fromEntries(owners.rows.map((r) => [r.datname, r.owner]))).toEqual({
      [names.database]: names.app,
      [names.temporalDb]: names.temporal,
      [`${names.temporalDb}_visibility`]: names.temporal,
    });
    const objects = await query(
      urlFor(names.database),
      `SELECT relname AS name, pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relname IN ('legacy', 'legacy_id_seq')
       UNION ALL SELECT proname, pg_get_userbyid(proowner) FROM pg_proc WHERE proname = 'legacy_answer' ORDER BY 1`,
    );
    expect(objects.rows).toEqual([
      { name: 'legacy', owner: names.app },
      { name: 'legacy_answer', owner: names.app },
      { name: 'legacy_id_seq', owner: names.app },
    ]);
    expect((await query(urlFor(names.database, names.app), 'INSERT INTO legacy (answer) VALUES (43) RETURNING id')).rows).toEqual([{ id: 2 }]);

    const again = await runTs('db/roles-main.ts', [], env());
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).handed_over).toEqual({ [names.database]: 0, [names.temporalDb]: 0, [`${names.temporalDb}_visibility`]: 0 });
  }, 60_000);

  it('the owner applies every migration; the scrape worker’s role then reads neither API keys nor webhook secrets', async () => {
    const owner = createDb({ connectionString: urlFor(names.database, names.app), poolMax: 2 });
    try {
      await migrateLatest(owner);
      await applyScraperGrants(owner, names.scraper);
      await applyScraperGrants(owner, names.scraper); // again: the same rights, no error
    } finally {
      await owner.destroy();
    }
    const scraper = urlFor(names.database, names.scraper);
    // 42501: insufficient_privilege.
    expect(await failure(query(scraper, 'SELECT hash FROM api_keys'))).toBe('42501');
    expect(await failure(query(scraper, 'SELECT count(*) FROM api_keys'))).toBe('42501');
    expect(await failure(query(scraper, 'SELECT secret_sealed FROM webhooks'))).toBe('42501');
    expect(await failure(query(scraper, 'SELECT url_sealed FROM webhooks'))).toBe('42501');
    expect(await failure(query(scraper, 'SELECT * FROM webhooks'))).toBe('42501');
    expect(await failure(query(scraper, 'SELECT name FROM accounts'))).toBe('42501');
    expect(await failure(query(scraper, 'SELECT * FROM credit_ledger'))).toBe('42501');
    expect(await failure(query(scraper, 'SELECT * FROM webhook_attempts'))).toBe('42501');
    expect(await failure(query(scraper, 'SELECT body FROM webhook_deliveries'))).toBe('42501');
    expect(await failure(query(scraper, 'CREATE TABLE mine (x int)'))).toBe('42501');
    // Nothing it could sign or send (issue 38): the monitors append through a function of the owner's.
    expect(await failure(query(scraper, 'SELECT id, account_id, active, deleted FROM webhooks'))).toBe('42501');
    expect(await failure(query(scraper, "INSERT INTO notifications (account_id, kind, payload) VALUES (1, 'notification', '{}')"))).toBe('42501');
    expect(await failure(query(scraper, 'SELECT id FROM webhook_deliveries'))).toBe('42501');
    expect(await failure(query(scraper, "SELECT monitor_append_notifications('[]')"))).toBeNull();
    // What the monitors read.
    expect(await failure(query(scraper, 'SELECT count(*) FROM monitor_members'))).toBeNull();
    expect(await failure(query(scraper, "INSERT INTO scrape_worker_browsers (worker, task_queue, chromium_path, chromium_found) VALUES ('w', 'q', '/x', true)"))).toBeNull();
    expect(await failure(query(scraper, 'SELECT account_served(1)'))).toBeNull();
  }, 60_000);

  it('no role reaches another’s databases', async () => {
    // 42501 from the connection itself: no CONNECT right on the database.
    expect(await failure(query(urlFor(names.temporalDb, names.app), 'SELECT 1'))).toBe('42501');
    expect(await failure(query(urlFor(names.temporalDb, names.scraper), 'SELECT 1'))).toBe('42501');
    expect(await failure(query(urlFor(names.database, names.temporal), 'SELECT 1'))).toBe('42501');
    expect(await failure(query(urlFor(names.temporalDb, names.temporal), 'SELECT 1'))).toBeNull();
  });

  it('refuses a connection that is not a superuser’s, and a plan whose processes share a role', async () => {
    const notSuper = await runTs('db/roles-main.ts', [], { ...env(), ADMIN_DATABASE_URL: urlFor('postgres', names.app) });
    expect(notSuper.code).toBe(1);
    expect(notSuper.stderr).toMatch(/needs a superuser connection|permission denied|42501/);
    const shared = await runTs('db/roles-main.ts', [], { ...env(), SCRAPER_DATABASE_URL: urlFor(names.database, names.app) });
    expect(shared.code).toBe(1);
    expect(shared.stderr).toContain('each need a role of their own');
  });
});
