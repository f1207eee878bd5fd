// The load that runs through every fault, and the ground truth it writes down as it goes: every
// request with what the client saw (status, X-Request-Id, when), every inventory change before
// it is made, every item's life (created, edited, deleted), every notification each stream
// client delivered and every webhook request each receiver got. Nothing here reads the
// service's own view as truth: the database is read only to pace the set-up (baselines).
//
// All of it goes through nginx, as customers' traffic does: accounts and keys are made as the
// tests and benches make them (src/accounts/operations.ts), webhooks and items through the API,
// stream clients are the TypeScript client (clients/typescript, resuming with its last id).
import WebSocket from 'ws';
import { PLATFORM_SHAPES, changedSections, type Section } from '../bench/monitors/platform.ts';
import { changeKey } from '../bench/monitors/stream-clients.ts';
import { inParallel, sleep } from '../bench/monitors/support.ts';
import { NotificationStream, type Disconnect } from '../clients/typescript/src/index.ts';
import { createAccount, createKey } from '../src/accounts/operations.ts';
import { simEventInputSchema, type SimEventInput } from '../src/simulator/state.ts';
import { startReceiver, type Receiver } from '../test/support/webhook-receiver.ts';
import type { RehearsalConfig } from './config.ts';
import type { Topology } from './topology.ts';

const SHAPE = PLATFORM_SHAPES.pf_03;
/** Scrape-only events, apart from the watched ones: a scrape's request must not look like a poll. */
const SCRAPE_EVENT_OFFSET = 100_000;
const SCRAPE_EVENTS = 5;

/** Every paid route the load calls, with its cost (src/gateway/catalog.ts). */
export const PAID_ROUTES = [
  { route: 'GET /svc/data/ping', path: '/svc/data/ping', credits: 1 },
  { route: 'GET /events/platforms', path: '/events/platforms', credits: 5 },
  { route: 'GET /events/ping', path: '/events/ping', credits: 5 },
] as const;
export const SCRAPE_ROUTE = 'POST /events/scrape';
export const SCRAPE_CREDITS = 5;

export interface RequestRecord {
  route: string;
  sentAt: number;
  doneAt: number;
  /** 0: no answer (connection refused or reset, time-out). */
  status: number;
  requestId: string | null;
  accountId: number;
  /** What the route costs when billed (0 for free routes). */
  credits: number;
  error: string | null;
}

export interface Account {
  id: number;
  keys: string[];
  webhook: { id: number; receiver: Receiver } | null;
  stream: StreamClient;
}

export interface Target {
  index: number;
  eventId: string;
  key: string;
  sections: Section[];
  changes: number;
}

export interface Item {
  id: number;
  account: number;
  target: number;
  /** When its POST answered 201 (the item exists from some moment before). */
  createdAt: number;
  /** Made at set-up and never deleted. */
  standing: boolean;
  webhook: boolean;
  /** When its first DELETE was sent, and when one answered 204. */
  deleteSentAt: number | null;
  deletedAt: number | null;
}

export interface Change {
  target: number;
  section: string;
  /** The section's stock after it: the notification's after.stock. */
  stock: number;
  /** Date.now() right before the simulator applied it. */
  putAt: number;
  /** Whole pages the target had served before it (the simulator's `reads`): a later one saw it. */
  readsBefore: number;
}

/** One account's stream, the TypeScript client through nginx; what it delivered, when. */
export class StreamClient {
  /** changeKey → arrival times (more than one: the client delivered it twice). */
  readonly arrivals = new Map<string, number[]>();
  readonly disconnects: (Disconnect & { at: number })[] = [];
  readonly fatal: { at: number; message: string }[] = [];
  gaps = 0;
  private stream: NotificationStream;
  private live: Promise<void>;
  private closed = false;

  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
  ) {
    this.stream = this.open(null);
    this.live = this.waitLive();
  }

  private waitLive(): Promise<void> {
    return new Promise((resolve) => {
      const off = this.stream.on('live', () => {
        off();
        resolve();
      });
    });
  }

  private open(lastId: number | null): NotificationStream {
    const stream = new NotificationStream({ baseUrl: this.baseUrl, apiKey: this.apiKey, WebSocket, lastId });
    stream.on('notification', (n) => {
      const key = changeKey(Number(n.item_id), n.section ?? '', Number(n.after?.stock));
      const list = this.arrivals.get(key);
      if (list) list.push(Date.now());
      else this.arrivals.set(key, [Date.now()]);
    });
    stream.on('disconnect', (d) => this.disconnects.push({ ...d, at: Date.now() }));
    stream.on('gap', () => this.gaps++);
    stream.on('error', (err) => this.fatal.push({ at: Date.now(), message: err.message }));
    stream.on('close', () => {
      // A stream the client gave up on (a refusal it takes as final): a customer's program would
      // start it again from its saved id; so does the load, and the report names the refusal.
      if (this.closed) return;
      const last = stream.lastId;
      setTimeout(() => {
        if (!this.closed) this.stream = this.open(last);
      }, 1_000);
    });
    return stream;
  }

  whenLive(): Promise<void> {
    return this.live;
  }

  close(): void {
    this.closed = true;
    this.stream.close();
  }
}

export class Load {
  readonly requests: RequestRecord[] = [];
  readonly changes: Change[] = [];
  readonly items = new Map<number, Item>();
  readonly accounts: Account[] = [];
  readonly targets: Target[] = [];
  /** A platform fault's behaviour per target key, kept through every inventory change. */
  private readonly behaviours = new Map<string, Partial<SimEventInput>>();
  /** POST /watchlist whose answer never came: an item may exist that the load has no id for. */
  lostCreates = 0;
  startedAt = 0;
  stoppedAt = 0;
  private running: Promise<void>[] = [];
  private stopped = false;
  private wake: () => void = () => {};
  /** Settles at stop(): a driver's wait for its next tick ends there. */
  private readonly stopping = new Promise<void>((resolve) => (this.wake = resolve));
  private keyTurn = 0;
  private seed = 1;

  constructor(
    private readonly topo: Topology,
    private readonly cfg: RehearsalConfig,
    private readonly progress: (m: string) => void,
  ) {}

  /** One request through nginx (or straight to `baseUrl`), written down whatever happens. */
  async call(
    route: string,
    method: string,
    path: string,
    key: string,
    accountId: number,
    credits: number,
    body?: unknown,
    timeoutMs = 30_000,
    baseUrl = this.topo.publicUrl,
  ): Promise<{ status: number; json: unknown }> {
    const rec: RequestRecord = { route, sentAt: Date.now(), doneAt: 0, status: 0, requestId: null, accountId, credits, error: null };
    let json: unknown = null;
    try {
      const res = await fetch(`${baseUrl}${path}`, {
        method,
        headers: { apikey: key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      rec.status = res.status;
      rec.requestId = res.headers.get('x-request-id');
      try {
        json = JSON.parse(text);
      } catch {
        json = text;
      }
    } catch (err) {
      rec.error = err instanceof Error ? `${err.name}: ${(err.cause as Error | undefined)?.message ?? err.message}` : String(err);
    }
    rec.doneAt = Date.now();
    this.requests.push(rec);
    return { status: rec.status, json };
  }

  private random(): number {
    // A fixed sequence: two runs make the same choices.
    this.seed = (this.seed * 48_271) % 2_147_483_647;
    return this.seed / 2_147_483_647;
  }

  private nextKey(): { account: Account; key: string } {
    const n = this.keyTurn++;
    const account = this.accounts[n % this.accounts.length]!;
    return { account, key: account.keys[Math.floor(n / this.accounts.length) % account.keys.length]! };
  }

  async setUp(): Promise<void> {
    const { cfg, topo } = this;
    this.progress(`load: ${cfg.accounts} accounts × ${cfg.keysPerAccount} keys, ${cfg.webhookAccounts} webhook endpoints, ${cfg.targets} pf_03 targets × ${cfg.itemsPerTarget} standing items...`);
    for (let i = 0; i < cfg.targets; i++) {
      const { eventId, key } = SHAPE.event(i);
      this.targets.push({ index: i, eventId, key, sections: SHAPE.sections(i), changes: 0 });
    }
    for (const t of this.targets) this.put(t);
    for (let i = 0; i < SCRAPE_EVENTS; i++) {
      const { key } = SHAPE.event(SCRAPE_EVENT_OFFSET + i);
      topo.sim.store.put('pf_03', key, simEventInputSchema.parse({ region: SHAPE.region, sections: SHAPE.sections(i) }));
    }
    for (let a = 0; a < cfg.accounts; a++) {
      const { account_id } = await createAccount(topo.db, { plan: 'pro', name: `rehearsal-${a}` });
      const keys: string[] = [];
      for (let k = 0; k < cfg.keysPerAccount; k++) keys.push((await createKey(topo.db, { accountId: account_id, rateLimitPerMinute: 1_000_000 })).key);
      let webhook: Account['webhook'] = null;
      if (a < cfg.webhookAccounts) {
        const receiver = await startReceiver();
        const { status, json } = await this.call('POST /webhooks', 'POST', '/webhooks', keys[0]!, account_id, 0, { url: receiver.url, kind: 'standard', description: `rehearsal ${a}` });
        const hook = json as { id?: number; secret?: string };
        if (status !== 201 || !hook.id || !hook.secret) throw new Error(`POST /webhooks answered ${status}: ${JSON.stringify(json).slice(0, 300)}`);
        receiver.secrets = [hook.secret];
        webhook = { id: hook.id, receiver };
      }
      this.accounts.push({ id: account_id, keys, webhook, stream: new StreamClient(topo.publicUrl, keys[0]!) });
    }
    await Promise.all(this.accounts.map((a) => a.stream.whenLive()));
    this.progress(`  ${this.accounts.length} stream clients live through nginx`);

    const pairs = this.targets.flatMap((t) => Array.from({ length: cfg.itemsPerTarget }, (_, j) => ({ t, account: this.accounts[(t.index + j * 7) % this.accounts.length]! })));
    let failed = 0;
    await inParallel(pairs, 8, async ({ t, account }) => {
      const id = await this.createItem(account, t, true);
      if (id === null) failed++;
    });
    if (failed) throw new Error(`${failed} standing items could not be created`);
    const started = Date.now();
    for (;;) {
      const r = (await topo.db('monitor_members').first(topo.db.raw('count(baseline_snapshot_id)::int AS n'))) as { n: number };
      if (r.n >= this.items.size) break;
      if (Date.now() - started > 120_000) throw new Error(`only ${r.n} of ${this.items.size} items had a baseline 120 s after their creation`);
      await sleep(500);
    }
    this.progress(`  ${this.items.size} standing items created, every one with its baseline ${((Date.now() - started) / 1000).toFixed(1)} s later`);
  }

  /**
   * Sets a target's inventory on the simulator, with the behaviour a platform fault gave it;
   * returns the whole pages it had served before.
   */
  private put(t: Target): number {
    return this.topo.sim.store.put('pf_03', t.key, simEventInputSchema.parse({ region: SHAPE.region, sections: t.sections, ...this.behaviours.get(t.key) })).reads;
  }

  /** Every webhook receiver of the run (one per webhook account). */
  receivers(): Receiver[] {
    return this.accounts.flatMap((a) => (a.webhook ? [a.webhook.receiver] : []));
  }

  /**
   * How the platform answers for these targets from now on (a platform fault: slow, refusing,
   * malformed pages), or as usual again with null; their inventory stays as it is.
   */
  setBehaviour(targets: Target[], fields: Partial<Pick<SimEventInput, 'behaviour' | 'delay_ms' | 'blocked_status' | 'retry_after_s'>> | null): void {
    for (const t of targets) {
      if (fields) this.behaviours.set(t.key, fields);
      else this.behaviours.delete(t.key);
      this.put(t);
    }
  }

  private async createItem(account: Account, t: Target, standing: boolean): Promise<number | null> {
    const body = { website: 'pf_03', event: t.eventId, region: SHAPE.region, ...(account.webhook ? { webhook_setting_id: account.webhook.id } : {}) };
    const { status, json } = await this.call('POST /watchlist', 'POST', '/watchlist', account.keys[0]!, account.id, 0, body);
    const id = (json as { id?: number } | null)?.id;
    if (status === 201 && id) {
      this.items.set(Number(id), { id: Number(id), account: account.id, target: t.index, createdAt: Date.now(), standing, webhook: account.webhook !== null, deleteSentAt: null, deletedAt: null });
      return Number(id);
    }
    if (status === 0 || status >= 500) this.lostCreates++;
    return null;
  }

  /** Starts every driver; they run until stop(). */
  start(): void {
    this.startedAt = Date.now();
    const { cfg } = this;
    if (cfg.changesPerSecond > 0) this.every(1000 / cfg.changesPerSecond, 1, async () => this.change());
    if (cfg.paidPerSecond > 0) {
      let turn = 0;
      this.every(1000 / cfg.paidPerSecond, 32, async () => {
        const r = PAID_ROUTES[turn++ % PAID_ROUTES.length]!;
        const { account, key } = this.nextKey();
        await this.call(r.route, 'GET', r.path, key, account.id, r.credits);
      });
    }
    if (cfg.scrapeEveryMs > 0) {
      let turn = 0;
      this.every(cfg.scrapeEveryMs, 8, async () => {
        const { account, key } = this.nextKey();
        const { eventId } = SHAPE.event(SCRAPE_EVENT_OFFSET + (turn++ % SCRAPE_EVENTS));
        await this.call(SCRAPE_ROUTE, 'POST', '/events/scrape', key, account.id, SCRAPE_CREDITS, { platform: 'pf_03', event_id: eventId, region: SHAPE.region }, 75_000);
      });
    }
    // The free routes every client calls: its usage, its watchlist.
    this.every(1_000, 8, async () => {
      const { account, key } = this.nextKey();
      await this.call('GET /usage', 'GET', '/usage', key, account.id, 0);
    });
    this.every(2_000, 8, async () => {
      const { account, key } = this.nextKey();
      await this.call('GET /watchlist', 'GET', '/watchlist', key, account.id, 0);
    });
    if (cfg.churnEveryMs > 0) {
      let turn = 0;
      this.every(cfg.churnEveryMs, 4, async () => this.churn(turn++));
    }
  }

  /**
   * Runs `fn` every `ms`, at most `limit` at once: a request that hangs through a fault takes
   * one slot, it does not stop the clock (a slot-less tick is skipped and so not sent at all).
   */
  private every(ms: number, limit: number, fn: () => Promise<void>): void {
    const inFlight = new Set<Promise<void>>();
    const t0 = Date.now();
    this.running.push(
      (async () => {
        for (let n = 0; !this.stopped; n++) {
          const wait = t0 + n * ms - Date.now();
          if (wait > 0) await Promise.race([sleep(wait), this.stopping]);
          if (this.stopped) break;
          if (inFlight.size >= limit) continue;
          const p = fn()
            .catch((err: unknown) => this.progress(`load: ${err instanceof Error ? err.message : String(err)}`))
            .finally(() => inFlight.delete(p));
          inFlight.add(p);
        }
        await Promise.allSettled([...inFlight]);
      })(),
    );
  }

  /** One inventory change, written down before the simulator applies it. */
  private async change(): Promise<void> {
    const t = this.targets[this.changes.length % this.targets.length]!;
    const standard = changedSections(t.sections);
    const section = standard[t.changes % standard.length]!;
    section.stock++;
    t.changes++;
    const change: Change = { target: t.index, section: section.name, stock: section.stock, putAt: Date.now(), readsBefore: NaN };
    this.changes.push(change);
    change.readsBefore = this.put(t);
  }

  /** Creates on one turn, edits on the next, deletes the oldest churned item past its life on the third. */
  private async churn(turn: number): Promise<void> {
    const churned = [...this.items.values()].filter((i) => !i.standing && i.deletedAt === null);
    if (turn % 3 === 0) {
      const account = this.accounts[Math.floor(this.random() * this.accounts.length)]!;
      const t = this.targets[Math.floor(this.random() * this.targets.length)]!;
      await this.createItem(account, t, false);
    } else if (turn % 3 === 1) {
      const live = churned.filter((i) => i.deleteSentAt === null);
      const item = live[Math.floor(this.random() * live.length)];
      if (!item) return;
      const key = this.accounts.find((a) => a.id === item.account)!.keys[0]!;
      // Fields that change no notification rule: the edit must not change what is expected.
      await this.call('PATCH /watchlist/{id}', 'PATCH', `/watchlist/${item.id}`, key, item.account, 0, { notes: `edit at ${Date.now()}`, priority: turn % 1000 });
    } else {
      // A delete whose answer never came is sent again before any other.
      const item = churned.find((i) => i.deleteSentAt !== null) ?? churned.find((i) => Date.now() - i.createdAt >= this.cfg.churnLifeMs);
      if (!item) return;
      item.deleteSentAt ??= Date.now();
      const key = this.accounts.find((a) => a.id === item.account)!.keys[0]!;
      const { status } = await this.call('DELETE /watchlist/{id}', 'DELETE', `/watchlist/${item.id}`, key, item.account, 0);
      if (status === 204 || status === 404) item.deletedAt = Date.now();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await Promise.all(this.running);
    this.stoppedAt = Date.now();
  }

  async close(): Promise<void> {
    for (const a of this.accounts) {
      a.stream.close();
      await a.webhook?.receiver.close();
    }
  }
}
