// The ground truth of bench:alerts: what each item should be told, computed from the script and
// the documented rules (docs/monitoring.md "Change rules (exact)" and "Platform incidents",
// docs/watchlist.md "Cooldowns", docs/simulator.md for what the simulator does to an event),
// before anything runs and without the service's code. A second implementation on purpose:
// importing src/monitors would check the service against itself.
//
// What a poll reads is the script's inventory, except that a page that is not `ok` is no reading
// at all (the state stays). pf_07 reads every offer as resale. On pf_01 a failed data arm leaves
// the kinds it carries unknown (docs/monitoring.md, "A failed part is unknown, not zero"):
// without v1, resale and general admission; without v2, standard and platinum (resale and
// standing are still read from v1); both failed: no reading. An unknown kind keeps the listings
// last read of it, if the reading before knew it; otherwise it stays unknown. A kind unknown on
// either side of a comparison is left out of both. Items here use seat_quantity 1 and no row,
// price or average bounds, so blocks and rows never matter and one rule set fits every
// platform's shape.
//
// pf_06's `moves` (docs/simulator.md) change the simulator's own inventory during a read: each
// `insert_front` adds a lot of four to the first section entry, each `remove_front` sells the
// first lot there is. The reading after such a step is the moved inventory (what the platform
// then really has), never a mix of the pages before and after a move.
//
// Cooldown (per item and section, `cooldown_s` > 0; docs/watchlist.md "Cooldowns"): a
// notification starts a cooldown at the poll that found it; changes of the section (by the
// rules) until it ends are held, the first with the reading it was detected from (its unknown
// kinds too); at the first poll after the end, if a change was held, that reading is compared
// with the reading then by the same rules, kinds unknown on either side left out of both, and one
// notification per kind that passes is sent (starting a new cooldown), else nothing and the hold
// ends. The model's clock is the script's schedule (Step.atS); the runner checks that the run
// kept to it (runner.ts), so the outcome never hangs on exact poll timing.
//
// Platform incidents (docs/monitoring.md "Platform incidents"): when, of a platform's watched
// targets (with an item not paused), at least 5 and at least half answer not-found at once, the
// platform is failing: nothing is retired, and every item on the platform (those not paused:
// paused items have no member) is told `failing` once and `recovered` once.

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

export type Behaviour = 'ok' | 'blocked' | 'malformed' | 'error' | 'hang' | 'not_found';

/** pf_06: listings move between its pages during the next `reads` reads (docs/simulator.md `moves`). */
export interface Pf06Moves {
  move: 'insert_front' | 'remove_front';
  reads: number;
}

export interface Step {
  label: string;
  /** The whole inventory from this step on, as the control call sets it (absent: as before). */
  inventory?: Listing[];
  /** How the event's pages answer from this step on (absent: ok). */
  behaviour?: Behaviour;
  /** pf_01's data arms from this step on (absent: both ok). */
  arms?: { v1?: 'ok' | 'error'; v2?: 'ok' | 'error' };
  /** pf_06: listings moving between pages while they are read (the inventory is moved by them). */
  moves?: Pf06Moves;
  /** When the step starts, in seconds after the script's first step (required in scripts with a cooldown item). */
  atS?: number;
  /** No control call: time passes (a cooldown's end). */
  waitOnly?: boolean;
  /** The run's worker SIGKILL comes right after this step's control call (runner.ts). */
  killAfter?: boolean;
  /**
   * What this step observes spans the worker's SIGKILL only if the kill came before this second
   * of the script (a cooldown's end): the runner checks it and reports the step otherwise.
   */
  killBeforeS?: number;
}

export interface SectionState {
  stock: number;
  min_price: number | null;
}

/** What one successful poll knows of the event: its listings, and the kinds it does not know. */
export interface Reading {
  listings: Listing[];
  unknown: ReadonlySet<Kind>;
}

export interface ExpectedChange {
  type: 'notification';
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

export interface ExpectedIncident {
  type: 'platform_incident';
  item: string;
  /** The step of this script that opens (failing) or ends (recovered) it; null when this script's event did not fail. */
  step: number | null;
  state: 'failing' | 'recovered';
  held: false;
}

export type Expected = ExpectedChange | ExpectedIncident;

const ZERO: SectionState = { stock: 0, min_price: null };
const NONE: ReadonlySet<Kind> = new Set();

/** Rules 1 and 2 for these items: matching stock and lowest price per section (absent = none), kinds in `hidden` left out. */
export function viewOf(listings: readonly Listing[], item: ItemSpec, hidden: ReadonlySet<Kind> = NONE): Map<string, SectionState> {
  const view = new Map<string, SectionState>();
  const wanted = item.section?.toLowerCase() ?? null;
  for (const l of listings) {
    if (l.stock <= 0 || !item.kinds.includes(l.ticket_type) || hidden.has(l.ticket_type)) continue;
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

/** The kinds a pf_01 poll does not read with these arms (v1: resale and standing; v2: the seated kinds). */
export function armsUnknown(arms: Step['arms']): Kind[] {
  return [...(arms?.v1 === 'error' ? (['resale', 'general_admission'] as const) : []), ...(arms?.v2 === 'error' ? (['standard', 'platinum'] as const) : [])];
}

/** The simulator's inventory once pf_06's moves have run (docs/simulator.md): lots of four, moved at the front. */
export function afterMoves(inventory: readonly Listing[], moves: Pf06Moves | undefined): Listing[] {
  const out = inventory.map((l) => ({ ...l }));
  for (let i = 0; i < (moves?.reads ?? 0); i++) {
    if (moves!.move === 'insert_front') {
      if (out[0]) out[0].stock += 4;
    } else {
      const first = out.find((l) => l.stock > 0);
      if (first) first.stock = Math.max(0, first.stock - 4);
    }
  }
  return out;
}

/**
 * What a poll reads of `next` after `previous` (null: no reading before): null when the page
 * fails; on pf_01, the kinds a failed arm carries are unknown, each completed with what the
 * previous reading knew of it (and unknown still when it knew nothing).
 */
export function reading(previous: Reading | null, next: readonly Listing[], step: Pick<Step, 'behaviour' | 'arms'>, kindsRead: boolean): Reading | null {
  if ((step.behaviour ?? 'ok') !== 'ok') return null;
  if (step.arms?.v1 === 'error' && step.arms?.v2 === 'error') return null;
  const asRead = (ls: readonly Listing[]) => (kindsRead ? ls.map((l) => ({ ...l })) : ls.map((l) => ({ ...l, ticket_type: 'resale' as const })));
  const missed = new Set(kindsRead ? armsUnknown(step.arms) : []);
  const listings = asRead(next).filter((l) => !missed.has(l.ticket_type));
  const unknown = new Set<Kind>();
  for (const kind of missed) {
    if (previous && !previous.unknown.has(kind)) listings.push(...previous.listings.filter((l) => l.ticket_type === kind).map((l) => ({ ...l })));
    else unknown.add(kind);
  }
  return { listings, unknown };
}

const union = (a: ReadonlySet<Kind>, b: ReadonlySet<Kind>): ReadonlySet<Kind> => new Set([...a, ...b]);

interface Cooldown {
  /** The step whose notification started it. */
  from: number;
  until: number;
  /** The reading the first held change was detected from; null while nothing is held. */
  heldFrom: Reading | null;
}

/** The pages' answers and arms in force at the first poll (the initial control call's). */
export type Initial = Pick<Step, 'behaviour' | 'arms'>;

/**
 * A timing the expected outcome rests on: whether `step`'s change (or, for a wait step, its moment)
 * came inside the cooldown of `item` that step `from`'s notification started. Recorded only where
 * the other answer would change what is expected (something held, or the section changing).
 */
export interface CooldownDecision {
  item: string;
  section: string;
  from: number;
  step: number;
  inside: boolean;
  cooldownS: number;
}

/**
 * Every notification of a change the script should produce, item by item, in step order.
 * `decisions`, when given, receives each cooldown timing the outcome depends on (score.ts checks
 * them against when the steps really ran).
 */
export function expectations(
  initial: readonly Listing[],
  steps: readonly Step[],
  items: readonly ItemSpec[],
  kindsRead: boolean,
  initialPages: Initial = {},
  decisions?: CooldownDecision[],
): ExpectedChange[] {
  const timed = items.some((i) => (i.cooldown_s ?? 0) > 0);
  if (timed && steps.some((s) => s.atS === undefined)) throw new Error('a script with a cooldown item must give every step its time (atS)');
  const out: ExpectedChange[] = [];
  // The items' baseline: their first poll.
  let read = reading(null, initial, initialPages, kindsRead);
  if (read === null) throw new Error('a script must start with a readable event (every item needs its baseline)');
  let inventory: Listing[] = initial.map((l) => ({ ...l }));
  const cooldowns = new Map<string, Map<string, Cooldown>>(items.map((i) => [i.label, new Map()]));
  steps.forEach((step, index) => {
    if (step.inventory) inventory = afterMoves(step.inventory, step.moves);
    const now = step.waitOnly ? read! : reading(read, inventory, step, kindsRead);
    if (now === null) return;
    const t = step.atS ?? 0;
    const hidden = union(read!.unknown, now.unknown);
    for (const item of items) {
      if (item.muted || item.paused) continue;
      const a = viewOf(read!.listings, item, hidden);
      const b = viewOf(now.listings, item, hidden);
      const cd = cooldowns.get(item.label)!;
      const flushed = new Set<string>();
      // A cooldown that has ended: the held change, measured from the reading it was detected from.
      for (const [section, c] of cd) {
        const matters = c.heldFrom !== null || sectionChanges(a.get(section) ?? ZERO, b.get(section) ?? ZERO, item).length > 0;
        if (matters) decisions?.push({ item: item.label, section, from: c.from, step: index, inside: c.until > t, cooldownS: item.cooldown_s! });
        if (c.until > t) continue;
        cd.delete(section);
        if (c.heldFrom === null) continue;
        flushed.add(section);
        const both = union(c.heldFrom.unknown, now.unknown);
        const before = viewOf(c.heldFrom.listings, item, both).get(section) ?? ZERO;
        const after = viewOf(now.listings, item, both).get(section) ?? ZERO;
        const kinds = sectionChanges(before, after, item);
        for (const change_type of kinds) out.push({ type: 'notification', item: item.label, step: index, section, change_type, before, after, held: true });
        if (kinds.length) cd.set(section, { from: index, until: t + item.cooldown_s!, heldFrom: null });
      }
      for (const section of [...new Set([...a.keys(), ...b.keys()])].sort()) {
        if (flushed.has(section)) continue;
        const before = a.get(section) ?? ZERO;
        const after = b.get(section) ?? ZERO;
        const running = cd.get(section);
        const kinds = sectionChanges(before, after, item);
        if (running) {
          if (kinds.length && running.heldFrom === null) running.heldFrom = read!;
          continue;
        }
        for (const change_type of kinds) out.push({ type: 'notification', item: item.label, step: index, section, change_type, before, after, held: false });
        if (kinds.length && (item.cooldown_s ?? 0) > 0) cd.set(section, { from: index, until: t + item.cooldown_s!, heldFrom: null });
      }
    }
    read = now;
  });
  return out;
}

/** The documented incident rule's defaults (docs/monitoring.md: MONITOR_INCIDENT_MIN_TARGETS, MONITOR_INCIDENT_SHARE). */
export const INCIDENT_RULE = { minTargets: 5, share: 0.5 };

/** One target of a platform as the incident rule sees it: its items and its timed steps. */
export interface PlatformTarget {
  /** Names the target in errors. */
  name: string;
  items: readonly ItemSpec[];
  steps: readonly Step[];
}

/** When a target answers not-found, in script seconds: from a `not_found` step to the next step. */
function notFoundWindows(t: PlatformTarget): { from: number; to: number; fromStep: number; toStep: number | null }[] {
  const out: { from: number; to: number; fromStep: number; toStep: number | null }[] = [];
  t.steps.forEach((s, i) => {
    if (s.behaviour !== 'not_found') return;
    const next = t.steps.findIndex((n, j) => j > i && !n.waitOnly);
    const end = next >= 0 ? t.steps[next]!.atS : Infinity;
    if (s.atS === undefined || end === undefined) throw new Error(`${t.name}: a not-found step and the step that ends it need their times (atS)`);
    out.push({ from: s.atS, to: end, fromStep: i, toStep: next >= 0 ? next : null });
  });
  return out;
}

/**
 * The platform incident messages a platform's targets should produce, per target (in the
 * order given): every item not paused hears `failing` once and `recovered` once when, at some
 * moment, at least INCIDENT_RULE.minTargets watched targets and INCIDENT_RULE.share of them
 * answer not-found together; nothing otherwise. A target whose event failed has the messages on
 * the steps that began and ended its failure. Throws on a platform whose not-found windows would
 * open two incidents (the scripts keep to one).
 */
export function incidentExpectations(targets: readonly PlatformTarget[]): ExpectedIncident[][] {
  const watched = targets.filter((t) => t.items.some((i) => !i.paused));
  const windows = targets.map(notFoundWindows);
  const starts = [...new Set(windows.flat().map((w) => w.from))].sort((a, b) => a - b);
  const failingAt = (at: number) => targets.filter((t, i) => watched.includes(t) && windows[i]!.some((w) => w.from <= at && at < w.to)).length;
  const opens = starts.filter((at) => {
    const n = failingAt(at);
    return n >= INCIDENT_RULE.minTargets && n / watched.length >= INCIDENT_RULE.share;
  });
  if (opens.length === 0) return targets.map(() => []);
  if (windows.some((w) => w.length > 1)) throw new Error('bench defect: one not-found window per target (the incident model knows one incident)');
  return targets.map((t, i) => {
    const w = windows[i]![0];
    return t.items
      .filter((item) => !item.paused)
      .flatMap((item): ExpectedIncident[] => [
        { type: 'platform_incident', item: item.label, step: w ? w.fromStep : null, state: 'failing', held: false },
        { type: 'platform_incident', item: item.label, step: w ? w.toStep : null, state: 'recovered', held: false },
      ]);
  });
}

const price = (v: number | null | undefined) => (v === null || v === undefined ? '-' : Number(v).toFixed(2));

/** How a notification is recognised: item, section, kind, and stock and lowest price on both sides. */
export function notificationKey(itemId: number, section: string, changeType: string, before: { stock?: number | null; min_price?: number | null }, after: { stock?: number | null; min_price?: number | null }): string {
  return `${itemId}|${section}|${changeType}|${before.stock ?? 0}→${after.stock ?? 0}|${price(before.min_price)}→${price(after.min_price)}`;
}

/** How a platform incident message is recognised: item and state. */
export function incidentKey(itemId: number, state: string): string {
  return `${itemId}|platform_incident|${state}`;
}

/** A target_retired message (never expected here: the incident holds retirement). */
export function retiredKey(itemId: number): string {
  return `${itemId}|target_retired`;
}

/** The key of an expected message for the item created with `itemId`. */
export function expectedKey(itemId: number, e: Expected): string {
  return e.type === 'notification' ? notificationKey(itemId, e.section, e.change_type, e.before, e.after) : incidentKey(itemId, e.state);
}
