// GET /openapi.json (brief: the gateway serves its OpenAPI 3.1 document): public, a valid
// OpenAPI 3.1 object whose paths are exactly the mounted operations in {param} syntax, whose
// references all resolve inside the document, whose watchlist create body carries the server
// defaults of spec 2.1, and which Redocly's recommended ruleset passes without a warning.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APIS } from '../../src/apis/index.ts';
import type { ApiModule } from '../../src/gateway/app.ts';
import { operation } from '../../src/gateway/catalog.ts';
import { startTestGateway, type TestGateway } from '../support/harness.ts';
import { clientFor, createFixtureApi, GATEWAY_ENV, withFixture as fixtureInPlace } from '../support/gateway-helpers.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;

let gw: TestGateway;
let withFixture: TestGateway;
let doc: Doc;
let fixtureDoc: Doc;
const fixtureApis: readonly ApiModule[] = fixtureInPlace(createFixtureApi());

beforeAll(async () => {
  gw = await startTestGateway({ env: GATEWAY_ENV });
  // Another PORT, to see the document's local server follow it (nothing listens there).
  withFixture = await startTestGateway({ env: { ...GATEWAY_ENV, PORT: '9123' }, apis: fixtureApis });
  doc = (await clientFor(gw.url)('GET', '/openapi.json')).body;
  fixtureDoc = (await clientFor(withFixture.url)('GET', '/openapi.json')).body;
});
afterAll(async () => {
  await gw.close();
  await withFixture.close();
});

/** The mounted operations of a gateway, as `{method, path}` with the path in OpenAPI syntax. */
function mountedOperations(apis: readonly ApiModule[]): { id: string; method: string; path: string }[] {
  return apis.flatMap((a) =>
    a.routes.map((r) => {
      const op = operation(r.operationId);
      const path = op.path
        .split('/')
        .map((seg) => (seg.startsWith(':') ? `{${seg.slice(1)}}` : seg))
        .join('/');
      return { id: r.operationId, method: op.method.toLowerCase(), path };
    }),
  );
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function operationsOf(d: Doc): { path: string; method: string; op: Doc }[] {
  return Object.entries(d.paths as Record<string, Doc>).flatMap(([path, item]) =>
    Object.entries(item as Record<string, Doc>)
      .filter(([m]) => HTTP_METHODS.includes(m))
      .map(([method, op]) => ({ path, method, op })),
  );
}

/** Resolves a local JSON pointer reference against the whole document. */
function resolve(d: Doc, ref: string): unknown {
  expect(ref.startsWith('#/'), `only local references are used: ${ref}`).toBe(true);
  let node: unknown = d;
  for (const raw of ref.slice(2).split('/')) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(part in (node as object))) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

function refs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => refs(n, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refs(v, out);
    }
  }
  return out;
}

/** Follows a schema's $ref (if any) to the schema itself. */
function deref(d: Doc, schema: Doc): Doc {
  let s = schema;
  for (let i = 0; i < 10 && s && typeof s.$ref === 'string'; i++) s = resolve(d, s.$ref);
  return s;
}

describe('GET /openapi.json', () => {
  it('is served without a key, as JSON, with a request id', async () => {
    const r = await clientFor(gw.url)('GET', '/openapi.json');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.headers.get('x-request-id')).toBeTruthy();
    expect(r.body).toEqual(JSON.parse(r.text));
  });

  it('answers HEAD 404 not_found, as every route does (spec 7.1: wrong method)', async () => {
    const r = await clientFor(gw.url)('HEAD', '/openapi.json');
    expect(r.status).toBe(404);
    expect(r.text).toBe('');
  });

  it('is also served with any key, valid or not (it is public)', async () => {
    const r = await clientFor(gw.url)('GET', '/openapi.json', { key: 'garbage' });
    expect(r.status).toBe(200);
    expect(r.body.openapi).toBe(doc.openapi);
  });

  it('is an OpenAPI 3.1 object with info version 1.0 (spec 9) and the apikey header scheme', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(typeof doc.info.title).toBe('string');
    expect(doc.info.title.length).toBeGreaterThan(0);
    expect(doc.info.version).toBe('1.0');
    const schemes = doc.components.securitySchemes as Record<string, Doc>;
    const names = Object.entries(schemes).filter(([, s]) => s.type === 'apiKey' && s.in === 'header' && s.name === 'apikey').map(([n]) => n);
    expect(names).toHaveLength(1);
    expect(doc.security).toEqual([{ [names[0]!]: [] }]);
    // Every top-level member is one OpenAPI 3.1 allows.
    const allowed = ['openapi', 'info', 'jsonSchemaDialect', 'servers', 'paths', 'webhooks', 'components', 'security', 'tags', 'externalDocs'];
    for (const k of Object.keys(doc)) expect(allowed.includes(k) || k.startsWith('x-'), k).toBe(true);
  });

  it('names its servers: the host it was fetched from, then {base_url} defaulting to a local npm start on PORT', () => {
    expect(doc.servers.map((s: Doc) => s.url)).toEqual(['/', '{base_url}']);
    expect(doc.servers[1].variables.base_url.default).toBe('http://localhost:8080');
    expect(fixtureDoc.servers[1].variables.base_url.default).toBe('http://localhost:9123');
    for (const s of doc.servers) expect(typeof s.description).toBe('string');
  });

  it('states its licence honestly: proprietary, as an SPDX LicenseRef, with no invented URL', () => {
    expect(doc.info.license).toEqual({ name: 'Proprietary', identifier: 'LicenseRef-Proprietary' });
  });

  it('lists exactly the mounted operations, paths in {param} syntax', () => {
    const expected = mountedOperations(APIS);
    const listed = operationsOf(doc);
    expect(listed.map((o) => `${o.method} ${o.path}`).sort()).toEqual(expected.map((o) => `${o.method} ${o.path}`).sort());
    expect(listed.map((o) => o.op.operationId).sort()).toEqual(expected.map((o) => o.id).sort());
    for (const path of Object.keys(doc.paths)) {
      expect(path.startsWith('/'), path).toBe(true);
      expect(path, path).not.toContain(':');
    }
  });

  it('a module serving an operation in place of the real one is what the document describes, once', () => {
    const listed = operationsOf(fixtureDoc).map((o) => `${o.method} ${o.path}`);
    expect(listed.sort()).toEqual(mountedOperations(fixtureApis).map((o) => `${o.method} ${o.path}`).sort());
    expect(new Set(listed).size).toBe(listed.length);
    const sales = operationsOf(fixtureDoc).find((o) => o.op.operationId === 'listMarketplaceASales');
    expect(sales?.op.summary).toMatch(/^fixture:/);
    const real = operationsOf(doc).find((o) => o.op.operationId === 'listMarketplaceASales');
    expect(real?.op.summary).not.toMatch(/^fixture:/);
  });

  it('declares every {param} of a path as a required path parameter', () => {
    for (const doc_ of [doc, fixtureDoc]) {
      for (const { path, method, op } of operationsOf(doc_)) {
        const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
        const declared = (op.parameters ?? []).filter((p: Doc) => p.in === 'path');
        expect(declared.map((p: Doc) => p.name).sort(), `${method} ${path}`).toEqual(names.sort());
        for (const p of declared) expect(p.required).toBe(true);
      }
    }
  });

  it('documents each operation’s answers: a 2xx, the gateway denials, 402 only where credits are charged, and the cost', () => {
    for (const doc_ of [doc, fixtureDoc]) {
      for (const { path, method, op } of operationsOf(doc_)) {
        const where = `${method} ${path}`;
        const statuses = Object.keys(op.responses);
        for (const s of statuses) expect(s, where).toMatch(/^[1-5]\d\d$|^[1-5]XX$|^default$/);
        expect(statuses.some((s) => s.startsWith('2')), where).toBe(true);
        for (const s of Object.values(op.responses) as Doc[]) expect(typeof s.description, where).toBe('string');
        for (const s of ['401', '403', '429']) expect(statuses, where).toContain(s);
        const cost = operation(op.operationId).cost;
        if (cost === 0) expect(statuses, where).not.toContain('402');
        else expect(statuses, where).toContain('402');
        if (typeof cost === 'number') expect(op['x-credits'], where).toBe(cost);
        const unauthorized = deref(doc_, op.responses['401'].content['application/json'].schema);
        expect(unauthorized.properties.error.properties.code.type).toBe('string');
      }
    }
  });

  it('every $ref resolves inside the document', () => {
    for (const doc_ of [doc, fixtureDoc]) {
      const all = refs(doc_);
      expect(all.length).toBeGreaterThan(0);
      for (const ref of all) expect(resolve(doc_, ref), ref).toBeDefined();
    }
  });

  it('the watchlist create body requires website, event, region and carries the server defaults of spec 2.1', () => {
    const body = doc.paths['/watchlist'].post.requestBody;
    expect(body.required).toBe(true);
    const schema = deref(doc, body.content['application/json'].schema);
    expect(schema.type).toBe('object');
    expect([...schema.required].sort()).toEqual(['event', 'region', 'website']);
    const defaults = Object.fromEntries(Object.entries(schema.properties as Record<string, Doc>).filter(([, p]) => 'default' in p).map(([k, p]) => [k, p.default]));
    // Values spec 2.1 gives for a freshly created item.
    expect(defaults).toMatchObject({
      stock_threshold_filter: 1,
      priority: 0,
      change_type: 'stock_increase',
      standard_tickets: true,
      resale_tickets: false,
      general_admission_tickets: false,
      platinum_tickets: false,
      no_restricted_view: false,
      no_accessibility: false,
      no_presale: false,
      auto_add_to_watchlist: false,
      task_active: true,
      muted_until: null,
      mb_did: null,
      roles_json: null,
    });
    // Server-assigned fields are not in the create body.
    for (const f of ['id', 'client_id', 'created_at', 'updated_at', 'deleted']) expect(schema.properties).not.toHaveProperty(f);
  });

  it('the documented defaults are what the server actually stores', async () => {
    const { newAccount } = await import('../support/harness.ts');
    const a = await newAccount(gw.db);
    const schema = deref(doc, doc.paths['/watchlist'].post.requestBody.content['application/json'].schema);
    const created = await clientFor(gw.url)('POST', '/watchlist', { key: a.key, body: { website: 'pf_01', event: 'G5vYZ9fT1aB2cD3e', region: 'us' } });
    expect(created.status).toBe(201);
    for (const [k, p] of Object.entries(schema.properties as Record<string, Doc>)) {
      if ('default' in p) expect(created.body[k], k).toEqual(p.default);
    }
  });
});

describe('validated by an independent OpenAPI 3.1 parser', () => {
  it('the served document, and one with every fixture route, pass @apidevtools/swagger-parser validation', async () => {
    const { default: SwaggerParser } = await import('@apidevtools/swagger-parser');
    // validate() dereferences in place: give it copies.
    for (const d of [doc, fixtureDoc]) {
      await expect(SwaggerParser.validate(structuredClone(d))).resolves.toBeTruthy();
    }
  });

  it('the validator is not a rubber stamp: a broken reference and a bad status key are refused', async () => {
    const { default: SwaggerParser } = await import('@apidevtools/swagger-parser');
    const broken = structuredClone(doc);
    const [firstPath] = Object.keys(broken.paths);
    const firstOp = Object.values(broken.paths[firstPath!] as Record<string, Doc>)[0];
    firstOp.responses['200'] = { description: 'x', content: { 'application/json': { schema: { $ref: '#/components/schemas/Nope' } } } };
    await expect(SwaggerParser.validate(broken)).rejects.toThrow();
    const badStatus = structuredClone(doc);
    Object.values(badStatus.paths[firstPath!] as Record<string, Doc>)[0].responses.notastatus = { description: 'x' };
    await expect(SwaggerParser.validate(badStatus)).rejects.toThrow();
  });
});

/** Redocly's recommended ruleset over a document, each problem as one readable line. */
async function redoclyProblems(d: Doc): Promise<string[]> {
  const { createConfig, lintFromString } = await import('@redocly/openapi-core');
  // A config object, not a redocly.yaml looked up from the working directory: the rules are
  // exactly the recommended set, whoever runs the test from wherever.
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({ source: JSON.stringify(d), absoluteRef: 'openapi.json', config });
  return problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location.map((l) => l.pointer).join(', ')}: ${p.message}`);
}

describe('linted by Redocly with its recommended rules (issue 14)', () => {
  it('the served document, and one with every fixture route, have no error and no warning', async () => {
    for (const d of [doc, fixtureDoc]) expect(await redoclyProblems(d)).toEqual([]);
  });

  it('the linter is not a rubber stamp: without servers, and with an empty anyOf member, it complains', async () => {
    const { servers: _dropped, ...bare } = structuredClone(doc);
    bare.components.schemas.Loose = { anyOf: [{}, { type: 'null' }] };
    const rules = (await redoclyProblems(bare)).map((p) => p.split(' ').slice(0, 2).join(' '));
    expect(rules).toEqual(expect.arrayContaining(['error no-empty-servers', 'warn no-illogical-composition-keywords']));
  });
});
