// The scripted inventory histories of bench:alerts, per platform: one simulator event per
// scenario, its items, and its steps, each step a control call whose expected notifications
// model.ts writes down before the run. Every step changes one thing, and steps are observed one
// by one (runner.ts waits for two polls after each), so a hold and its release, or a delisting and
// its relisting, are two changes the service must see apart.
//
// - flapping (every platform): cart holds released, price down and up, a listing delisted and
//   listed again, a section appearing and selling out, then pages blocked / malformed / failing /
//   hanging between identical inventories, and one last change that must still notify; a muted
//   and a paused twin of the main item hear nothing.
// - cooldown (every platform): a notified section changing twice within the cooldown (one
//   notification at its end, before = last notified), and one returning to the notified state
//   before the end (nothing); a twin without cooldown hears every step. Timed steps.
// - mixed kinds (every platform whose offers carry a kind: not pf_07): standard, platinum,
//   resale and general admission under one section name, one item per kind.
// - arms (pf_01): each data arm failing and recovering with nothing changed (nothing), and
//   with a change made while it was down (notified once, when read again).
//
// `phases[0]` runs before the worker's SIGKILL, `phases[1]` after it: the first step of every
// phase-2 script is made just before the kill (runner.ts).
import type { AlertPlatform, Role } from './platforms.ts';
import type { ItemSpec, Kind, Listing, Step } from './model.ts';

export interface Script {
  platform: AlertPlatform;
  role: Role;
  title: string;
  /** What part of issue 24 this waits on, when it does (the report keeps its failures apart). */
  pending: string | null;
  region: string;
  eventId: string;
  key: string;
  initial: Listing[];
  items: ItemSpec[];
  phases: [Step[], Step[]];
}

export interface ScriptOptions {
  /** MONITOR_INTERVAL_MS in seconds: timed steps are spaced in intervals. */
  intervalS: number;
  cooldownS: number;
}

const L = (name: string, price: number, stock: number, ticket_type: Kind = 'standard'): Listing => ({ name, price, stock, ticket_type });

/** The inventory with the listings `match` finds replaced by `change` (or removed when it returns null). */
function edit(inventory: readonly Listing[], match: (l: Listing) => boolean, change: (l: Listing) => Listing | null): Listing[] {
  return inventory.flatMap((l) => {
    if (!match(l)) return [l];
    const next = change(l);
    return next ? [next] : [];
  });
}

/** Builds a script's steps, each from the inventory the previous one left. */
class Steps {
  private inventory: Listing[];
  readonly steps: Step[] = [];
  constructor(initial: readonly Listing[]) {
    this.inventory = [...initial];
  }
  change(label: string, next: (inv: Listing[]) => Listing[], extra: Omit<Step, 'label' | 'inventory'> = {}): this {
    this.inventory = next(this.inventory);
    this.steps.push({ label, inventory: this.inventory, ...extra });
    return this;
  }
  stock(label: string, name: string, kind: Kind, stock: number, extra: Omit<Step, 'label' | 'inventory'> = {}): this {
    return this.change(label, (inv) => edit(inv, (l) => l.name === name && l.ticket_type === kind, (l) => ({ ...l, stock })), extra);
  }
  price(label: string, name: string, kind: Kind, price: number, extra: Omit<Step, 'label' | 'inventory'> = {}): this {
    return this.change(label, (inv) => edit(inv, (l) => l.name === name && l.ticket_type === kind, (l) => ({ ...l, price })), extra);
  }
  /** Same inventory, pages answering otherwise. */
  pages(label: string, extra: Omit<Step, 'label' | 'inventory'>): this {
    return this.change(label, (inv) => inv, extra);
  }
  wait(label: string, atS: number): this {
    this.steps.push({ label, waitOnly: true, atS });
    return this;
  }
  take(): Step[] {
    return this.steps.splice(0);
  }
}

function flapping(main: Kind): Omit<Script, 'platform' | 'role' | 'region' | 'eventId' | 'key'> {
  const initial = [L('Floor', 100, 10, main), L('Lower', 60, 20, main), L('Upper', 40, 30, main), L('Upper', 35, 4, main)];
  const all = [main];
  const s = new Steps(initial);
  s.stock('cart hold: Floor 10 → 6', 'Floor', main, 6)
    .stock('hold released: Floor 6 → 10', 'Floor', main, 10)
    .price('price down: Lower 60 → 55', 'Lower', main, 55)
    .price('price up: Lower 55 → 58', 'Lower', main, 58)
    .change('relisting: Upper 4 @ 35 delisted', (inv) => edit(inv, (l) => l.name === 'Upper' && l.price === 35, () => null))
    .change('relisting: Upper 4 @ 35 listed again', (inv) => [...inv, L('Upper', 35, 4, main)]);
  const before = s.take();
  s.change('section appears: Balcony 8 @ 30', (inv) => [...inv, L('Balcony', 30, 8, main)])
    .stock('section sells out: Balcony 8 → 0', 'Balcony', main, 0)
    .pages('page blocked (429, Retry-After 1), inventory unchanged', { behaviour: 'blocked' })
    .pages('page back, inventory unchanged', {})
    .pages('page malformed, inventory unchanged', { behaviour: 'malformed' })
    .pages('page back, inventory unchanged', {})
    .pages('page failing (503), inventory unchanged', { behaviour: 'error' })
    .pages('page back, inventory unchanged', {})
    .pages('page hangs, inventory unchanged', { behaviour: 'hang' })
    .pages('page back, inventory unchanged', {})
    .stock('after the faults: Floor 10 → 12', 'Floor', main, 12);
  return {
    title: 'flapping, faults, mute, pause',
    pending: null,
    initial,
    items: [
      { label: 'all-changes', change_type: null, kinds: all },
      { label: 'floor-stock', change_type: 'stock_increase', section: 'Floor', kinds: all },
      { label: 'muted', change_type: null, kinds: all, muted: true },
      { label: 'paused', change_type: null, kinds: all, paused: true },
    ],
    phases: [before, s.take()],
  };
}

function cooldown(main: Kind, o: ScriptOptions): Omit<Script, 'platform' | 'role' | 'region' | 'eventId' | 'key'> {
  const u = o.intervalS;
  const c = o.cooldownS;
  const spacing = 3 * u;
  const initial = [L('Floor', 100, 10, main), L('Lower', 60, 10, main)];
  const s = new Steps(initial);
  const t1 = c + 6 * u;
  s.stock('Floor 10 → 12: notified, cooldown starts', 'Floor', main, 12, { atS: 0 })
    .stock('Floor 12 → 14 within the cooldown: held', 'Floor', main, 14, { atS: spacing })
    .stock('Floor 14 → 16 within the cooldown: held', 'Floor', main, 16, { atS: 2 * spacing })
    .wait('cooldown over: one notification, 12 → 16', c + 5 * u)
    .stock('Lower 10 → 12: notified, cooldown starts', 'Lower', main, 12, { atS: t1 })
    .stock('Lower 12 → 15 within the cooldown: held', 'Lower', main, 15, { atS: t1 + spacing })
    .stock('Lower 15 → 12 within the cooldown: back to the state notified', 'Lower', main, 12, { atS: t1 + 2 * spacing })
    .wait('cooldown over: nothing', t1 + c + 5 * u)
    .stock('Lower 12 → 14 after the cooldown, nothing held: notified as usual', 'Lower', main, 14, { atS: t1 + c + 8 * u });
  const all = [main];
  return {
    title: `cooldown (${c} s)`,
    pending: 'the cooldown in the monitor (issue 24)',
    initial,
    items: [
      { label: 'no-cooldown', change_type: 'stock_increase', kinds: all },
      { label: 'floor-cooldown', change_type: 'stock_increase', section: 'Floor', kinds: all, cooldown_s: c },
      { label: 'lower-cooldown', change_type: 'stock_increase', section: 'Lower', kinds: all, cooldown_s: c },
    ],
    phases: [s.take(), []],
  };
}

function mixed(p: AlertPlatform): Omit<Script, 'platform' | 'role' | 'region' | 'eventId' | 'key'> {
  const initial = [L('Floor', 100, 20, 'standard'), L('Floor', 200, 2, 'platinum'), L('Floor', 120, 4, 'resale'), L('Floor', 60, 10, 'general_admission')];
  const s = new Steps(initial);
  // On pf_01 each step changes one data arm only (seats: v2; resale and standing: v1), so a
  // poll that reads one arm before the control call and the other after reads one state.
  s.stock('resale 4 → 12 (seats unchanged)', 'Floor', 'resale', 12)
    .stock('cart hold: standard 20 → 16', 'Floor', 'standard', 16)
    .stock('hold released: standard 16 → 20', 'Floor', 'standard', 20)
    .stock('general admission 10 → 15', 'Floor', 'general_admission', 15)
    .price('resale price 120 → 90', 'Floor', 'resale', 90);
  const before = s.take();
  s.stock('platinum 2 → 4', 'Floor', 'platinum', 4)
    .stock('resale sells out: 12 → 0', 'Floor', 'resale', 0)
    .change('resale listed again: 6 @ 95', (inv) => edit(inv, (l) => l.ticket_type === 'resale', () => L('Floor', 95, 6, 'resale')));
  return {
    title: 'mixed ticket kinds in one section',
    pending: p.platform === 'pf_01' ? 'pf_01 resale and standing tickets in seated sections (issue 24)' : null,
    initial,
    items: [
      { label: 'resale-only', change_type: null, kinds: ['resale'] },
      { label: 'standard-only', change_type: 'stock_increase', kinds: ['standard'] },
      { label: 'standing-only', change_type: 'stock_increase', kinds: ['general_admission'] },
      { label: 'platinum-only', change_type: 'stock_increase', kinds: ['platinum'] },
    ],
    phases: [before, s.take()],
  };
}

function arms(): Omit<Script, 'platform' | 'role' | 'region' | 'eventId' | 'key'> {
  const initial = [L('Floor', 100, 20, 'standard'), L('Resale Block', 80, 8, 'resale'), L('Standing', 40, 50, 'general_admission')];
  const s = new Steps(initial);
  const v1Down = { arms: { v1: 'error' as const } };
  const v2Down = { arms: { v2: 'error' as const } };
  s.pages('v2 (seats) fails, nothing changed', v2Down)
    .pages('v2 back, nothing changed', {})
    .pages('v1 (resale, standing) fails, nothing changed', v1Down)
    .pages('v1 back, nothing changed', {})
    .stock('v1 fails; meanwhile resale 8 → 12', 'Resale Block', 'resale', 12, v1Down)
    .pages('v1 back: resale 8 → 12 read', {});
  const before = s.take();
  s.stock('v2 fails; meanwhile Floor 20 → 24', 'Floor', 'standard', 24, v2Down)
    .pages('v2 back: Floor 20 → 24 read', {})
    .price('v1 fails; meanwhile Standing price 40 → 35', 'Standing', 'general_admission', 35, v1Down)
    .pages('v1 back: Standing 40 → 35 read', {});
  return {
    title: 'data arms failing and recovering',
    pending: null,
    initial,
    items: [
      { label: 'seats', change_type: null, kinds: ['standard'] },
      { label: 'resale-standing', change_type: null, kinds: ['resale', 'general_admission'] },
    ],
    phases: [before, s.take()],
  };
}

/** Every script of a platform; `next` numbers the simulator events across the run. */
export function scriptsFor(p: AlertPlatform, o: ScriptOptions, next: () => number): Script[] {
  const main: Kind = p.kinds ? 'standard' : 'resale';
  const parts: [Role, Omit<Script, 'platform' | 'role' | 'region' | 'eventId' | 'key'>][] = [
    ['flapping', flapping(main)],
    ['cooldown', cooldown(main, o)],
  ];
  if (p.kinds) parts.push(['mixed', mixed(p)]);
  if (p.platform === 'pf_01') parts.push(['arms', arms()]);
  return parts.map(([role, part]) => {
    const region = p.region(role);
    const { eventId, key } = p.event(next(), region);
    return { platform: p, role, region, eventId, key, ...part };
  });
}

/** Every step of a script in run order (the model's and the report's step indexes). */
export function allSteps(s: Script): Step[] {
  return [...s.phases[0], ...s.phases[1]];
}
