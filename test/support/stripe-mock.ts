// Stripe for tests: the run's stripe-mock (started once by global-setup.ts) and a small recording
// proxy in front of it. Every request goes through to stripe-mock, so every call the code makes is
// checked against Stripe's OpenAPI (a 4xx from stripe-mock comes back unchanged). stripe-mock is
// stateless and answers fixtures; the proxy keeps the little state the billing tests need:
//   - what was sent (method, path, form body, Idempotency-Key, status);
//   - meter events, deduplicated by identifier as Stripe does, totalled per customer and event;
//   - subscriptions a test overrides (status, items, period, customer) to drive status changes;
//   - faults: the next n requests answered with a status, or no listener at all (down/up);
//   - meter event requests held open until released (a send in flight when a worker dies);
//   - a small object store for what billing:sync and accounts:create touch (StripeStore below):
//     products, prices, meters, customers and subscriptions created through the proxy. stripe-mock
//     still validates every such request; its fixture answer to a create is then overlaid with the
//     request's parameters and kept, and reads, lists and updates are answered from the store, so
//     a second run can find what the first made.
// What the store checks only this way (not Stripe's own rules): lookup keys unique unless
// transfer_lookup_key moves them, `tiers` only when expanded, an Idempotency-Key answered again
// with its first answer (other parameters: 400), one active meter per event name, a subscription's
// customer and prices existing. What this does not check at all: Stripe's behaviour beyond the
// schema (amounts, proration, what a meter bills, webhooks), which only Stripe's test mode shows.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { inject } from 'vitest';

export function stripeMockUrl(): string {
  const url = inject('stripeMockUrl');
  if (!url) throw new Error(inject('stripeMockError') || 'no stripe-mock for this run');
  return url;
}

export interface RecordedStripeRequest {
  method: string;
  /** Without the query string; a GET's parameters are in `form` too. */
  path: string;
  /** The form-encoded parameters as sent, keys in Stripe's bracket form: `payload[value]`. */
  form: Record<string, string>;
  idempotencyKey: string | undefined;
  /** stripe-mock's status, or the injected fault's. */
  status: number;
  injected: boolean;
}

export interface MeterEvent {
  eventName: string;
  customer: string;
  value: number;
  identifier: string | undefined;
  timestamp: number | undefined;
}

/** Objects merge key by key; arrays merge index by index, the override deciding the length. */
export type SubscriptionOverride = Record<string, unknown>;

export interface StripeProxy {
  /** http://127.0.0.1:PORT */
  url: string;
  port: number;
  /** For the stripe client: `new Stripe(key, { ...proxy.clientOptions })`. */
  clientOptions: { host: string; port: number; protocol: 'http' };
  requests: RecordedStripeRequest[];
  /** Accepted meter events, a repeated identifier counted once. */
  meterEvents: MeterEvent[];
  /** The objects created through the proxy, by id (read them; the proxy keeps them current). */
  store: StripeStore;
  meterTotal(customer: string, eventName: string): number;
  setSubscription(id: string, override: SubscriptionOverride): void;
  /**
   * Answers the next `n` requests (to `path` only, when given) with `status` (a Stripe-shaped
   * error) without forwarding them. A worker's Schedules call Stripe on their own (the reconcile):
   * a fault meant for the meter events must be aimed at them, or another call may take it.
   */
  failNext(n: number, status: number, opts?: { retryAfter?: number; path?: string }): void;
  /**
   * Holds the next `n` meter event requests open, unanswered and not yet forwarded, until
   * releaseHeld(); they are then forwarded and recorded as usual even if their client is gone.
   */
  holdMeterEvents(n: number): void;
  /** How many meter event requests are held now. */
  heldCount(): number;
  releaseHeld(): void;
  /** Closes the listener and open connections: the next request is refused. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startStripeProxy(upstream: string = stripeMockUrl()): Promise<StripeProxy> {
  const requests: RecordedStripeRequest[] = [];
  const meterEvents: MeterEvent[] = [];
  const seenIdentifiers = new Set<string>();
  const subscriptions = new Map<string, SubscriptionOverride>();
  const store = newStore();
  let faults: { left: number; status: number; retryAfter?: number; path?: string } | null = null;
  let holds = 0;
  let held: (() => void)[] = [];

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, Buffer.concat(chunks), res).catch((err: unknown) => {
        res.writeHead(502, { 'content-type': 'text/plain' }).end(`stripe proxy: ${String(err)}`);
      });
    });
  });

  async function handle(req: http.IncomingMessage, body: Buffer, res: http.ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://proxy');
    const form = Object.fromEntries(method === 'GET' || method === 'DELETE' ? url.searchParams : new URLSearchParams(body.toString('utf8')));
    const header = req.headers['idempotency-key'];
    const record = (status: number, injected: boolean) =>
      requests.push({ method, path: url.pathname, form, idempotencyKey: Array.isArray(header) ? header[0] : header, status, injected });

    if (faults && faults.left > 0 && (faults.path === undefined || faults.path === url.pathname)) {
      const { status, retryAfter } = faults;
      if (--faults.left === 0) faults = null;
      record(status, true);
      const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', 'request-id': 'req_injected' };
      if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
      res.writeHead(status, headers).end(JSON.stringify({ error: injectedError(status) }));
      return;
    }

    if (holds > 0 && method === 'POST' && url.pathname === '/v1/billing/meter_events') {
      holds--;
      await new Promise<void>((resolve) => held.push(resolve));
    }

    const forwarded = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || HOP_BY_HOP.has(name)) continue;
      forwarded.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const answer = await fetch(new URL(url.pathname + url.search, upstream), {
      method,
      headers: forwarded,
      body: method === 'GET' || method === 'HEAD' ? undefined : new Uint8Array(body),
    });
    let text = await answer.text();
    let status = answer.status;

    if (answer.ok) {
      if (method === 'POST' && url.pathname === '/v1/billing/meter_events') acceptMeterEvent(form);
      const stored = answerFromStore(store, method, url.pathname, form, JSON.parse(text), { key: Array.isArray(header) ? header[0] : header, body: body.toString('utf8') });
      if (stored) {
        status = stored.status;
        text = JSON.stringify(stored.body, null, 2);
      }
      const subscription = /^\/v1\/subscriptions\/([^/]+)$/.exec(url.pathname);
      const override = subscription && method === 'GET' && status === 200 ? subscriptions.get(decodeURIComponent(subscription[1]!)) : undefined;
      if (override) text = JSON.stringify(merge(JSON.parse(text), override), null, 2);
    }
    record(status, false);
    const headers: http.OutgoingHttpHeaders = {};
    answer.headers.forEach((value, name) => {
      // fetch has already decoded the body and the proxy may have rewritten it.
      if (!HOP_BY_HOP.has(name) && name !== 'content-length' && name !== 'content-encoding') headers[name] = value;
    });
    res.writeHead(status, headers).end(text);
  }

  function acceptMeterEvent(form: Record<string, string>): void {
    const identifier = form.identifier;
    // Stripe ignores an event whose identifier it has seen: that is how a retried report is not billed twice.
    if (identifier !== undefined) {
      if (seenIdentifiers.has(identifier)) return;
      seenIdentifiers.add(identifier);
    }
    meterEvents.push({
      eventName: form.event_name ?? '',
      customer: form['payload[stripe_customer_id]'] ?? '',
      value: Number(form['payload[value]']),
      identifier,
      timestamp: form.timestamp === undefined ? undefined : Number(form.timestamp),
    });
  }

  // Kept so down() can cut keep-alive connections: a client's pooled socket would otherwise
  // still reach a proxy that is meant to be unreachable.
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.removeListener('error', reject);
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });

  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    clientOptions: { host: '127.0.0.1', port, protocol: 'http' },
    requests,
    meterEvents,
    store,
    meterTotal: (customer, eventName) =>
      meterEvents.filter((e) => e.customer === customer && e.eventName === eventName).reduce((sum, e) => sum + e.value, 0),
    setSubscription: (id, override) => void subscriptions.set(id, override),
    failNext: (n, status, opts = {}) => {
      faults = n > 0 ? { left: n, status, retryAfter: opts.retryAfter, path: opts.path } : null;
    },
    holdMeterEvents: (n) => {
      holds = n;
    },
    heldCount: () => held.length,
    releaseHeld: () => {
      const release = held;
      held = [];
      release.forEach((r) => r());
    },
    down: stop,
    up: () => (server.listening ? Promise.resolve() : listen(port)),
    close: stop,
  };
}

const HOP_BY_HOP = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'content-length']);

/** The error body Stripe sends with such a status, so the client raises the matching error class. */
function injectedError(status: number): { type: string; message: string; code?: string } {
  if (status === 429) return { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests (injected by the test proxy).' };
  if (status >= 500) return { type: 'api_error', message: `Stripe answered ${status} (injected by the test proxy).` };
  return { type: 'invalid_request_error', message: `Stripe answered ${status} (injected by the test proxy).` };
}

function merge(base: unknown, override: unknown): unknown {
  if (Array.isArray(override)) {
    const from = Array.isArray(base) ? base : [];
    return override.map((item, i) => merge(from[i], item));
  }
  if (isObject(override) && isObject(base)) {
    const out: Record<string, unknown> = { ...base };
    for (const [key, value] of Object.entries(override)) out[key] = merge(base[key], value);
    return out;
  }
  return override;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// --- The object store (see the module header) ---

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type StripeObject = Record<string, any>;

export interface StripeStore {
  products: Map<string, StripeObject>;
  prices: Map<string, StripeObject>;
  meters: Map<string, StripeObject>;
  customers: Map<string, StripeObject>;
  subscriptions: Map<string, StripeObject>;
  /** Idempotency-Key of a create or update: the body first sent with it and the answer given. */
  idempotent: Map<string, { body: string; answer: StoreAnswer }>;
}

interface StoreAnswer {
  status: number;
  body: unknown;
}

function newStore(): StripeStore {
  return { products: new Map(), prices: new Map(), meters: new Map(), customers: new Map(), subscriptions: new Map(), idempotent: new Map() };
}

const newId = (prefix: string) => `${prefix}_st${randomBytes(8).toString('hex')}`;

const storeError = (status: number, code: string, message: string, param?: string): StoreAnswer => ({
  status,
  body: { error: { type: 'invalid_request_error', code, message, ...(param ? { param } : {}) } },
});
const missing = (kind: string, id: string) => storeError(404, 'resource_missing', `No such ${kind}: '${id}'`, 'id');
const list = (url: string, data: unknown[]): StoreAnswer => ({ status: 200, body: { object: 'list', data, has_more: false, url } });
const ok = (body: unknown): StoreAnswer => ({ status: 200, body });

/** The store's answer to a request stripe-mock accepted, or null to pass stripe-mock's on unchanged. */
function answerFromStore(
  store: StripeStore,
  method: string,
  path: string,
  form: Record<string, string>,
  fixture: StripeObject,
  idempotency: { key: string | undefined; body: string },
): StoreAnswer | null {
  const key = method === 'POST' ? idempotency.key : undefined;
  const seen = key === undefined ? undefined : store.idempotent.get(key);
  if (seen) {
    if (seen.body === idempotency.body) return seen.answer;
    return storeError(400, 'idempotency_error', 'Keys for idempotent requests can only be used with the same parameters they were first used with.');
  }
  const answer = route(store, method, path.split('/').slice(2).map(decodeURIComponent), unflatten(form), fixture);
  if (answer && key !== undefined && answer.status === 200) store.idempotent.set(key, { body: idempotency.body, answer });
  return answer;
}

function route(store: StripeStore, method: string, [kind, id, action, more]: string[], params: StripeObject, fixture: StripeObject): StoreAnswer | null {
  const expand: string[] = params.expand ?? [];
  if (kind === 'products' && !action) {
    if (method === 'POST' && !id) {
      const pid = params.id ?? newId('prod');
      if (store.products.has(pid)) return storeError(400, 'resource_already_exists', `Product already exists: ${pid}`, 'id');
      const product = { ...fixture, id: pid, name: params.name, active: params.active ?? true, description: params.description ?? null, metadata: params.metadata ?? {}, default_price: null };
      store.products.set(pid, product);
      return ok(product);
    }
    const product = id ? store.products.get(id) : undefined;
    if (!id || method === 'DELETE') return null;
    if (!product) return missing('product', id);
    if (method === 'POST') update(product, params);
    return ok(product);
  }
  if (kind === 'prices' && !action) {
    if (method === 'GET' && !id) {
      const keys: string[] | undefined = params.lookup_keys;
      const found = [...store.prices.values()].filter(
        (p) => (!keys || keys.includes(p.lookup_key)) && (params.active === undefined || p.active === params.active) && (!params.product || p.product === params.product),
      );
      return list('/v1/prices', found.map((p) => priceView(p, expand.includes('data.tiers'))));
    }
    if (method === 'POST' && !id) return createPrice(store, params, fixture);
    const price = id ? store.prices.get(id) : undefined;
    if (!id) return null;
    if (!price) return missing('price', id);
    if (method === 'POST') {
      const { transfer_lookup_key: transfer, lookup_key: lookupKey, ...rest } = params;
      if (lookupKey !== undefined && lookupKey !== price.lookup_key) {
        const refused = takeLookupKey(store, lookupKey, transfer === true);
        if (refused) return refused;
        price.lookup_key = lookupKey || null;
      }
      update(price, rest);
    }
    return ok(priceView(price, expand.includes('tiers')));
  }
  if (kind === 'billing' && id === 'meters') {
    if (method === 'GET' && !action) {
      return list('/v1/billing/meters', [...store.meters.values()].filter((m) => params.status === undefined || m.status === params.status));
    }
    if (method === 'POST' && !action) {
      if ([...store.meters.values()].some((m) => m.event_name === params.event_name && m.status === 'active')) {
        return storeError(400, 'meter_event_name_not_unique', `An active meter with event_name ${params.event_name} already exists.`, 'event_name');
      }
      const meter = { ...merge(fixture, params) as StripeObject, id: newId('mtr'), status: 'active' };
      store.meters.set(meter.id, meter);
      return ok(meter);
    }
    const meter = store.meters.get(action!);
    // A meter the store never made, or a sub-resource (event summaries): stripe-mock's fixture.
    if (!meter || (more && more !== 'deactivate' && more !== 'reactivate')) return null;
    if (method === 'POST' && (more === 'deactivate' || more === 'reactivate')) meter.status = more === 'deactivate' ? 'inactive' : 'active';
    else if (method === 'POST') update(meter, params);
    return ok(meter);
  }
  if (kind === 'customers' && !action) {
    if (method === 'POST' && !id) {
      const customer = { ...fixture, id: newId('cus'), name: params.name ?? null, email: params.email ?? null, metadata: params.metadata ?? {} };
      store.customers.set(customer.id, customer);
      return ok(customer);
    }
    const customer = id ? store.customers.get(id) : undefined;
    // One the store never made: stripe-mock's fixture, as before the store.
    if (!customer) return null;
    if (method === 'DELETE') {
      const deleted = { id, object: 'customer', deleted: true };
      store.customers.set(id!, deleted);
      return ok(deleted);
    }
    if (method === 'POST') update(customer, params);
    return ok(customer);
  }
  if (kind === 'subscriptions' && !action) {
    if (method === 'POST' && !id) return createSubscription(store, params, fixture, expand);
    const sub = id ? store.subscriptions.get(id) : undefined;
    if (!sub || method !== 'GET') return null;
    return ok(expandSubscription(store, sub, expand));
  }
  return null;
}

/** Metadata merges key by key (an empty value removes the key), as Stripe's updates do; the rest is replaced. */
function update(target: StripeObject, params: StripeObject): void {
  for (const [key, value] of Object.entries(params)) {
    if (key === 'expand') continue;
    if (key !== 'metadata') {
      target[key] = value;
      continue;
    }
    const metadata = { ...target.metadata };
    for (const [k, v] of Object.entries(value as Record<string, string>)) {
      if (v === '') delete metadata[k];
      else metadata[k] = v;
    }
    target.metadata = metadata;
  }
}

/** Frees `key` for a price: refused while another price holds it, unless transfer_lookup_key says move it. */
function takeLookupKey(store: StripeStore, key: string, transfer: boolean): StoreAnswer | null {
  const holder = [...store.prices.values()].find((p) => p.lookup_key === key);
  if (!holder) return null;
  if (!transfer) return storeError(400, 'lookup_key_exists', `A price (\`${holder.id}\`) already uses that lookup key.`, 'lookup_key');
  holder.lookup_key = null;
  return null;
}

function createPrice(store: StripeStore, params: StripeObject, fixture: StripeObject): StoreAnswer {
  if (!store.products.has(params.product)) return storeError(400, 'resource_missing', `No such product: '${params.product}'`, 'product');
  if (params.lookup_key) {
    const refused = takeLookupKey(store, params.lookup_key, params.transfer_lookup_key === true);
    if (refused) return refused;
  }
  const tiered = params.billing_scheme === 'tiered';
  const decimal = (v: unknown) => (v === undefined || v === null ? null : String(v));
  const price: StripeObject = {
    ...fixture,
    id: newId('price'),
    active: params.active ?? true,
    billing_scheme: params.billing_scheme ?? 'per_unit',
    currency: params.currency,
    product: params.product,
    lookup_key: params.lookup_key ?? null,
    nickname: params.nickname ?? null,
    metadata: params.metadata ?? {},
    recurring: params.recurring ? { interval_count: 1, meter: null, usage_type: 'licensed', ...params.recurring } : null,
    type: params.recurring ? 'recurring' : 'one_time',
    tiers_mode: params.tiers_mode ?? null,
    tiers: tiered
      ? (params.tiers as StripeObject[]).map((t) => ({
          up_to: t.up_to === 'inf' ? null : t.up_to,
          unit_amount: t.unit_amount ?? null,
          unit_amount_decimal: decimal(t.unit_amount_decimal ?? t.unit_amount),
          flat_amount: t.flat_amount ?? null,
          flat_amount_decimal: decimal(t.flat_amount_decimal ?? t.flat_amount),
        }))
      : null,
    transform_quantity: null,
    unit_amount: tiered ? null : (params.unit_amount ?? null),
    unit_amount_decimal: tiered ? null : decimal(params.unit_amount_decimal ?? params.unit_amount),
  };
  store.prices.set(price.id, price);
  return ok(priceView(price, (params.expand ?? []).includes('tiers')));
}

/** Stripe leaves `tiers` out unless it is expanded. */
function priceView(price: StripeObject, tiers: boolean): StripeObject {
  const { tiers: t, ...rest } = price;
  return tiers ? { ...rest, tiers: t ?? [] } : rest;
}

function createSubscription(store: StripeStore, params: StripeObject, fixture: StripeObject, expand: string[]): StoreAnswer {
  const customer = store.customers.get(params.customer);
  if (!customer || customer.deleted) return storeError(400, 'resource_missing', `No such customer: '${params.customer}'`, 'customer');
  const id = newId('sub');
  const now = Math.floor(Date.now() / 1000);
  const end = new Date(now * 1000);
  end.setUTCMonth(end.getUTCMonth() + 1);
  const template = fixture.items.data[0] as StripeObject;
  const items: StripeObject[] = [];
  for (const [i, item] of ((params.items ?? []) as StripeObject[]).entries()) {
    const price = store.prices.get(item.price);
    if (!price?.active) return storeError(400, 'resource_missing', `No such price: '${item.price}'`, `items[${i}][price]`);
    const { quantity: _q, ...rest } = template;
    const metered = price.recurring?.usage_type === 'metered';
    items.push({
      ...rest,
      ...(metered ? {} : { quantity: item.quantity ?? 1 }),
      id: newId('si'),
      subscription: id,
      metadata: {},
      price: priceView(price, false),
      current_period_start: now,
      current_period_end: Math.floor(end.getTime() / 1000),
    });
  }
  const sub = {
    ...fixture,
    id,
    customer: customer.id,
    status: 'active',
    metadata: params.metadata ?? {},
    items: { ...fixture.items, data: items, url: `/v1/subscription_items?subscription=${id}` },
    cancel_at_period_end: false,
    canceled_at: null,
    trial_end: null,
    created: now,
    start_date: now,
  };
  store.subscriptions.set(id, sub);
  return ok(expandSubscription(store, sub, expand));
}

function expandSubscription(store: StripeStore, sub: StripeObject, expand: string[]): StripeObject {
  const out = structuredClone(sub);
  if (expand.includes('items.data.price.product')) {
    for (const item of out.items.data as StripeObject[]) item.price.product = store.products.get(item.price.product) ?? item.price.product;
  }
  if (expand.includes('customer')) out.customer = store.customers.get(out.customer) ?? out.customer;
  return out;
}

// Form fields that Stripe answers as numbers or booleans; everything else (metadata above all) stays text.
const NUMBERS = new Set(['unit_amount', 'up_to', 'flat_amount', 'interval_count', 'quantity', 'days_until_due', 'limit']);
const BOOLEANS = new Set(['active', 'transfer_lookup_key', 'cancel_at_period_end']);

/** Stripe's bracket form (`tiers[0][up_to]=10`) back into objects and arrays. */
function unflatten(form: Record<string, string>): StripeObject {
  const root: StripeObject = {};
  for (const [name, raw] of Object.entries(form)) {
    const path = name.replace(/\]/g, '').split('[');
    let node = root;
    for (const segment of path.slice(0, -1)) node = node[segment] ??= {};
    const leaf = path.at(-1)!;
    const inMetadata = path.includes('metadata');
    node[leaf] = inMetadata ? raw : NUMBERS.has(leaf) && /^\d+$/.test(raw) ? Number(raw) : BOOLEANS.has(leaf) ? raw === 'true' : raw;
  }
  return arrays(root) as StripeObject;
}

function arrays(value: unknown): unknown {
  if (!isObject(value)) return value;
  const keys = Object.keys(value);
  if (keys.length && keys.every((k) => /^\d+$/.test(k))) return keys.sort((a, b) => Number(a) - Number(b)).map((k) => arrays(value[k]));
  return Object.fromEntries(keys.map((k) => [k, arrays(value[k])]));
}
