// Reading a JSON body into a schema with the Watchlist envelope (spec 7.4): shared by the
// watchlist items and the account's webhooks, which answer in the same envelope.
import type { z } from 'zod';
import { readJsonObject } from '../../gateway/json-body.ts';
import type { RouteContext } from '../../gateway/route.ts';
import { WatchlistError } from './errors.ts';

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String).join('.');
  const message =
    issue.code === 'unrecognized_keys' ? `unknown field${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.join(', ')}` : issue.message;
  return path ? `${path}: ${message}` : message;
}

/**
 * The body parsed by `schema`. `refuse` sees the raw object first and may name a field that
 * cannot be sent (server-assigned, immutable) with a clearer message than the schema's.
 */
export async function readWatchlistBody<S extends z.ZodType>(
  ctx: RouteContext,
  schema: S,
  refuse: (value: Record<string, unknown>) => string | null = () => null,
): Promise<z.output<S>> {
  const body = await readJsonObject(ctx, ctx.state.services.config.MAX_BODY_BYTES);
  // Spec 7.4: a body that is not JSON at all is `{detail}`; every other refusal is `{error}`.
  if (!body.ok) throw new WatchlistError(body.problem === 'too_large' ? 413 : 400, body.message, body.problem === 'invalid' ? 'detail' : 'error');
  const refusal = refuse(body.value);
  if (refusal) throw new WatchlistError(400, refusal);
  const parsed = schema.safeParse(body.value);
  if (!parsed.success) throw new WatchlistError(400, describeIssue(parsed.error.issues[0]!));
  return parsed.data;
}
