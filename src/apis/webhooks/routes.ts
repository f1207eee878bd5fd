// The account's webhooks (issue 15): CRUD and secret rotation. Watchlist API grant, free, and
// the Watchlist envelope (spec 7.4): `{error}` for every refusal, `{detail}` for a body that is
// not JSON. Another account's webhook is 404, like the watchlist's items.
import type { ApiModule } from '../../gateway/app.ts';
import type { RouteContext } from '../../gateway/route.ts';
import { hostProblem, urlProblem, type UrlRules, type WebhookKind } from '../../webhooks/url-rules.ts';
import { readWatchlistBody } from '../watchlist/body.ts';
import { WatchlistError, watchlistFailures } from '../watchlist/errors.ts';
import {
  createdWebhookSchema,
  createWebhookSchema,
  rotatedSecretSchema,
  SERVER_FIELDS,
  updateWebhookSchema,
  webhookIdParams,
  webhookSchema,
} from './schema.ts';
import { TooManyWebhooksError, WebhookStore } from './store.ts';

const errorBody = { description: '`{error: string}`' };
const invalidBody = { description: '`{error}` for invalid input (the URL rules included); `{detail}` when the body is not JSON' };

const notFound = () => new WatchlistError(404, 'no webhook with that id');

function store(ctx: RouteContext): WebhookStore {
  const { webhookSecrets, db, log } = ctx.state.services;
  if (!webhookSecrets) {
    // A deployment fault, not the client's: the 500 carries the fixed message only.
    log.error('WEBHOOK_SECRET_KEY is not set: webhooks cannot be stored');
    throw new WatchlistError(500, 'internal error');
  }
  return new WebhookStore(db, webhookSecrets);
}

function webhookId(ctx: RouteContext): number {
  return Number((ctx as unknown as { params: { id: string } }).params.id);
}

function rules(ctx: RouteContext): UrlRules {
  return { allowPrivateNetworks: ctx.state.services.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS };
}

/** Refuses a URL that breaks the rules, its host's resolved addresses included. */
async function checkUrl(ctx: RouteContext, url: string, kind: WebhookKind): Promise<void> {
  const problem = urlProblem(url, kind, rules(ctx)) ?? (await hostProblem(new URL(url), rules(ctx), ctx.state.services.webhookLookup));
  if (problem) throw new WatchlistError(400, `url: ${problem}`);
}

function refuseServerFields(value: Record<string, unknown>): string | null {
  const f = SERVER_FIELDS.find((k) => Object.hasOwn(value, k));
  return f ? `${f} is assigned by the server and cannot be sent` : null;
}

export const webhooksApi: ApiModule = {
  api: 'watchlist',
  failures: watchlistFailures,
  routes: [
    {
      operationId: 'listWebhooks',
      summary: 'Webhooks of the account, oldest first; empty array if none',
      responses: { 200: { description: 'Webhooks (never their secrets)', schema: webhookSchema.array() } },
      handler: async (ctx) => {
        ctx.body = await store(ctx).list(ctx.state.principal!.accountId);
      },
    },
    {
      operationId: 'createWebhook',
      summary: 'Create a webhook; a standard one answers its signing secret, shown only here',
      request: { body: createWebhookSchema },
      responses: { 201: { description: 'The webhook and its secret', schema: createdWebhookSchema }, 400: invalidBody },
      handler: async (ctx) => {
        const fields = await readWatchlistBody(ctx, createWebhookSchema, refuseServerFields);
        await checkUrl(ctx, fields.url, fields.kind);
        try {
          const { webhook, secret } = await store(ctx).create(ctx.state.principal!.accountId, fields);
          ctx.body = { ...webhook, secret };
        } catch (err) {
          if (err instanceof TooManyWebhooksError) throw new WatchlistError(400, err.message);
          throw err;
        }
        ctx.status = 201;
      },
    },
    {
      operationId: 'getWebhook',
      summary: 'One webhook of the account (never its secret)',
      request: { params: webhookIdParams },
      responses: { 200: { description: 'The webhook', schema: webhookSchema }, 404: errorBody },
      handler: async (ctx) => {
        const hook = await store(ctx).get(ctx.state.principal!.accountId, webhookId(ctx));
        if (!hook) throw notFound();
        ctx.body = hook;
      },
    },
    {
      operationId: 'updateWebhook',
      summary: 'Change url, description or active; kind cannot change',
      request: { params: webhookIdParams, body: updateWebhookSchema },
      responses: { 200: { description: 'The updated webhook', schema: webhookSchema }, 400: invalidBody, 404: errorBody },
      handler: async (ctx) => {
        const webhooks = store(ctx);
        const accountId = ctx.state.principal!.accountId;
        const patch = await readWatchlistBody(ctx, updateWebhookSchema, (value) =>
          Object.hasOwn(value, 'kind') ? 'kind cannot be changed; create a new webhook instead' : refuseServerFields(value),
        );
        const current = await webhooks.get(accountId, webhookId(ctx));
        if (!current) throw notFound();
        if (patch.url !== undefined) await checkUrl(ctx, patch.url, current.kind);
        const updated = await webhooks.update(accountId, webhookId(ctx), patch);
        if (!updated) throw notFound();
        ctx.body = updated;
      },
    },
    {
      operationId: 'deleteWebhook',
      summary: 'Delete a webhook; items naming it get webhook_setting_id null (their monitoring goes on)',
      request: { params: webhookIdParams },
      responses: { 204: { description: 'Deleted, no body' }, 404: errorBody },
      handler: async (ctx) => {
        if (!(await store(ctx).delete(ctx.state.principal!.accountId, webhookId(ctx)))) throw notFound();
        ctx.status = 204;
      },
    },
    {
      operationId: 'rotateWebhookSecret',
      summary: 'A new signing secret; for 24 hours the old one signs as well (both signatures are sent)',
      request: { params: webhookIdParams },
      responses: {
        200: { description: 'The new secret, shown only here', schema: rotatedSecretSchema },
        400: { description: '`{error}`: a discord webhook has no secret' },
        404: errorBody,
      },
      handler: async (ctx) => {
        const secret = await store(ctx).rotateSecret(ctx.state.principal!.accountId, webhookId(ctx));
        if (secret === null) throw notFound();
        if (secret === 'no_secret') throw new WatchlistError(400, 'a discord webhook has no secret: its URL is the secret (PATCH a new url instead)');
        ctx.body = { secret };
      },
    },
  ],
};
