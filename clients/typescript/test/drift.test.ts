// The checked-in generated types are what the generator makes of the documents the service
// serves now: a field added to a response schema without `npm run generate -w
// @ticket-market/client` fails here. Also: the document built in-process is the one the gateway
// serves, and the stream path the client uses is the AsyncAPI channel's address.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAsyncApi } from '../../../src/stream/asyncapi.ts';
import { GATEWAY_ENV } from '../../../test/support/gateway-helpers.ts';
import { startTestGateway, type TestGateway } from '../../../test/support/harness.ts';
import { generate, GENERATED, openApiDocument } from '../scripts/generate.ts';
import { STREAM_PATH } from '../src/index.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ env: { ...GATEWAY_ENV, PORT: '8080' } });
});
afterAll(async () => {
  await gw?.close();
});

describe('generated client types', () => {
  it('the generator reads the document the gateway serves', async () => {
    const served = await (await fetch(`${gw.url}/openapi.json`)).json();
    expect(openApiDocument()).toEqual(served);
  });

  it('src/generated/*.ts match the documents (run `npm run generate -w @ticket-market/client` if not)', async () => {
    const fresh = await generate();
    const [openapi, stream] = await Promise.all([readFile(GENERATED.openapi, 'utf8'), readFile(GENERATED.stream, 'utf8')]);
    expect(openapi, 'clients/typescript/src/generated/openapi.ts is stale: run npm run generate -w @ticket-market/client').toBe(fresh.openapi);
    expect(stream, 'clients/typescript/src/generated/stream.ts is stale: run npm run generate -w @ticket-market/client').toBe(fresh.stream);
  });

  it('a response field added to the document shows in the generated types', async () => {
    // The check above is only as good as the generator's sensitivity: prove it on a copy.
    const doc = openApiDocument() as { components: { schemas: Record<string, { properties: Record<string, unknown> }> } };
    doc.components.schemas.WatchlistItem!.properties.drift_probe = { type: 'string' };
    const { default: openapiTS, astToString } = await import('openapi-typescript');
    const text = astToString(await openapiTS(doc as never, { silent: true, defaultNonNullable: false }));
    expect(text).toContain('drift_probe');
    expect((await generate()).openapi).not.toContain('drift_probe');
  });

  it('the stream path is the AsyncAPI channel address', () => {
    const doc = buildAsyncApi() as { channels: { notifications: { address: string } } };
    expect(STREAM_PATH).toBe(doc.channels.notifications.address);
  });
});
