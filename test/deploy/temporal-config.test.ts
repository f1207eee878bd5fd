// docker-compose's Temporal server gets the dynamic config the service relies on, the same as the
// dev server `npm start` and the tests run (temporal/dev-server.ts, SERVICE_DYNAMIC_CONFIG): the
// file is mounted where DYNAMIC_CONFIG_FILE_PATH points, and says the same values.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SERVICE_DYNAMIC_CONFIG, devServerArgs } from '../../temporal/dev-server.ts';
import { PROJECT_ROOT } from '../support/harness.ts';

interface Service {
  environment?: Record<string, string>;
  volumes?: string[];
}

const compose = parse(readFileSync(`${PROJECT_ROOT}docker-compose.yml`, 'utf8'), { merge: true }) as { services: Record<string, Service> };

describe("Temporal's dynamic config", () => {
  it('docker-compose mounts deploy/temporal-dynamic-config.yaml where DYNAMIC_CONFIG_FILE_PATH points, with the dev server values', () => {
    const temporal = compose.services.temporal!;
    const path = temporal.environment?.DYNAMIC_CONFIG_FILE_PATH;
    expect(path).toBeTruthy();
    // auto-setup resolves the path from /etc/temporal.
    expect(temporal.volumes).toContain(`./deploy/temporal-dynamic-config.yaml:/etc/temporal/${path}:ro`);
    const file = parse(readFileSync(`${PROJECT_ROOT}deploy/temporal-dynamic-config.yaml`, 'utf8')) as Record<string, { value: unknown }[]>;
    const values = Object.fromEntries(Object.entries(file).map(([k, v]) => [k, JSON.stringify(v[0]!.value)]));
    expect(values).toEqual(SERVICE_DYNAMIC_CONFIG);
  });

  it('every dev server gets it, and a caller can add to it', () => {
    const args = devServerArgs({ port: 7233, uiPort: null, namespace: 'default', dynamicConfig: { 'frontend.namespaceCount': 20_000 } }, '/tmp/x.sqlite').join(' ');
    for (const [key, value] of Object.entries(SERVICE_DYNAMIC_CONFIG)) expect(args).toContain(`--dynamic-config-value ${key}=${value}`);
    expect(args).toContain('--dynamic-config-value frontend.namespaceCount=20000');
  });
});
