// The ground truth of bench:alerts: what each item should be told, computed from the script and
// the documented rules (docs/monitoring.md "Change rules (exact)", the cooldown as specified in
// issue 24), before anything runs and without the service's code. A second implementation on
// purpose: importing src/monitors/changes.ts would check the service against itself.
//
// What a poll reads is the script's inventory, except that a page that is not `ok` is no reading
// at all (the state stays), and on pf_01 a failed arm leaves its kinds as last read (v1: resale
// and general admission; v2: every kind). pf_07 reads every offer as resale. Items here use
// seat_quantity 1 and no row, price or average bounds, so blocks and rows never matter and one
// rule set fits every platform's shape.
//
// Cooldown (per item and section, `cooldown_s` > 0): a notification starts a cooldown at the
// poll that found it; changes of the section until it ends are held; at the first poll after
// the end, if a change was held, the state last notified is compared with the state then by the
// same rules and one notification per kind that passes is sent (starting a new cooldown), else
// nothing and the hold ends. The model's clock is the script's schedule (Step.atS); the runner
// checks that the run kept to it (runner.ts), so the outcome never hangs on exact poll timing.

export type Kind = 'standard' | 'resale' | 'platinum' | 'general_admission';
export const KINDS: readonly Kind[] = ['standard', 'resale', 'platinum', 'general_admission'];
export type ChangeType = 'stock_increase' | 'price_decrease' | 'price_increase';

/** One priced lot on the simulator (its control API's section entry). */
export interface Listing {
  name: string;
  price: number;
  stock: number;
  ticket_type: Kind;
}

export interface ItemSpec {
  /** Unique within its target; the report names items by it. */
  label: string;
  change_type: ChangeType | null;
  section?: string;
  /** Ticket kinds it watches (the service's default: standard only). */
  kinds: readonly Kind[];
  /** muted_until a day ahead: notified of nothing. */
  muted?: boolean;
  /** task_active false: notified of nothing. */
  paused?: boolean;
  cooldown_s?: number;
}

export type Behaviour = 'ok' | 'blocked' | 'malformed' | 'error' | 'hang';

export interface Step {
  label: string;
  /** The whole inventory from this step on (absent: as before). */
  inventory?: Listing[];
  /** How the event's pages answer from this step on (absent: ok). */
  behaviour?: Behaviour;
  /** pf_01's data arms from this step on (absent: both ok). */
  arms?: { v1?: 'ok' | 'error'; v2?: 'ok' | 'error' };
  /** When the step starts, in seconds after the script's first step (required in scripts with a cooldown item). */
  atS?: number;
  /** No control call: time passes (a cooldown's end). */
  waitOnly?: boolean;
  /** The run's worker SIGKILL comes right after this step's control call (runner.ts). */
  killAfter?: boolean;
}

export interface SectionState {
  stock: number;
  min_price: number | null;
}

export interface Expected {
  item: string;
  /** Index of the step whose observation produces it. */
  step: number;
  section: string;
  change_type: ChangeType;
  before: SectionState;
  after: SectionState;
  /** Sent when a cooldown ends, not at its step's change: left out of the change-to-client delays. */
  held: boolean;
}

const ZERO: SectionState = { stock: 0, min_price: null };

/** Rules 1 and 2 for these items: matching stock and lowest price per section (absent = none). */
export function viewOf(listings: readonly Listing[], item: ItemSpec): Map<string, SectionState> {
  const view = new Map<string, SectionState>();
  const wanted = item.section?.toLowerCase() ?? null;
  for (const l of listings) {
    if (l.stock <= 0 || !item.kinds.includes(l.ticket_type)) continue;
    if (wanted !== null && l.name.toLowerCase() !== wanted) continue;
    const s = view.get(l.name) ?? { stock: 0, min_price: null };
    s.stock += l.stock;
    s.min_price = s.min_price === null ? l.price : Math.min(s.min_price, l.price);
    view.set(l.name, s);
  }
  return view;
}

/** Rules 3 and 4 for one section: the kinds that notify (stock_threshold_filter 1: stock after ≥ 1). */
export function sectionChanges(before: SectionState, after: SectionState, item: ItemSpec): ChangeType[] {
  const kinds: ChangeType[] = [];
  if (after.stock > before.stock) kinds.push('stock_increase');
  if (before.min_price !== null && after.min_price !== null) {
    if (after.min_price < before.min_price) kinds.push('price_decrease');
    if (after.min_price > before.min_price) kinds.push('price_increase');
  }
  return kinds.filter((k) => (item.change_type === null || item.change_type === k) && after.stock >= 1);
}

/** What a poll reads of `next`, given what was read before: failed parts keep their last reading. */
export function reading(previous: readonly Listing[], next: readonly Listing[], step: Step, kindsRead: boolean): Listing[] | null {
  if ((step.behaviour ?? 'ok') !== 'ok') return null;
  const v1 = step.arms?.v1 ?? 'ok';
  const v2 = step.arms?.v2 ?? 'ok';
  if (v1 === 'error' && v2 === 'error') return null;
  const unknown: readonly Kind[] = v2 === 'error' ? KINDS : v1 === 'error' ? ['resale', 'general_admission'] : [];
  const asRead = (ls: readonly Listing[]) => (kindsRead ? ls.map((l) => ({ ...l })) : ls.map((l) => ({ ...l, ticket_type: 'resale' as const })));
  return [...asRead(next).filter((l) => !unknown.includes(l.ticket_type)), ...asRead(previous).filter((l) => unknown.includes(l.ticket_type))];
}

interface Cooldown {
  until: number;
  notified: SectionState;
  held: boolean;
}

/** Every notification the script should produce, item by item, in step order. */
export function expectations(initial: readonly Listing[], steps: readonly Step[], items: readonly ItemSpec[], kindsRead: boolean): Expected[] {
  const timed = items.some((i) => (i.cooldown_s ?? 0) > 0);
  if (timed && steps.some((s) => s.atS === undefined)) throw new Error('a script with a cooldown item must give every step its time (atS)');
  const out: Expected[] = [];
  let read: Listing[] = initial.map((l) => ({ ...l }));
  let inventory: Listing[] = initial.map((l) => ({ ...l }));
  const cooldowns = new Map<string, Map<string, Cooldown>>(items.map((i) => [i.label, new Map()]));
  steps.forEach((step, index) => {
    if (step.inventory) inventory = step.inventory.map((l) => ({ ...l }));
    const now = step.waitOnly ? read : reading(read, inventory, step, kindsRead);
    if (now === null) return;
    const t = step.atS ?? 0;
    for (const item of items) {
      if (item.muted || item.paused) continue;
      const a = viewOf(read, item);
      const b = viewOf(now, item);
      const cd = cooldowns.get(item.label)!;
      const flushed = new Set<string>();
      // A cooldown that has ended: the held change, measured from the state last notified.
      for (const [section, c] of cd) {
        if (c.until > t) continue;
        cd.delete(section);
        if (!c.held) continue;
        flushed.add(section);
        const after = b.get(section) ?? ZERO;
        const kinds = sectionChanges(c.notified, after, item);
        for (const change_type of kinds) out.push({ item: item.label, step: index, section, change_type, before: c.notified, after, held: true });
        if (kinds.length) cd.set(section, { until: t + item.cooldown_s!, notified: after, held: false });
      }
      for (const section of [...new Set([...a.keys(), ...b.keys()])].sort()) {
        if (flushed.has(section)) continue;
        const before = a.get(section) ?? ZERO;
        const after = b.get(section) ?? ZERO;
        const running = cd.get(section);
        if (running) {
          if (before.stock !== after.stock || before.min_price !== after.min_price) running.held = true;
          continue;
        }
        const kinds = sectionChanges(before, after, item);
        for (const change_type of kinds) out.push({ item: item.label, step: index, section, change_type, before, after, held: false });
        if (kinds.length && (item.cooldown_s ?? 0) > 0) cd.set(section, { until: t + item.cooldown_s!, notified: after, held: false });
      }
    }
    read = now;
  });
  return out;
}

/** How a notification is recognised: item, section, kind, and stock and lowest price on both sides. */
export function notificationKey(itemId: number, section: string, changeType: string, before: { stock?: number | null; min_price?: number | null }, after: { stock?: number | null; min_price?: number | null }): string {
  const price = (v: number | null | undefined) => (v === null || v === undefined ? '-' : Number(v).toFixed(2));
  return `${itemId}|${section}|${changeType}|${before.stock ?? 0}→${after.stock ?? 0}|${price(before.min_price)}→${price(after.min_price)}`;
}
