// Stripe for tests: the run's stripe-mock (started once by global-setup.ts) and a small recording
// proxy in front of it. Every request goes through to stripe-mock, so every call the code makes is
// checked against Stripe's OpenAPI (a 4xx from stripe-mock comes back unchanged). stripe-mock is
// stateless and answers fixtures; the proxy keeps the little state the billing tests need:
//   - what was sent (method, path, form body, Idempotency-Key, status);
//   - meter events, deduplicated by identifier as Stripe does, totalled per customer and event;
//   - subscriptions a test overrides (status, items, period, customer) to drive status changes;
//   - faults: the next n requests answered with a status, or no listener at all (down/up);
//   - meter event requests held open until released (a send in flight when a worker dies).
// What this does not check: Stripe's behaviour beyond the schema (amounts, proration, what
// a meter bills, webhooks), which only Stripe's test mode shows.
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
  meterTotal(customer: string, eventName: string): number;
  setSubscription(id: string, override: SubscriptionOverride): void;
  /** Answers the next `n` requests with `status` (a Stripe-shaped error) without forwarding them. */
  failNext(n: number, status: number, opts?: { retryAfter?: number }): void;
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
  let faults: { left: number; status: number; retryAfter?: number } | null = null;
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

    if (faults && faults.left > 0) {
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
    record(answer.status, false);

    if (answer.ok) {
      if (method === 'POST' && url.pathname === '/v1/billing/meter_events') acceptMeterEvent(form);
      const subscription = /^\/v1\/subscriptions\/([^/]+)$/.exec(url.pathname);
      const override = subscription && method === 'GET' ? subscriptions.get(decodeURIComponent(subscription[1]!)) : undefined;
      if (override) text = JSON.stringify(merge(JSON.parse(text), override), null, 2);
    }
    const headers: http.OutgoingHttpHeaders = {};
    answer.headers.forEach((value, name) => {
      // fetch has already decoded the body and the proxy may have rewritten it.
      if (!HOP_BY_HOP.has(name) && name !== 'content-length' && name !== 'content-encoding') headers[name] = value;
    });
    res.writeHead(answer.status, headers).end(text);
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
    meterTotal: (customer, eventName) =>
      meterEvents.filter((e) => e.customer === customer && e.eventName === eventName).reduce((sum, e) => sum + e.value, 0),
    setSubscription: (id, override) => void subscriptions.set(id, override),
    failNext: (n, status, opts = {}) => {
      faults = n > 0 ? { left: n, status, retryAfter: opts.retryAfter } : null;
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
