// The stream on the gateway's host and port, as `npm start` serves it: the gateway's HTTP server
// forwards upgrades of the stream path to the uWS node (raw TCP), with the client's address in
// X-Forwarded-For so the per-address limit still applies; other upgrade paths are 404.
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APIS } from '../../src/apis/index.ts';
import { createGateway } from '../../src/gateway/app.ts';
import { Metrics } from '../../src/gateway/metrics.ts';
import { createLogger } from '../../src/logger.ts';
import { closeServices, createRequestPool, createServices } from '../../src/runtime/services.ts';
import { forwardStreamUpgrades, type UpgradeForwarder } from '../../src/stream/forward.ts';
import { STREAM_PATH } from '../../src/stream/protocol.ts';
import { newAccount, testConfig, type TestAccount } from '../support/harness.ts';
import { awayFromMinuteEdge } from '../support/gateway-helpers.ts';
import { append, connect, randomAddress, refusal, startNode, type TestNode } from './helpers.ts';

describe('stream through the gateway port', () => {
  let node: TestNode;
  let server: Server;
  let forwarder: UpgradeForwarder;
  let services: ReturnType<typeof createServices>;
  let base: string;
  let a: TestAccount;

  beforeAll(async () => {
    node = await startNode({ env: { UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '2' } });
    const config = testConfig({ TRUST_PROXY: 'true' });
    services = createServices(config, node.db, createRequestPool(config, config.DATABASE_URL!), createLogger('silent'), new Metrics(false));
    const app = createGateway(services, APIS);
    server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    forwarder = forwardStreamUpgrades(server, { port: node.port, trustProxy: true, log: createLogger('silent') });
    base = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    a = await newAccount(node.db);
  });
  afterAll(async () => {
    forwarder.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await closeServices(services);
    await node.close();
  });

  it('upgrades on the gateway port: hello, then the rows of the account', async () => {
    const c = await connect(`ws://${base}${STREAM_PATH}`, { key: a.key });
    expect(c.messages[0]).toMatchObject({ type: 'hello', account_id: a.accountId });
    const ids = await append(node.db, a.accountId, 3);
    await c.until((x) => x.ids().length === 3);
    expect(c.ids()).toEqual(ids);
    c.close();
    expect(await c.closed).toMatchObject({ code: 1005 });
    // Resume works the same through the gateway.
    const r = await connect(`ws://${base}${STREAM_PATH}?last_id=${ids[0]}`, { key: a.key });
    expect(r.ids()).toEqual(ids.slice(1));
    r.close();
  });

  it('refusals come back as the stream node answered them', async () => {
    const none = await refusal(`ws://${base}${STREAM_PATH}`);
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: { code: 'unauthenticated', message: expect.any(String) } });
    const bad = await refusal(`ws://${base}${STREAM_PATH}?last_id=x`, { apikey: a.key });
    expect(bad.status).toBe(400);
  });

  it("limits rejected keys per client address: the gateway passes the client's address", async () => {
    await awayFromMinuteEdge(10_000);
    const address = randomAddress();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await refusal(`ws://${base}${STREAM_PATH}`, { 'x-forwarded-for': address, apikey: 'wrong' })).status);
    expect(statuses).toEqual([401, 401, 429]);
    // A spoofed earlier entry does not help: the proxy-appended (last) entry counts.
    expect((await refusal(`ws://${base}${STREAM_PATH}`, { 'x-forwarded-for': `1.2.3.4, ${address}`, apikey: 'wrong' })).status).toBe(429);
    expect((await refusal(`ws://${base}${STREAM_PATH}`, { 'x-forwarded-for': randomAddress(), apikey: 'wrong' })).status).toBe(401);
  });

  it('answers 404 for upgrades of other paths and serves the AsyncAPI document', async () => {
    const other = await refusal(`ws://${base}/watchlist`, { apikey: a.key });
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe('not_found');
    const doc = await fetch(`http://${base}/asyncapi.json`);
    expect(doc.status).toBe(200);
    expect(((await doc.json()) as { asyncapi: string }).asyncapi).toBe('3.0.0');
    // GET only, as every route: HEAD is a wrong method (spec 7.1), whatever the path.
    const head = await fetch(`http://${base}/asyncapi.json`, { method: 'HEAD' });
    expect(head.status).toBe(404);
    // The HTTP API is untouched.
    expect((await fetch(`http://${base}/watchlist`, { headers: { apikey: a.key } })).status).toBe(200);
  });

  it('answers 502 when the stream node is not there', async () => {
    // A bare HTTP server whose upgrades go to a port nothing listens on.
    const bare = http.createServer();
    forwardStreamUpgrades(bare, { port: 1, trustProxy: false, log: createLogger('silent') });
    await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
    try {
      const r = await refusal(`ws://127.0.0.1:${(bare.address() as AddressInfo).port}${STREAM_PATH}`, { apikey: a.key });
      expect(r.status).toBe(502);
      expect(r.body.error.code).toBe('service_unavailable');
    } finally {
      await new Promise((r) => bare.close(r));
    }
  });
});
