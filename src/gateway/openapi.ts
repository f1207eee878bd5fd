// The OpenAPI 3.1 document, generated from the same zod schemas that validate requests
// (OpenAPI 3.1 schemas are JSON Schema 2020-12, which zod emits natively).
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

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): object {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  return rest;
}

function creditsText(op: Operation): string {
  if (typeof op.cost === 'number') return `${op.cost} credit${op.cost === 1 ? '' : 's'}`;
  return 'ceil(sales_limit / 20) credits';
}

function parameters(spec: RouteSpec, op: Operation): object[] {
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

export function buildOpenApi(routes: readonly RouteSpec[], serverUrl?: string): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const spec of routes) {
    const op = operation(spec.operationId);
    const path = op.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const responses: Record<string, object> = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      responses[status] = r.schema
        ? { description: r.description, content: { 'application/json': { schema: jsonSchema(r.schema, 'output') } } }
        : { description: r.description };
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
      parameters: parameters(spec, op),
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
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    security: [{ apikey: [] }],
    components: { securitySchemes: { apikey: { type: 'apiKey', in: 'header', name: 'apikey' } } },
    paths,
  };
}
