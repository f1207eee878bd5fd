// docker-compose's Temporal and the rehearsal's are one configuration (issue 39): the same server
// version, started with the same arguments on the same files of deploy/temporal (the static config,
// the dynamic config, the schema and namespace scripts), and the dynamic config says what the dev
// server `npm start` and the tests run get too (temporal/dev-server.ts, SERVICE_DYNAMIC_CONFIG).
// The static config is rendered by the server binary itself, once with compose's environment and
// once with the rehearsal's, and the two must differ only in addresses, names and credentials.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SERVICE_DYNAMIC_CONFIG, devServerArgs } from '../../temporal/dev-server.ts';
import { serverArgs, serverEnvironment, TEMPORAL_CONFIG_ENV, TEMPORAL_DEPLOY_DIR, type TemporalPorts } from '../../temporal/production-server.ts';
import { resolveTemporalServer, TEMPORAL_SERVER_VERSION, type TemporalServerBinaries } from '../../temporal/server-binary.ts';
import { MAX_CONNECTIONS } from '../../db/embedded.ts';
import { PROJECT_ROOT } from '../support/harness.ts';

interface Service {
  image?: string;
  entrypoint?: string[];
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
}

const compose = parse(readFileSync(`${PROJECT_ROOT}docker-compose.yml`, 'utf8'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
/** Where compose mounts deploy/temporal in every Temporal container. */
const MOUNT = '/etc/ticket-market/temporal';
const version = TEMPORAL_SERVER_VERSION.replace(/^v/, '');

describe("Temporal's configuration: docker-compose and the rehearsal", () => {
  it('run the same server version: compose images are tagged with the version the rehearsal builds', () => {
    expect(services.temporal!.image).toBe(`temporalio/server:${version}`);
    // admin-tools tags are `<server>-tctl-<x>-cli-<y>`: the schema it applies is the server's.
    expect(services['temporal-schema']!.image).toMatch(new RegExp(`^temporalio/admin-tools:${version.replaceAll('.', '\\.')}-`));
    expect(services['temporal-namespace']!.image).toBe(services['temporal-schema']!.image);
    // No image that sets itself up its own way is left.
    expect(Object.values(services).map((s) => s.image ?? '')).not.toContainEqual(expect.stringContaining('auto-setup'));
  });

  it('mount deploy/temporal into every Temporal container, and start the server with the rehearsal’s arguments', () => {
    for (const name of ['temporal', 'temporal-schema', 'temporal-namespace']) expect(services[name]!.volumes).toContain(`./deploy/temporal:${MOUNT}:ro`);
    const rehearsal = serverArgs('all').map((a) => (a === TEMPORAL_DEPLOY_DIR ? MOUNT : a));
    expect(services.temporal!.entrypoint).toEqual(['temporal-server', ...rehearsal]);
    expect(rehearsal).toContain(TEMPORAL_CONFIG_ENV);
  });

  it('apply the schema and register the namespace with the same scripts', () => {
    expect(services['temporal-schema']!.command).toEqual(['sh', `${MOUNT}/setup-schema.sh`]);
    expect(services['temporal-namespace']!.command).toEqual(['sh', `${MOUNT}/create-namespace.sh`]);
    // The namespace the processes use (TEMPORAL_NAMESPACE's default, as in the rehearsal).
    expect(services['temporal-namespace']!.environment?.TEMPORAL_NAMESPACE).toBe('default');
    // Nothing that needs the namespace starts before it is registered.
    for (const name of ['gateway', 'scrape-worker', 'delivery-worker']) {
      expect((services[name] as { depends_on?: Record<string, { condition: string }> }).depends_on?.['temporal-namespace']).toEqual({ condition: 'service_completed_successfully' });
    }
  });

  it('the dynamic config file says what every dev server is given', () => {
    const file = parse(readFileSync(`${PROJECT_ROOT}deploy/temporal/dynamic-config.yaml`, 'utf8')) as Record<string, { value: unknown }[]>;
    const values = Object.fromEntries(Object.entries(file).map(([k, v]) => [k, JSON.stringify(v[0]!.value)]));
    expect(values).toEqual(SERVICE_DYNAMIC_CONFIG);
  });

  it('every dev server gets it, and a caller can add to it', () => {
    const args = devServerArgs({ port: 7233, uiPort: null, namespace: 'default', dynamicConfig: { 'frontend.namespaceCount': 20_000 } }, '/tmp/x.sqlite').join(' ');
    for (const [key, value] of Object.entries(SERVICE_DYNAMIC_CONFIG)) expect(args).toContain(`--dynamic-config-value ${key}=${value}`);
    expect(args).toContain('--dynamic-config-value frontend.namespaceCount=20000');
  });

  describe('production.yaml, rendered by the server binary', () => {
    let binaries: TemporalServerBinaries;
    beforeAll(async () => {
      const found = await resolveTemporalServer();
      if (!found) throw new Error('no Temporal server binary on this machine: run `npm run temporal:install`');
      binaries = found;
    }, 15 * 60_000);

    /** The server's own reading of the config folder under `env` (its render-config command). */
    async function render(env: Record<string, string>): Promise<Record<string, unknown>> {
      const { stdout } = await promisify(execFile)(binaries.server, ['--root', '/', '--config', TEMPORAL_DEPLOY_DIR, '--env', TEMPORAL_CONFIG_ENV, 'render-config'], { env: { PATH: process.env.PATH, ...env } });
      return parse(stdout) as Record<string, unknown>;
    }

    const ports: TemporalPorts = {
      grpc: { frontend: 17233, history: 17234, matching: 17235, worker: 17239 },
      membership: { frontend: 16933, history: 16934, matching: 16935, worker: 16939 },
      frontendHttp: 17243,
    };
    const composeEnv = () => ({ ...services.temporal!.environment!, TEMPORAL_DB_PASSWORD: 'compose-secret' });
    const rehearsalEnv = () => serverEnvironment({ host: '127.0.0.1', port: 15432, user: 'temporal', password: 'rehearsal-secret', database: 'temporal', visibilityDatabase: 'temporal_visibility' }, ports);

    it("with compose's environment: PostgreSQL for both stores, compose's addresses and the mounted dynamic config", async () => {
      const cfg = (await render(composeEnv())) as { persistence: Persistence; dynamicConfigClient: { filepath: string }; services: Record<string, { rpc: { grpcPort: number; bindOnIP: string } }> };
      expect(store(cfg.persistence, 'default')).toMatchObject({ pluginName: 'postgres12', databaseName: 'temporal', connectAddr: 'postgres:5432', user: 'temporal' });
      expect(store(cfg.persistence, 'visibility')).toMatchObject({ pluginName: 'postgres12', databaseName: 'temporal_visibility', connectAddr: 'postgres:5432' });
      expect(cfg.persistence.numHistoryShards).toBe(4);
      expect(cfg.dynamicConfigClient.filepath).toBe(`${MOUNT}/dynamic-config.yaml`);
      expect(cfg.services.frontend!.rpc).toMatchObject({ grpcPort: 7233, bindOnIP: '0.0.0.0' });
      // compose's own address for the frontend (x-common-env's TEMPORAL_ADDRESS).
      expect(Object.keys(cfg.services).sort()).toEqual(['frontend', 'history', 'matching', 'worker']);
    });

    it("with the rehearsal's: the same config but for addresses, names and credentials", async () => {
      const a = await render(composeEnv());
      const b = await render(rehearsalEnv());
      expect(store((b as { persistence: Persistence }).persistence, 'default')).toMatchObject({ connectAddr: '127.0.0.1:15432' });
      expect((b as { dynamicConfigClient: { filepath: string } }).dynamicConfigClient.filepath).toBe(`${TEMPORAL_DEPLOY_DIR}dynamic-config.yaml`);
      expect(normalise(b)).toEqual(normalise(a));
    });
  });
});

describe("PostgreSQL's connection limit", () => {
  it("is the same in docker-compose and in the embedded cluster the rehearsal runs, and holds Temporal's pools, one process per service, with room for ours", () => {
    expect(services.postgres!.command).toEqual(['postgres', '-c', `max_connections=${MAX_CONNECTIONS}`]);
    const yaml = readFileSync(`${TEMPORAL_DEPLOY_DIR}production.yaml`, 'utf8');
    const pools = [...yaml.matchAll(/maxConns: (?:\{\{ env "TEMPORAL_DB_MAX_CONNS" \| default "(\d+)" \}\}|(\d+))/g)].map((m) => Number(m[1] ?? m[2]));
    expect(pools).toHaveLength(2);
    const temporal = 4 * pools.reduce((a, b) => a + b, 0);
    // Ours: 7 processes in the rehearsal (2 gateways, 2 stream nodes, 2 scrape workers, 1 delivery worker).
    expect(MAX_CONNECTIONS - temporal).toBeGreaterThanOrEqual(150);
  });
});

type Persistence = { numHistoryShards: number; datastores: Record<string, { sql: Record<string, unknown> }> };

function store(p: Persistence, name: string): Record<string, unknown> {
  return p.datastores[name]!.sql;
}

/** The config with what may differ between two deployments (where, and with which secret) blanked. */
function normalise(cfg: Record<string, unknown>): unknown {
  const WHERE = /^(connectAddr|user|password|grpcPort|httpPort|membershipPort|bindOnIP|broadcastAddress|rpcAddress|httpAddress|filepath|level)$/;
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, WHERE.test(k) ? '(deployment)' : walk(x)]));
    return v;
  };
  return walk(cfg);
}
