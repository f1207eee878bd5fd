// POST /billing/stripe/webhook: Stripe's events about our customers' subscriptions (and their
// default payment method). No API key and no metering: the request is authenticated by its
// Stripe-Signature over the exact body (the `stripe` library's check, with its 5-minute
// tolerance on the timestamp). A bad signature, a stale timestamp or another endpoint's secret
// gets 400 and changes nothing.
//
// An event is applied by reading its subscription again from Stripe and mirroring what is there
// now (mirror.ts), never the event's own copy: events arrive out of order, and the latest read
// is right whatever order they came in. Each event id is applied once (stripe_events, in the
// same transaction). When Stripe cannot be read back, the answer is 503 and nothing is
// recorded, so Stripe's own retry applies it later.
import Stripe from 'stripe';
import type { Context } from 'koa';
import type { Db } from '../../../db/connection.ts';
import { readRawBody } from '../../gateway/json-body.ts';
import type { RequestState } from '../../gateway/request-state.ts';
import { MIRROR_EXPAND, mirrorSubscription, type MirrorResult } from './mirror.ts';

export const STRIPE_WEBHOOK_PATH = '/billing/stripe/webhook';
/** Stripe's events are a few KB; its documented maximum payload is far under this. */
const BODY_LIMIT = 512 * 1024;

export type StripeWebhookHandler = (ctx: Context & { state: RequestState }) => Promise<void>;

export interface StripeWebhookOptions {
  db: Db;
  stripe: Stripe;
  /** STRIPE_WEBHOOK_SECRET (whsec_…). */
  secret: string;
}

export type WebhookOutcome = 'applied' | 'duplicate' | 'ignored' | MirrorResult;

function answer(ctx: Context, status: number, body: Record<string, unknown>): void {
  ctx.status = status;
  ctx.body = body;
}

export function createStripeWebhookHandler(opts: StripeWebhookOptions): StripeWebhookHandler {
  return async (ctx) => {
    ctx.state.operationId = 'stripeWebhook';
    const log = ctx.state.log;
    const raw = await readRawBody(ctx, BODY_LIMIT);
    if (raw.kind === 'too_large') return answer(ctx, 413, { error: `body is larger than ${BODY_LIMIT} bytes` });
    const signature = ctx.get('stripe-signature');
    if (!signature) return answer(ctx, 400, { error: 'the Stripe-Signature header is missing' });
    let event: Stripe.Event;
    try {
      event = opts.stripe.webhooks.constructEvent(raw.text, signature, opts.secret);
    } catch (err) {
      // The library's message says which check failed (signature, timestamp, format); it
      // never contains the secret.
      const reason = err instanceof Error ? err.message : String(err);
      log.warn({ reason }, 'Stripe webhook refused');
      return answer(ctx, 400, { error: `signature verification failed: ${reason}` });
    }

    let subscriptionId: string | null;
    try {
      subscriptionId = await subscriptionOf(opts.db, event);
    } catch (err) {
      log.warn({ err, event_id: event.id, type: event.type }, 'could not find the subscription of a Stripe event; Stripe will retry it');
      return answer(ctx, 503, { error: 'could not apply the event; retry later' });
    }
    let current: Stripe.Subscription | null = null;
    const readAt = new Date();
    if (subscriptionId) {
      try {
        current = await opts.stripe.subscriptions.retrieve(subscriptionId, { expand: MIRROR_EXPAND });
      } catch (err) {
        if (!(err instanceof Stripe.errors.StripeInvalidRequestError && err.statusCode === 404)) {
          log.warn({ err, event_id: event.id, type: event.type }, 'could not read the subscription back from Stripe; Stripe will retry the event');
          return answer(ctx, 503, { error: 'billing provider unavailable; retry later' });
        }
      }
    }
    const outcome = await opts.db.transaction(async (trx): Promise<WebhookOutcome> => {
      const recorded = await trx('stripe_events').insert({ id: event.id, type: event.type, object_id: subscriptionId }).onConflict('id').ignore().returning('id');
      if (recorded.length === 0) return 'duplicate';
      if (!current) return 'ignored';
      return mirrorSubscription(trx, current, readAt);
    });
    log.info({ event_id: event.id, type: event.type, subscription: subscriptionId, outcome }, 'Stripe webhook');
    answer(ctx, 200, { received: true, outcome });
  };
}

/**
 * Customer events that can change whether the customer has a default payment method (the
 * invoice default set or cleared, a source added or removed): applied by reading the account's
 * subscription again, with its customer.
 */
const CUSTOMER_EVENTS = new Set(['customer.updated', 'customer.source.created', 'customer.source.deleted', 'payment_method.attached']);

/** The subscription an event is about, for the events that change the mirror. */
async function subscriptionOf(db: Db, event: Stripe.Event): Promise<string | null> {
  const object = event.data.object as { id?: unknown; customer?: unknown };
  if (event.type.startsWith('customer.subscription.')) return typeof object.id === 'string' ? object.id : null;
  if (!CUSTOMER_EVENTS.has(event.type)) return null;
  const customer = event.type === 'customer.updated' ? object.id : object.customer;
  if (typeof customer !== 'string') return null;
  const row = await db('accounts as a').join('subscriptions as s', 's.account_id', 'a.id').where('a.customer_id', customer).first('s.id');
  return row ? String(row.id) : null;
}
