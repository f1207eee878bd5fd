// The three ways bench:alerts hears the service, each as a customer would: the real-time stream
// (a WebSocket client per account, resuming from its last id when the server closes it), a
// Standard Webhooks endpoint per account (every request verified with the reference
// `standardwebhooks` package against the webhook's secret), and a Discord stand-in per account
// (the execute-webhook JSON that would reach Discord, whose item is told by the role it mentions:
// every Discord item of the bench mentions a role of its own). Both endpoints are one loopback
// server (the service takes loopback URLs with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, as in the
// tests) that answers 204 at once.
//
// Every message is reduced to the key the expectations use (model.ts): a change by item, section,
// kind and both sides' stock and lowest price; a platform incident by item and state; a
// retirement by item. Each arrival keeps the id its channel gives it (the log id; the
// `webhook-id`; the notification id in the Discord embed's footer), so a message sent again under
// the same id (at least once delivery) is told from a second message.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { Account } from '../monitors/load.ts';
import { ResumingStreams } from '../monitors/resuming-stream.ts';
import { incidentKey, notificationKey, retiredKey } from './model.ts';

export const CHANNELS = ['stream', 'webhook', 'discord'] as const;
export type Channel = (typeof CHANNELS)[number];
export const CHANNEL_NAMES: Record<Channel, string> = { stream: 'stream', webhook: 'webhooks', discord: 'Discord' };

export interface Side {
  stock?: number | null;
  min_price?: number | null;
}

/** One message as the scoring reads it, whichever channel brought it. */
export interface Message {
  type: 'notification' | 'platform_incident' | 'target_retired';
  item_id: number;
  section?: string;
  change_type?: string;
  before?: Side;
  after?: Side;
  state?: string;
}

export interface Arrival {
  channel: Channel;
  /** The channel's own id of the message (a resend repeats it). */
  id: string;
  at: number;
  key: string;
  m: Message;
}

export function messageKey(m: Message): string {
  if (m.type === 'platform_incident') return incidentKey(m.item_id, m.state ?? '');
  if (m.type === 'target_retired') return retiredKey(m.item_id);
  return notificationKey(m.item_id, m.section ?? '', m.change_type ?? '', m.before ?? {}, m.after ?? {});
}

/** Every message each channel received, by key. */
export class Inbox {
  readonly arrivals: Arrival[] = [];
  private readonly counts = new Map<string, number>();

  add(channel: Channel, id: string, m: Message, at = Date.now()): void {
    const key = messageKey(m);
    this.arrivals.push({ channel, id, at, key, m });
    this.counts.set(`${channel} ${key}`, (this.counts.get(`${channel} ${key}`) ?? 0) + 1);
  }

  count(channel: Channel, key: string): number {
    return this.counts.get(`${channel} ${key}`) ?? 0;
  }

  total(channel?: Channel): number {
    return channel ? this.arrivals.filter((a) => a.channel === channel).length : this.arrivals.length;
  }
}

const SCORED = new Set(['notification', 'platform_incident', 'target_retired']);

/** The stream's (and a standard webhook's `data`) message, as the scoring reads it; null for others. */
function fromStreamMessage(raw: Record<string, unknown>): Message | null {
  if (!SCORED.has(String(raw.type)) || typeof raw.item_id !== 'number') return null;
  return {
    type: raw.type as Message['type'],
    item_id: raw.item_id,
    section: (raw.section as string | null | undefined) ?? undefined,
    change_type: raw.change_type as string | undefined,
    before: raw.before as Side | undefined,
    after: raw.after as Side | undefined,
    state: raw.state as string | undefined,
  };
}

/** One WebSocket client per account on the stream node, every scored message into the inbox. */
export class AlertStream {
  private constructor(private readonly streams: ResumingStreams) {}

  static async connect(url: string, accounts: readonly Account[], inbox: Inbox): Promise<AlertStream> {
    const streams = new ResumingStreams(url, (raw, at) => {
      const m = fromStreamMessage(raw);
      if (m) inbox.add('stream', String(raw.id), m, at);
    });
    await streams.openAll(accounts);
    return new AlertStream(streams);
  }

  get reconnects(): number {
    return this.streams.reconnects;
  }

  get closes(): string[] {
    return this.streams.closes;
  }

  close(): void {
    this.streams.close();
  }
}

const num = (s: string | undefined): number | null => (s === undefined || s === 'none' ? null : Number(s));

/** "stock 12, min price 100 GBP, avg price 100 GBP" (src/webhooks/discord-message.ts' sides, as a reader of the embed sees them). */
function discordSide(text: string | undefined): Side {
  const m = /^stock (\d+), min price (none|-?[\d.]+)/.exec(text ?? '');
  return m ? { stock: Number(m[1]), min_price: num(m[2]) } : {};
}

interface DiscordBody {
  content?: string;
  embeds?: { title?: string; fields?: { name: string; value: string }[]; footer?: { text?: string } }[];
}

/**
 * A Discord message as the scoring reads it: the item from the first role mentioned, the kind
 * from the embed's title, a change's section and sides from its fields. Null when it cannot be
 * read (counted apart).
 */
export function fromDiscord(body: DiscordBody, itemOfRole: ReadonlyMap<string, number>): { id: string; m: Message } | null {
  const role = /<@&(\d+)>/.exec(body.content ?? '')?.[1];
  const item = role === undefined ? undefined : itemOfRole.get(role);
  const embed = body.embeds?.[0];
  if (item === undefined || !embed) return null;
  const id = /notification (\d+)/.exec(embed.footer?.text ?? '')?.[1] ?? '';
  const field = (name: string) => embed.fields?.find((f) => f.name === name)?.value;
  const title = embed.title ?? '';
  if (title.startsWith('Platform failing:')) return { id, m: { type: 'platform_incident', item_id: item, state: 'failing' } };
  if (title.startsWith('Platform recovered:')) return { id, m: { type: 'platform_incident', item_id: item, state: 'recovered' } };
  if (title.startsWith('Event no longer checked')) return { id, m: { type: 'target_retired', item_id: item } };
  if (!title.startsWith('Ticket alert:')) return null;
  return { id, m: { type: 'notification', item_id: item, section: field('Section') ?? '', change_type: field('Change'), before: discordSide(field('Before')), after: discordSide(field('After')) } };
}

/** The loopback endpoints of every account's standard and Discord webhooks. */
export class Endpoints {
  /** Standard requests whose signature the reference verifier refused, and Discord bodies that could not be read. */
  unverified = 0;
  unreadable = 0;
  pings = 0;
  private readonly secrets = new Map<string, string>();
  private readonly roles = new Map<string, number>();
  private constructor(
    private readonly server: http.Server,
    readonly base: string,
    private readonly inbox: Inbox,
  ) {}

  static async start(inbox: Inbox): Promise<Endpoints> {
    let self: Endpoints | null = null;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          self?.receive(req.url ?? '', req.headers, Buffer.concat(chunks).toString('utf8'));
        } finally {
          res.writeHead(204);
          res.end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new Endpoints(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, inbox);
    return self;
  }

  /** The standard webhook's URL for `name`; its secret is set once the service gave it. */
  standardUrl(name: string): string {
    return `${this.base}/standard/${name}`;
  }

  setSecret(name: string, secret: string): void {
    this.secrets.set(name, secret);
  }

  /** A Discord-shaped execute-webhook URL on loopback. */
  discordUrl(name: string, n: number): string {
    return `${this.base}/discord/${name}/api/webhooks/${100_000 + n}/bench-alerts-${name}`;
  }

  /** The item a Discord message mentioning `roleId` is about. */
  setRole(roleId: string, itemId: number): void {
    this.roles.set(roleId, itemId);
  }

  private receive(url: string, headers: http.IncomingHttpHeaders, body: string): void {
    const at = Date.now();
    const [, kind, name] = url.split('/');
    if (kind === 'standard') {
      const secret = this.secrets.get(name ?? '');
      const flat = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, String(v)]));
      try {
        if (!secret) throw new Error('no secret');
        new Webhook(secret).verify(body, flat);
      } catch {
        this.unverified++;
        return;
      }
      const parsed = JSON.parse(body) as { type?: string; data?: Record<string, unknown> };
      if (parsed.type === 'ping') this.pings++;
      const m = parsed.data ? fromStreamMessage(parsed.data) : null;
      if (m) this.inbox.add('webhook', String(headers['webhook-id']), m, at);
      else if (parsed.type !== 'ping') this.unreadable++;
    } else if (kind === 'discord') {
      let parsed: { id: string; m: Message } | null = null;
      try {
        parsed = fromDiscord(JSON.parse(body) as DiscordBody, this.roles);
      } catch {
        parsed = null;
      }
      if (parsed) this.inbox.add('discord', parsed.id, parsed.m, at);
      else this.unreadable++;
    } else {
      this.unreadable++;
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}
