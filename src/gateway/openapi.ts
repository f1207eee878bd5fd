// The OpenAPI 3.1 document, generated from the same zod schemas that validate requests
// (OpenAPI 3.1 schemas are JSON Schema 2020-12, which zod emits natively).
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { operation, type Operation } from './catalog.ts';
import type { RouteSpec } from './route.ts';

const gatewayErrorSchema = z
  .object({ error: z.object({ code: z.string(), message: z.string() }) })
  .meta({ description: 'Gateway envelope (spec 7.1)' });

const GATEWAY_DENIALS: Record<string, string> = {
  '401': 'unauthenticated (no key) or invalid_credentials (key rejected)',
  '402': 'limit_reached, no_subscription, no_billing_account, plan_unavailable or payment_required',
  '403': 'forbidden: the key is not granted this API',
  '429': 'rate_limited; see Retry-After',
  '502': 'service_unavailable: a gateway backend is unreachable',
};

/**
 * Named schemas (zod `.meta({id})`) become `components.schemas` entries. zod emits them as
 * `$defs` inside each schema with `#/$defs/...` references, but in an OpenAPI document `#` is
 * the document's root, so those references would not resolve: hoist them and point there.
 */
class SchemaComponents {
  readonly schemas: Record<string, object> = {};

  jsonSchema(schema: z.ZodType, io: 'input' | 'output'): object {
    const generated = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
    const { $schema: _ignored, $defs, ...root } = generated as { $schema?: unknown; $defs?: Record<string, object> };
    const defs = Object.entries($defs ?? {});
    // The same id may describe different shapes (a request's input and a response's output).
    const names = new Map(defs.map(([name]) => [name, name]));
    for (let round = 0; round < 10; round++) {
      let clash = false;
      for (const [name, def] of defs) {
        const target = names.get(name)!;
        const existing = this.schemas[target];
        if (existing && !isDeepStrictEqual(existing, rewriteRefs(def, names))) {
          names.set(name, `${name}${io === 'input' ? 'Input' : 'Output'}${round ? round + 1 : ''}`);
          clash = true;
        }
      }
      if (!clash) break;
    }
    for (const [name, def] of defs) this.schemas[names.get(name)!] = rewriteRefs(def, names);
    return rewriteRefs(root, names);
  }
}

function rewriteRefs<T>(node: T, names: ReadonlyMap<string, string>): T {
  if (Array.isArray(node)) return node.map((n) => rewriteRefs(n, names)) as T;
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    const local = k === '$ref' && typeof v === 'string' ? /^#\/\$defs\/(.+)$/.exec(v) : null;
    out[k] = local ? `#/components/schemas/${names.get(local[1]!) ?? local[1]}` : rewriteRefs(v, names);
  }
  return out as T;
}

function creditsText(op: Operation): string {
  if (typeof op.cost === 'number') return `${op.cost} credit${op.cost === 1 ? '' : 's'}`;
  return 'ceil(sales_limit / 20) credits';
}

function parameters(spec: RouteSpec, op: Operation, jsonSchema: SchemaComponents['jsonSchema']): object[] {
  const out: object[] = [];
  const params = spec.request?.params?.shape ?? {};
  for (const name of op.path.split('/').filter((s) => s.startsWith(':')).map((s) => s.slice(1))) {
    const schema = (params as Record<string, z.ZodType>)[name];
    out.push({ name, in: 'path', required: true, schema: schema ? jsonSchema(schema, 'input') : { type: 'string' } });
  }
  for (const [name, schema] of Object.entries(spec.request?.query?.shape ?? {})) {
    const s = schema as z.ZodType;
    out.push({ name, in: 'query', required: !s.safeParse(undefined).success, schema: jsonSchema(s, 'input') });
  }
  return out;
}

/**
 * Where clients send requests. First the relative URL `/`: the host this document was fetched
 * from, which is right for every deployment (behind the reverse proxy, over TLS, on any port)
 * without configuring a public address, and is what Swagger UI or Redoc pointed at
 * /openapi.json call. It is OpenAPI's own default, stated because code generators and linters
 * do not all apply it. A saved copy has no host to resolve `/` against, so the second entry is
 * the spec's own `{base_url}` as a variable for the reader to fill in; its default is the gateway
 * a local `npm start` serves (PORT). Not a literal localhost URL: customers read this document,
 * and to them that would look like an address of the service (Redocly: no-server-example.com).
 */
function servers(localPort: number): object[] {
  return [
    { url: '/', description: 'The gateway this document was fetched from' },
    {
      url: '{base_url}',
      // The explanation sits here, not on the variable: @apidevtools/swagger-parser still carries
      // the 3.1 schema's old typo (`descriptions`) and refuses a variable's `description`
      // (APIDevTools/swagger-cli#83), a false alarm tools built on it would raise too.
      description: 'The service at base_url: the scheme, host and port you were given, no trailing slash; the default is a local npm start',
      variables: { base_url: { default: `http://localhost:${localPort}` } },
    },
  ];
}

/**
 * A private, paid API: there is no public licence to point at. OpenAPI 3.1's `identifier` is an
 * SPDX expression, and SPDX names a licence that is not on its list as `LicenseRef-...`. No `url`:
 * the terms are each customer's agreement, published at no address this document could name.
 */
const LICENSE = { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' };

export function buildOpenApi(routes: readonly RouteSpec[], opts: { localPort: number }): object {
  const components = new SchemaComponents();
  const jsonSchema = components.jsonSchema.bind(components);
  const paths: Record<string, Record<string, object>> = {};
  for (const spec of routes) {
    const op = operation(spec.operationId);
    const path = op.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const responses: Record<string, object> = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      responses[status] = {
        description: r.description,
        ...(r.headers
          ? { headers: Object.fromEntries(Object.entries(r.headers).map(([name, h]) => [name, { description: h.description, schema: jsonSchema(h.schema, 'output') }])) }
          : {}),
        ...(r.schema ? { content: { 'application/json': { schema: jsonSchema(r.schema, 'output') } } } : {}),
      };
    }
    for (const [status, description] of Object.entries(GATEWAY_DENIALS)) {
      if (status === '402' && op.cost === 0) continue;
      responses[status] ??= { description, content: { 'application/json': { schema: jsonSchema(gatewayErrorSchema, 'output') } } };
    }
    (paths[path] ??= {})[op.method.toLowerCase()] = {
      operationId: spec.operationId,
      summary: spec.summary,
      tags: [op.api],
      description: `Costs ${creditsText(op)}.`,
      'x-credits': typeof op.cost === 'number' ? op.cost : 'ceil(sales_limit / 20)',
      parameters: parameters(spec, op, jsonSchema),
      ...(spec.request?.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(spec.request.body, 'input') } } } }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Ticket market data, live availability and watchlist service',
      version: '1.0',
      description: 'Every request carries the `apikey` header. Credits per operation are in each description and in `x-credits`.',
      license: LICENSE,
    },
    servers: servers(opts.localPort),
    security: [{ apikey: [] }],
    components: { schemas: components.schemas, securitySchemes: { apikey: { type: 'apiKey', in: 'header', name: 'apikey' } } },
    paths,
  };
}
