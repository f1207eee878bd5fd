// bench:alerts' accounts and items: one account per platform (each with its WebSocket client, a
// standard webhook and a Discord webhook, created through POST /webhooks and pointing at the
// bench's loopback endpoints), every scenario's items created through POST /watchlist as a
// customer would, twice: one twin names the standard webhook, the other the Discord one with a
// role of its own (what tells its Discord messages apart). Then the wait until every active item
// has its baseline (its first poll: creating an item never notifies). An item with a cooldown the
// service refuses (`cooldown_seconds` not there yet) is created without it, so the run still
// shows what the service does today, and the refusal is kept for the report.
import { createAccount, createKey } from '../../src/accounts/operations.ts';
import type { PlatformKey } from '../../src/platform/registry.ts';
import type { Lifecycle } from '../monitors/lifecycle.ts';
import type { Account } from '../monitors/load.ts';
import type { Stack } from '../monitors/stack.ts';
import { progress, sleep } from '../monitors/support.ts';
import type { Endpoints } from './channels.ts';
import type { ItemSpec } from './model.ts';
import type { Script } from './scenarios.ts';

/** Which webhook an item names: every spec is created once for each. */
export type Hook = 'standard' | 'discord';
export const HOOKS: readonly Hook[] = ['standard', 'discord'];

export interface ItemRun {
  spec: ItemSpec;
  id: number;
  hook: Hook;
  /** The Discord role the item mentions (discord twins). */
  roleId: string | null;
  /** What the service said about a field it would not take (the item was created without it). */
  refused: string | null;
}

export interface AlertAccount extends Account {
  /** Webhook ids by kind. */
  hooks: Record<Hook, number>;
}

const DAY_MS = 86_400_000;

function itemBody(s: Script, spec: ItemSpec, withCooldown: boolean, hook: { id: number; roleId: string | null }): Record<string, unknown> {
  return {
    webhook_setting_id: hook.id,
    ...(hook.roleId ? { role_id: hook.roleId } : {}),
    website: s.platform.platform,
    event: s.eventId,
    region: s.region,
    change_type: spec.change_type,
    section: spec.section ?? null,
    standard_tickets: spec.kinds.includes('standard'),
    resale_tickets: spec.kinds.includes('resale'),
    general_admission_tickets: spec.kinds.includes('general_admission'),
    platinum_tickets: spec.kinds.includes('platinum'),
    ...(spec.muted ? { muted_until: new Date(Date.now() + DAY_MS).toISOString() } : {}),
    ...(spec.paused ? { task_active: false } : {}),
    ...(withCooldown && spec.cooldown_s !== undefined ? { cooldown_seconds: spec.cooldown_s } : {}),
    notes: `bench:alerts ${s.role} ${spec.label}`,
  };
}

async function createWebhook(stack: Stack, key: string, body: Record<string, unknown>): Promise<{ id: number; secret: string | null }> {
  const res = await fetch(`${stack.gatewayUrl}/webhooks`, { method: 'POST', headers: { apikey: key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`POST /webhooks ${JSON.stringify(body.kind)}: ${res.status} ${text.slice(0, 300)}`);
  const hook = JSON.parse(text) as { id: number; secret: string | null };
  return { id: Number(hook.id), secret: hook.secret };
}

/** An account per platform, with its standard webhook (its secret given to the endpoint) and its Discord webhook. */
export async function createAccounts(stack: Stack, platforms: readonly PlatformKey[], endpoints: Endpoints): Promise<Map<PlatformKey, AlertAccount>> {
  const accounts = new Map<PlatformKey, AlertAccount>();
  for (const [n, p] of platforms.entries()) {
    const { account_id } = await createAccount(stack.db, { plan: 'pro', name: `bench-alerts-${p}` });
    const { key } = await createKey(stack.db, { accountId: account_id, rateLimitPerMinute: 1_000_000 });
    const standard = await createWebhook(stack, key, { kind: 'standard', url: endpoints.standardUrl(p), description: `bench:alerts ${p}` });
    if (!standard.secret) throw new Error('POST /webhooks gave a standard webhook no secret');
    endpoints.setSecret(p, standard.secret);
    const discord = await createWebhook(stack, key, { kind: 'discord', url: endpoints.discordUrl(p, n), description: `bench:alerts ${p}` });
    accounts.set(p, { id: account_id, key, hooks: { standard: standard.id, discord: discord.id } });
  }
  return accounts;
}

let roles = 0;
/** A Discord role id (a 17-digit snowflake) no other bench item mentions. */
function nextRole(): string {
  return String(10_000_000_000_000_000n + BigInt(++roles));
}

async function post(stack: Stack, account: Account, body: Record<string, unknown>): Promise<{ status: number; text: string }> {
  const res = await fetch(`${stack.gatewayUrl}/watchlist`, {
    method: 'POST',
    headers: { apikey: account.key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** Creates the script's items, one per webhook kind; throws on any refusal but a cooldown's. */
export async function createItems(stack: Stack, s: Script, account: AlertAccount, endpoints: Endpoints): Promise<ItemRun[]> {
  const out: ItemRun[] = [];
  for (const spec of s.items) {
    for (const hook of HOOKS) {
      const roleId = hook === 'discord' ? nextRole() : null;
      const named = { id: account.hooks[hook], roleId };
      let refused: string | null = null;
      let answer = await post(stack, account, itemBody(s, spec, true, named));
      if (answer.status === 400 && spec.cooldown_s !== undefined && answer.text.includes('cooldown_seconds')) {
        refused = `400 ${answer.text.trim()}`;
        answer = await post(stack, account, itemBody(s, spec, false, named));
      }
      if (answer.status !== 201) throw new Error(`POST /watchlist for ${s.platform.platform} ${s.role} ${spec.label}: ${answer.status} ${answer.text.slice(0, 300)}`);
      const item = JSON.parse(answer.text) as { id: number; cooldown_seconds?: number };
      if (!refused && spec.cooldown_s !== undefined && item.cooldown_seconds !== spec.cooldown_s) {
        refused = `accepted, but the item reads back cooldown_seconds ${JSON.stringify(item.cooldown_seconds)}`;
      }
      const id = Number(item.id);
      if (roleId) endpoints.setRole(roleId, id);
      out.push({ spec, id, hook, roleId, refused });
    }
  }
  return out;
}

/** Waits until every active item is polled once (its baseline); throws after `timeoutMs`. */
export async function waitForBaselines(stack: Stack, ids: readonly number[], timeoutMs: number, life: Lifecycle): Promise<number> {
  const started = Date.now();
  let printed = started;
  for (;;) {
    life.check();
    const row = (await stack.db('monitor_members').whereIn('item_id', ids).whereNotNull('baseline_snapshot_id').count({ n: '*' }).first()) as { n: string | number };
    const n = Number(row.n);
    if (n >= ids.length) return (Date.now() - started) / 1000;
    if (Date.now() - started > timeoutMs) throw new Error(`only ${n} of ${ids.length} active items had their baseline ${timeoutMs / 1000} s after they were created`);
    if (Date.now() - printed >= 10_000) {
      printed = Date.now();
      progress(`  ${n}/${ids.length} items have their baseline`);
    }
    await sleep(250);
  }
}
