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
import {
  DELIVERIES_PAGE_DEFAULT,
  deliveriesQuery,
  deliveryPageSchema,
  deliveryParams,
  deliverySchema,
  DeliveryStore,
  TEST_DELIVERIES_PENDING_MAX,
  type TestRefusal,
} from './deliveries.ts';

/**
 * How long POST /webhooks/{id}/test waits for the ping's first attempt (a send is bounded at
 * 10 s); a ping that is parked, or ends without an attempt, ends the wait at once.
 */
const PING_WAIT_MS = 12_000;

/** A test (or a ping's retry) refused: 400, the Watchlist envelope, as every refusal of this API. */
function testRefused(refusal: TestRefusal): WatchlistError {
  if (refusal.refused === 'not_served') {
    return new WatchlistError(400, 'the account is not served (no active or trialing subscription): nothing is sent to its webhooks, so a test cannot be sent');
  }
  return new WatchlistError(
    400,
    `the webhook has ${TEST_DELIVERIES_PENDING_MAX} test deliveries pending already (${refusal.pending.join(', ')}), each retried on its schedule; test again once one is delivered or failed`,
  );
}

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

const deliveryNotFound = () => new WatchlistError(404, 'no delivery with that id');

function deliveryId(ctx: RouteContext): number {
  const raw = (ctx as unknown as { params: { delivery_id: string } }).params.delivery_id;
  if (!/^[1-9][0-9]{0,15}$/.test(raw)) throw deliveryNotFound();
  return Number(raw);
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


/** The path's webhook of this account, which must be active to send anything: else 404 or 400. */
async function activeWebhook(ctx: RouteContext, accountId: number) {
  const hook = await store(ctx).get(accountId, webhookId(ctx));
  if (!hook) throw notFound();
  if (!hook.active) throw new WatchlistError(400, 'the webhook is not active');
  return hook;
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
    {
      operationId: 'listWebhookDeliveries',
      summary: 'Deliveries of one webhook, newest first, with every attempt; paginated by `before`',
      request: { params: webhookIdParams, query: deliveriesQuery },
      responses: { 200: { description: 'One page', schema: deliveryPageSchema }, 400: errorBody, 404: errorBody },
      handler: async (ctx) => {
        const accountId = ctx.state.principal!.accountId;
        const query = deliveriesQuery.safeParse(ctx.query);
        if (!query.success) {
          const issue = query.error.issues[0]!;
          throw new WatchlistError(400, issue.path.length ? `${issue.path.join('.')}: ${issue.message}` : issue.message);
        }
        if (!(await store(ctx).get(accountId, webhookId(ctx)))) throw notFound();
        ctx.body = await new DeliveryStore(ctx.state.services.db).page(accountId, webhookId(ctx), query.data.limit ?? DELIVERIES_PAGE_DEFAULT, query.data.before);
      },
    },
    {
      operationId: 'testWebhook',
      summary: 'Send a `ping` message now; answers the delivery once its first attempt is done (or after 12 s, still pending)',
      request: { params: webhookIdParams },
      responses: {
        201: { description: 'The ping\'s delivery', schema: deliverySchema },
        400: {
          description: `\`{error}\`: the webhook is not active, the account is not served, or the webhook has ${TEST_DELIVERIES_PENDING_MAX} test deliveries pending already`,
        },
        404: errorBody,
      },
      handler: async (ctx) => {
        const accountId = ctx.state.principal!.accountId;
        const hook = await activeWebhook(ctx, accountId);
        const deliveries = new DeliveryStore(ctx.state.services.db);
        const ping = await deliveries.ping(accountId, hook.id);
        if ('refused' in ping) throw testRefused(ping);
        const deadline = Date.now() + PING_WAIT_MS;
        while (Date.now() < deadline && (await deliveries.awaitingFirstAttempt(ping.id))) await new Promise((r) => setTimeout(r, 100));
        ctx.status = 201;
        ctx.body = await deliveries.get(accountId, hook.id, ping.id);
      },
    },
    {
      operationId: 'retryWebhookDelivery',
      summary: 'Send a delivery again: the same message (same webhook-id) through a new run of the retry schedule',
      request: { params: deliveryParams },
      responses: {
        202: { description: 'The delivery, pending again', schema: deliverySchema },
        400: {
          description: `\`{error}\`: the delivery is still pending, the webhook is not active, or (a ping) the webhook has ${TEST_DELIVERIES_PENDING_MAX} test deliveries pending already`,
        },
        404: errorBody,
      },
      handler: async (ctx) => {
        const accountId = ctx.state.principal!.accountId;
        const hook = await activeWebhook(ctx, accountId);
        const deliveries = new DeliveryStore(ctx.state.services.db);
        const result = await deliveries.retry(accountId, hook.id, deliveryId(ctx));
        if (result === null) throw deliveryNotFound();
        if (result === 'pending') throw new WatchlistError(400, 'the delivery is still pending; it is retried on its schedule');
        if (typeof result === 'object') throw testRefused(result);
        ctx.status = 202;
        ctx.body = await deliveries.get(accountId, hook.id, deliveryId(ctx));
      },
    },
  ],
};
