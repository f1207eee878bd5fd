// docker-compose.yml's processes and database roles (issue 25), read from the file as compose
// resolves it (anchors and merge keys): no service but the db-roles job connects as the
// superuser; the service's processes connect as the owning role, the scrape worker as its own
// role with no webhook or Stripe key, Temporal as its own role; the two workers split the task
// queues and the secrets; the roles db-roles makes are the ones the processes use.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SCRAPE_WORKER_REFUSES } from '../../temporal/worker-roles.ts';
import { PROJECT_ROOT } from '../support/harness.ts';

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
}

const compose = parse(readFileSync(`${PROJECT_ROOT}docker-compose.yml`, 'utf8'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const env = (name: string) => services[name]?.environment ?? {};
/** The user a connection string names (interpolations left as written). */
const userOf = (url: string | undefined) => /^postgres:\/\/([^:@]+)[:@]/.exec(url ?? '')?.[1];
const databaseOf = (url: string | undefined) => /@[^/]+\/([^?]+)/.exec(url ?? '')?.[1];
const SUPERUSER = '${POSTGRES_SUPERUSER:-postgres}';

describe('docker-compose.yml', () => {
  it('runs the two workers apart: the scrape worker without a secret, the delivery worker without the browser', () => {
    expect(services.worker).toBeUndefined();
    for (const name of ['scrape-worker', 'delivery-worker']) expect(services[name]?.command).toEqual(['node', '--import', 'tsx', 'temporal/worker-main.ts']);
    expect(env('scrape-worker').WORKER_ROLE).toBe('scrape');
    expect(env('delivery-worker').WORKER_ROLE).toBe('deliver');
    for (const secret of [...SCRAPE_WORKER_REFUSES, 'POSTGRES_PASSWORD', 'BILLING_PROVIDER']) expect(env('scrape-worker'), secret).not.toHaveProperty(secret);
    expect(env('delivery-worker')).toHaveProperty('WEBHOOK_SECRET_KEY');
    expect(env('delivery-worker').BILLING_PROVIDER).toBe('stripe');
    expect(env('delivery-worker')).toHaveProperty('STRIPE_SECRET_KEY');
    // Processes that neither seal webhooks nor bill hold neither key.
    for (const name of ['stream', 'migrate']) for (const secret of SCRAPE_WORKER_REFUSES) expect(env(name), `${name} ${secret}`).not.toHaveProperty(secret);
  });

  it('only the db-roles job connects as the superuser; the service as its owning role, the scrape worker and Temporal as roles of their own', () => {
    const owner = userOf(env('gateway').DATABASE_URL);
    expect(owner).toBe('ticket_market_app');
    for (const name of ['migrate', 'gateway', 'stream', 'delivery-worker']) expect(userOf(env(name).DATABASE_URL), name).toBe(owner);
    expect(userOf(env('scrape-worker').DATABASE_URL)).toBe('ticket_market_scraper');
    expect(databaseOf(env('scrape-worker').DATABASE_URL)).toBe(databaseOf(env('gateway').DATABASE_URL));
    // The server and its schema job, as Temporal's role; the databases are db-roles' to make.
    for (const name of ['temporal', 'temporal-schema']) expect(env(name).TEMPORAL_DB_USER, name).toBe('temporal');
    // The superuser's password reaches PostgreSQL and the db-roles job, nothing else.
    for (const [name, s] of Object.entries(services)) {
      const values = Object.values(s.environment ?? {}).join('\n');
      const mentionsSuperuser = values.includes('POSTGRES_PASSWORD') || values.includes(SUPERUSER);
      expect(mentionsSuperuser, name).toBe(name === 'postgres' || name === 'db-roles');
    }
    expect(env('db-roles').ADMIN_DATABASE_URL).toMatch(/^postgres:\/\/\$\{POSTGRES_SUPERUSER:-postgres\}:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432\/postgres$/);
  });

  it('db-roles makes exactly the roles the processes use, before anything connects; migrate grants the scrape worker’s rights', () => {
    const roles = env('db-roles');
    expect(services['db-roles']?.command).toEqual(['node', '--import', 'tsx', 'db/roles-main.ts']);
    expect(roles.DATABASE_URL).toBe(env('gateway').DATABASE_URL);
    expect(roles.SCRAPER_DATABASE_URL).toBe(env('scrape-worker').DATABASE_URL);
    expect(userOf(roles.TEMPORAL_DATABASE_URL)).toBe(env('temporal').TEMPORAL_DB_USER);
    expect(roles.TEMPORAL_DATABASE_URL).toContain(env('temporal').TEMPORAL_DB_PASSWORD);
    // deploy/temporal/production.yaml's default names: temporal and temporal_visibility.
    expect(databaseOf(roles.TEMPORAL_DATABASE_URL)).toBe('temporal');
    expect(env('temporal').TEMPORAL_DB_NAME).toBeUndefined();
    expect(env('migrate').SCRAPER_DB_ROLE).toBe(userOf(env('scrape-worker').DATABASE_URL));
    for (const name of ['migrate', 'temporal-schema']) expect(services[name]?.depends_on?.['db-roles']).toEqual({ condition: 'service_completed_successfully' });
    expect(services.temporal?.depends_on?.['temporal-schema']).toEqual({ condition: 'service_completed_successfully' });
    for (const name of ['gateway', 'stream', 'scrape-worker', 'delivery-worker']) expect(services[name]?.depends_on?.migrate).toEqual({ condition: 'service_completed_successfully' });
  });
});
