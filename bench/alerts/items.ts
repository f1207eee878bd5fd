// bench:alerts' accounts and items: one account per platform (each with its WebSocket client),
// every scenario's items created through POST /watchlist as a customer would, then the wait until
// every active item has its baseline (its first poll: creating an item never notifies). An item
// with a cooldown the service refuses (`cooldown_seconds` not there yet) is created without it,
// so the run still shows what the service does today, and the refusal is kept for the report.
import { createAccount, createKey } from '../../src/accounts/operations.ts';
import type { PlatformKey } from '../../src/platform/registry.ts';
import type { Lifecycle } from '../monitors/lifecycle.ts';
import type { Account } from '../monitors/load.ts';
import type { Stack } from '../monitors/stack.ts';
import { progress, sleep } from '../monitors/support.ts';
import type { ItemSpec } from './model.ts';
import type { Script } from './scenarios.ts';

export interface ItemRun {
  spec: ItemSpec;
  id: number;
  /** What the service said about a field it would not take (the item was created without it). */
  refused: string | null;
}

const DAY_MS = 86_400_000;

function itemBody(s: Script, spec: ItemSpec, withCooldown: boolean): Record<string, unknown> {
  return {
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

export async function createAccounts(stack: Stack, platforms: readonly PlatformKey[]): Promise<Map<PlatformKey, Account>> {
  const accounts = new Map<PlatformKey, Account>();
  for (const p of platforms) {
    const { account_id } = await createAccount(stack.db, { plan: 'pro', name: `bench-alerts-${p}` });
    const { key } = await createKey(stack.db, { accountId: account_id, rateLimitPerMinute: 1_000_000 });
    accounts.set(p, { id: account_id, key });
  }
  return accounts;
}

async function post(stack: Stack, account: Account, body: Record<string, unknown>): Promise<{ status: number; text: string }> {
  const res = await fetch(`${stack.gatewayUrl}/watchlist`, {
    method: 'POST',
    headers: { apikey: account.key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** Creates the script's items; throws on any refusal but a cooldown's. */
export async function createItems(stack: Stack, s: Script, account: Account): Promise<ItemRun[]> {
  const out: ItemRun[] = [];
  for (const spec of s.items) {
    let refused: string | null = null;
    let answer = await post(stack, account, itemBody(s, spec, true));
    if (answer.status === 400 && spec.cooldown_s !== undefined && answer.text.includes('cooldown_seconds')) {
      refused = `400 ${answer.text.trim()}`;
      answer = await post(stack, account, itemBody(s, spec, false));
    }
    if (answer.status !== 201) throw new Error(`POST /watchlist for ${s.platform.platform} ${s.role} ${spec.label}: ${answer.status} ${answer.text.slice(0, 300)}`);
    const item = JSON.parse(answer.text) as { id: number; cooldown_seconds?: number };
    if (!refused && spec.cooldown_s !== undefined && item.cooldown_seconds !== spec.cooldown_s) {
      refused = `accepted, but the item reads back cooldown_seconds ${JSON.stringify(item.cooldown_seconds)}`;
    }
    out.push({ spec, id: Number(item.id), refused });
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
