// What an API hands the gateway for each endpoint: its operation in the catalog, its schemas
// (used to validate, to type, and to write the OpenAPI document) and its handler.
import type { ParameterizedContext } from 'koa';
import type { z } from 'zod';
import type { RequestState } from './request-state.ts';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export type RouteContext = ParameterizedContext<RequestState>;

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** Response headers worth documenting (e.g. Retry-After on a 429), by name. */
  headers?: Record<string, { description: string; schema: z.ZodType }>;
}

export interface RouteSpec {
  /** Key into the operation catalog (method, path, API, credit cost). */
  operationId: string;
  summary: string;
  request?: {
    params?: z.ZodObject;
    query?: z.ZodObject;
    body?: z.ZodType;
  };
  responses: Record<number, ResponseSpec>;
  handler: (ctx: RouteContext) => Promise<void>;
}
