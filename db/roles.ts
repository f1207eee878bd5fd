// PostgreSQL roles (issue 25). The service connects as a role that owns its database and nothing
// else; the scrape worker as a role that can only log in to it (its table rights come from
// db/scraper-grants.ts, applied with the migrations); Temporal as a role that owns only its own
// two databases. None of them is a superuser or may create roles or databases.
//
// Set up by a superuser, idempotently: the embedded PostgreSQL at every start (db/embedded.ts)
// and `npm run db:roles` for a server of your own (db/roles-main.ts; docker-compose's db-roles
// job). Objects a superuser made earlier (a cluster from before issue 25, whose tables the
// superuser owns) are handed to the owning role.
import pg from 'pg';
import { scramVerifier } from './scram-verifier.ts';

export interface LoginRole {
  name: string;
  password: string;
}

/** Every role made here can log in and do nothing else by itself. */
const ORDINARY = 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT';

/** Serialises set-ups of one cluster (`npm start` and an admin CLI starting together). */
const SETUP_LOCK = 7_317_025;

const ident = (name: string) => pg.escapeIdentifier(name);

/** A superuser's connection to `database` on the server of `superuserUrl`. */
async function connectAs(superuserUrl: string, database: string): Promise<pg.Client> {
  const url = new URL(superuserUrl);
  url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString(), application_name: 'db-roles' });
  // A server shutting down between two statements (Ctrl-C reaches the embedded one too) must not
  // crash the process with an unhandled 'error': the next statement reports it to its caller.
  client.on('error', () => {});
  await client.connect();
  return client;
}

/**
 * Makes `role` an ordinary login role with this password (created, or its attributes and
 * password set again). Refuses the cluster's bootstrap superuser, which cannot be demoted: a
 * docker-compose stack from before issue 25 made its POSTGRES_USER (`ticket_market`) that one.
 */
async function ensureLoginRole(admin: pg.Client, role: LoginRole): Promise<void> {
  const found = await admin.query<{ bootstrap: boolean }>('SELECT oid = 10 AS bootstrap FROM pg_roles WHERE rolname = $1', [role.name]);
  if (found.rows[0]?.bootstrap) {
    throw new Error(
      `role ${role.name} is this cluster's bootstrap superuser and cannot be made an ordinary role: give the service a role of another name (docs/operations.md#database-roles)`,
    );
  }
  const verb = found.rowCount === 0 ? 'CREATE' : 'ALTER';
  // The verifier, never the password: a statement's text may be logged (db/scram-verifier.ts).
  await admin.query(`${verb} ROLE ${ident(role.name)} ${ORDINARY} PASSWORD ${pg.escapeLiteral(scramVerifier(role.password))}`);
}

/** Creates `database` owned by `owner`, or makes `owner` its owner; only its owner and `connect` may connect. */
async function ensureDatabase(admin: pg.Client, database: string, owner: string, connect: readonly string[] = []): Promise<void> {
  const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  if (found.rowCount === 0) await admin.query(`CREATE DATABASE ${ident(database)} OWNER ${ident(owner)}`);
  else await admin.query(`ALTER DATABASE ${ident(database)} OWNER TO ${ident(owner)}`);
  // PUBLIC may connect to (and make temporary tables in) every new database by default.
  await admin.query(`REVOKE ALL ON DATABASE ${ident(database)} FROM PUBLIC`);
  for (const role of connect) await admin.query(`GRANT CONNECT ON DATABASE ${ident(database)} TO ${ident(role)}`);
}

/** Not the system's own schemas. */
const USER_SCHEMAS = `n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'`;
/** Not part of an extension (those belong to whoever created the extension). */
const NOT_EXTENSION = (catalog: string, oid: string) =>
  `NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = '${catalog}'::regclass AND e.objid = ${oid} AND e.deptype = 'e')`;

/**
 * ALTER … OWNER statements for every object in the database's own schemas not owned by `owner`:
 * schemas (but `public`, owned by pg_database_owner since PostgreSQL 15), tables, views,
 * sequences (those of a column follow their table), routines and types.
 */
const ORPHANS_SQL = `
SELECT format('ALTER SCHEMA %I OWNER TO %I', n.nspname, $1::text) AS sql
  FROM pg_namespace n
 WHERE ${USER_SCHEMAS} AND n.nspname <> 'public' AND n.nspowner <> $1::text::regrole AND ${NOT_EXTENSION('pg_namespace', 'n.oid')}
UNION ALL
SELECT format('ALTER %s %s OWNER TO %I',
         CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE'
                        WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
         c.oid::regclass, $1::text)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE ${USER_SCHEMAS} AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND c.relowner <> $1::text::regrole
   AND ${NOT_EXTENSION('pg_class', 'c.oid')}
   AND NOT (c.relkind = 'S' AND EXISTS (
         SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
            AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')))
UNION ALL
SELECT format('ALTER %s %s OWNER TO %I', CASE p.prokind WHEN 'a' THEN 'AGGREGATE' ELSE 'ROUTINE' END, p.oid::regprocedure, $1::text)
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE ${USER_SCHEMAS} AND p.proowner <> $1::text::regrole AND ${NOT_EXTENSION('pg_proc', 'p.oid')}
UNION ALL
SELECT format('ALTER %s %s OWNER TO %I', CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, t.oid::regtype, $1::text)
  FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
 WHERE ${USER_SCHEMAS} AND t.typowner <> $1::text::regrole AND ${NOT_EXTENSION('pg_type', 't.oid')}
   AND (t.typtype IN ('e', 'd', 'r', 'm') OR (t.typtype = 'c' AND (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c'))`;

/** Hands every object of `database` that another role owns (a superuser, before issue 25) to `owner`. */
async function handOver(superuserUrl: string, database: string, owner: string): Promise<number> {
  const client = await connectAs(superuserUrl, database);
  try {
    const { rows } = await client.query<{ sql: string }>(ORPHANS_SQL, [owner]);
    if (rows.length === 0) return 0;
    await client.query('BEGIN');
    for (const r of rows) await client.query(r.sql);
    await client.query('COMMIT');
    return rows.length;
  } finally {
    await client.end();
  }
}

export interface RolePlan {
  /** The service's database and the role that owns it (migrations, gateways, stream, delivery worker). */
  app: { database: string; role: LoginRole };
  /** The scrape worker's role: it may connect to the app's database; its table rights come with the migrations. */
  scraper?: LoginRole;
  /** Temporal's role and the databases it owns (history and visibility). */
  temporal?: { role: LoginRole; databases: string[] };
}

export interface RoleSetup {
  /** Objects handed from another owner to their database's owning role, per database. */
  handedOver: Record<string, number>;
}

/** Sets up every role and database of `plan` as the superuser of `superuserUrl`. Safe to run again. */
export async function setUpRoles(superuserUrl: string, plan: RolePlan): Promise<RoleSetup> {
  const admin = await connectAs(superuserUrl, 'postgres');
  const handedOver: Record<string, number> = {};
  try {
    const { rows } = await admin.query<{ rolsuper: boolean }>('SELECT rolsuper FROM pg_roles WHERE rolname = current_user');
    if (!rows[0]?.rolsuper) throw new Error('setting up the database roles needs a superuser connection');
    await admin.query('SELECT pg_advisory_lock($1)', [SETUP_LOCK]);
    await ensureLoginRole(admin, plan.app.role);
    if (plan.scraper) await ensureLoginRole(admin, plan.scraper);
    await ensureDatabase(admin, plan.app.database, plan.app.role.name, plan.scraper ? [plan.scraper.name] : []);
    handedOver[plan.app.database] = await handOver(superuserUrl, plan.app.database, plan.app.role.name);
    if (plan.temporal) {
      await ensureLoginRole(admin, plan.temporal.role);
      for (const database of plan.temporal.databases) {
        await ensureDatabase(admin, database, plan.temporal.role.name);
        handedOver[database] = await handOver(superuserUrl, database, plan.temporal.role.name);
      }
    }
    return { handedOver };
  } finally {
    await admin.end();
  }
}

/** The role, password and database a connection string names (for `npm run db:roles`). */
export function loginFromUrl(connectionString: string, variable: string): { role: LoginRole; database: string } {
  const url = new URL(connectionString);
  const name = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name || !password || !database) throw new Error(`${variable} must name a user, a password and a database: postgres://user:password@host:5432/database`);
  return { role: { name, password }, database };
}
