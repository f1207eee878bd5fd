// The scripted inventory histories of bench:alerts, per platform: one simulator event per
// scenario, its items, and its steps, each step a control call whose expected notifications
// model.ts writes down before the run. Every step changes one thing (or, in the cooldown script,
// independent sections, each its own cooldown), and steps are observed one by one (runner.ts
// waits for two polls after each), so a hold and its release, or a delisting and its relisting,
// are two changes the service must see apart.
//
// - flapping (every platform): cart holds released, price down and up, a listing delisted and
//   listed again, a section appearing and selling out, then pages blocked / malformed / failing /
//   hanging between identical inventories, and one last change that must still notify; a muted
//   and a paused twin of the main item hear nothing.
// - cooldown (every platform): a notified section changing twice within the cooldown (one
//   notification at its end, from the state the held change was detected from), one falling and
//   rising again (the rise sent at the end though below what was notified), and one returning
//   to the notified state before the end (nothing); a twin without cooldown hears every step.
//   Timed steps.
// - mixed kinds (every platform whose offers carry a kind: not pf_07): standard, platinum,
//   resale and general admission under one section name, one item per kind.
// - arms (pf_01): the seats first read while v2 was down (unknown at the baseline: nothing when
//   read), each data arm failing and recovering with nothing changed (nothing), with a change made
//   while it was down (notified once, when read again), and v1's kinds changing while v2 is down
//   (read at once, beside the seats last read).
// - cooldown across the kill (every platform, in the cooldown script): a section notified and
//   changed in phase 1 with a cooldown that ends after the worker's SIGKILL: released once, by
//   the new worker (the runner reports the step if the kill came after the cooldown's end).
// - platform incident (every platform): five targets or more, at least half the platform's,
//   answering 404 together for three retirement times (MONITOR_RETIRE_AFTER_MS, set short), then
//   answering again and changing: every item on the platform hears `failing` once and
//   `recovered` once, none is retired, and the change after the recovery is notified.
// - moving pages (pf_06): listings moving between its two pages while they are read (the
//   simulator's `moves`): each change notified once, no false rise from a listing read twice or
//   missed.
//
// `phases[0]` runs before the worker's SIGKILL, `phases[1]` after it: the first step of every
// phase-2 script is made just before the kill (runner.ts).
import { requestsToSee, type AlertPlatform, type Role } from './platforms.ts';
import { afterMoves, type Initial, type ItemSpec, type Kind, type Listing, type Pf06Moves, type Step } from './model.ts';

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
  /** How the event answers when the items take their baseline (absent: ok). */
  initialPages?: Initial;
  /** Simulator requests one successful poll makes, where not the platform's (pf_06 with two pages). */
  requestsPerPoll?: number;
  items: ItemSpec[];
  phases: [Step[], Step[]];
}

type Part = Omit<Script, 'platform' | 'role' | 'region' | 'eventId' | 'key'>;

export interface ScriptOptions {
  /** MONITOR_INTERVAL_MS in seconds: timed steps are spaced in intervals. */
  intervalS: number;
  cooldownS: number;
  /** The cooldown that spans the worker's SIGKILL (it must end after phase 2 has begun). */
  killCooldownS: number;
  /** MONITOR_RETIRE_AFTER_MS in seconds: the incident's 404s last three times this. */
  retireS: number;
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
  /** Several sections' stock of one kind at once (independent sections: one step). */
  stocks(label: string, kind: Kind, stock: Record<string, number>, extra: Omit<Step, 'label' | 'inventory'> = {}): this {
    return this.change(label, (inv) => edit(inv, (l) => l.ticket_type === kind && l.name in stock, (l) => ({ ...l, stock: stock[l.name]! })), extra);
  }
  price(label: string, name: string, kind: Kind, price: number, extra: Omit<Step, 'label' | 'inventory'> = {}): this {
    return this.change(label, (inv) => edit(inv, (l) => l.name === name && l.ticket_type === kind, (l) => ({ ...l, price })), extra);
  }
  /** Same inventory, pages answering otherwise. */
  pages(label: string, extra: Omit<Step, 'label' | 'inventory'>): this {
    return this.change(label, (inv) => inv, extra);
  }
  /** pf_06: the same inventory set again, its listings moving between pages during reads; the moved inventory from then on. */
  moves(label: string, moves: Pf06Moves, extra: Omit<Step, 'label' | 'inventory' | 'moves'> = {}): this {
    this.steps.push({ label, inventory: this.inventory, moves, ...extra });
    this.inventory = afterMoves(this.inventory, moves);
    return this;
  }
  wait(label: string, atS: number, extra: Omit<Step, 'label' | 'waitOnly' | 'atS'> = {}): this {
    this.steps.push({ label, waitOnly: true, atS, ...extra });
    return this;
  }
  take(): Step[] {
    return this.steps.splice(0);
  }
}

function flapping(main: Kind): Part {
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

function cooldown(main: Kind, o: ScriptOptions, perPoll: number): Part {
  const u = o.intervalS;
  const k = o.killCooldownS;
  // One interval more than the polls a step takes to be seen (the runner waits for them before the
  // next step): three intervals where a poll is one request, four on pf_01 (three polls of two
  // requests), whose steps at three started up to 1.8 s late on a quiet machine.
  const spacing = (Math.ceil(requestsToSee(perPoll) / perPoll) + 1) * u;
  // The held steps (at one and two spacings) stay four intervals inside the cooldown.
  const c = Math.max(o.cooldownS, 2 * spacing + 4 * u);
  const initial = [L('Floor', 100, 10, main), L('Lower', 60, 10, main), L('Upper', 40, 10, main), L('Balcony', 30, 10, main)];
  const s = new Steps(initial);
  const t1 = c + 6 * u;
  // Floor, Upper and Balcony change in the same steps (each is its own section, and its own
  // cooldown): steps stay `spacing` apart, so each is seen apart, as the model's clock assumes.
  s.stocks(`Floor, Upper, Balcony 10 → 12: each notified, cooldowns start (Balcony's ${k} s: it ends after the worker's SIGKILL)`, main, { Floor: 12, Upper: 12, Balcony: 12 }, { atS: 0 })
    .stocks('within the cooldowns: Floor 12 → 14 held; Upper 12 → 2, a fall, nothing held; Balcony 12 → 14 held, before the SIGKILL', main, { Floor: 14, Upper: 2, Balcony: 14 }, { atS: spacing })
    .stocks('within the cooldowns: Floor 14 → 16 held already; Upper 2 → 5 held, detected from 2', main, { Floor: 16, Upper: 5 }, { atS: 2 * spacing })
    .wait('cooldowns over: Floor 12 → 16, Upper 2 → 5 (below the 12 notified)', c + 5 * u)
    .stock('Lower 10 → 12: notified, cooldown starts', 'Lower', main, 12, { atS: t1 })
    .stock('Lower 12 → 15 within the cooldown: held', 'Lower', main, 15, { atS: t1 + spacing })
    .stock('Lower 15 → 12 within the cooldown: back to the state notified', 'Lower', main, 12, { atS: t1 + 2 * spacing })
    .wait('cooldown over: nothing', t1 + c + 5 * u)
    .stock('Lower 12 → 14 after the cooldown, nothing held: notified as usual', 'Lower', main, 14, { atS: t1 + c + 8 * u });
  const before = s.take();
  // Phase 2 (after the SIGKILL): the hold made in phase 1 ends; the new worker releases it once.
  s.wait("Balcony's cooldown over, after the SIGKILL: Balcony 12 → 14 released once", k + 3 * u, { killBeforeS: k });
  const all = [main];
  return {
    title: `cooldown (${c} s; ${k} s across the SIGKILL)`,
    pending: null,
    initial,
    items: [
      { label: 'no-cooldown', change_type: 'stock_increase', kinds: all },
      { label: 'floor-cooldown', change_type: 'stock_increase', section: 'Floor', kinds: all, cooldown_s: c },
      { label: 'lower-cooldown', change_type: 'stock_increase', section: 'Lower', kinds: all, cooldown_s: c },
      { label: 'upper-cooldown', change_type: 'stock_increase', section: 'Upper', kinds: all, cooldown_s: c },
      { label: 'balcony-cooldown', change_type: 'stock_increase', section: 'Balcony', kinds: all, cooldown_s: k },
    ],
    phases: [before, s.take()],
  };
}

function mixed(p: AlertPlatform): Part {
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

function arms(): Part {
  // Floor holds seats (v2) and a resale lot (v1) under one name: an item on both kinds compares
  // the seats as last read with the resale lot as read now while v2 is down.
  const initial = [L('Floor', 100, 20, 'standard'), L('Floor', 80, 4, 'resale'), L('Resale Block', 80, 8, 'resale'), L('Standing', 40, 50, 'general_admission')];
  const s = new Steps(initial);
  const v1Down = { arms: { v1: 'error' as const } };
  const v2Down = { arms: { v2: 'error' as const } };
  // The items take their baseline while v2 is down: standard and platinum unknown, not absent.
  s.pages('v2 back: the seats read for the first time (unknown at the baseline): nothing', {})
    .pages('v2 (seats) fails, nothing changed', v2Down)
    .pages('v2 back, nothing changed', {})
    .pages('v1 (resale, standing) fails, nothing changed', v1Down)
    .pages('v1 back, nothing changed', {})
    .stock('v1 fails; meanwhile resale 8 → 12', 'Resale Block', 'resale', 12, v1Down)
    .pages('v1 back: resale 8 → 12 read', {});
  const before = s.take();
  s.stock('v2 fails; meanwhile Floor 20 → 24', 'Floor', 'standard', 24, v2Down)
    .pages('v2 back: Floor 20 → 24 read', {})
    .stock('v2 fails; resale 12 → 16, read from v1 at once', 'Resale Block', 'resale', 16, v2Down)
    .stock('v2 still down; resale 16 → 18, read at once', 'Resale Block', 'resale', 18, v2Down)
    .price('v2 still down; Floor resale 80 → 120, read at once: Floor lowest 80 → 100 beside the seats as last read', 'Floor', 'resale', 120, v2Down)
    .pages('v2 back, nothing changed', {})
    .price('v1 fails; meanwhile Standing price 40 → 35', 'Standing', 'general_admission', 35, v1Down)
    .pages('v1 back: Standing 40 → 35 read', {});
  return {
    title: 'data arms failing and recovering',
    pending: null,
    initial,
    initialPages: v2Down,
    items: [
      { label: 'seats', change_type: null, kinds: ['standard'] },
      { label: 'resale-standing', change_type: null, kinds: ['resale', 'general_admission'] },
      { label: 'floor-all', change_type: null, section: 'Floor', kinds: ['standard', 'resale'] },
    ],
    phases: [before, s.take()],
  };
}

/**
 * One of the platform's incident targets: its event answers 404 from the start of phase 1 for
 * three retirement times, together with the others', then answers again as before, then changes.
 */
function incident(main: Kind, o: ScriptOptions, n: number, of: number): Part {
  const initial = [L('Floor', 100, 10, main), L('Lower', 60, 20, main)];
  const s = new Steps(initial);
  s.pages(`404 for every incident event (${of} of them) for ${3 * o.retireS} s, three retirement times`, { behaviour: 'not_found', atS: 0 })
    .pages('the platform answers again, inventory unchanged', { atS: 3 * o.retireS })
    .stock('after the recovery: Floor 10 → 12, notified', 'Floor', main, 12);
  return {
    title: `platform incident: ${of} events 404 for ${3 * o.retireS} s`,
    pending: null,
    initial,
    items: [{ label: `watch-${n}`, change_type: null, kinds: [main] }],
    phases: [s.take(), []],
  };
}

/** pf_06 pages of 50 listings of up to four tickets: how many a read asks for (docs/simulator.md). */
function pf06Pages(inventory: readonly Listing[]): number {
  return Math.max(1, Math.ceil(inventory.reduce((n, l) => n + Math.ceil(l.stock / 4), 0) / 50));
}

function moving(): Part {
  // 80 listings: page 1 holds Floor's 10 and Lower's first 40, page 2 the rest. A lot added in
  // front pushes a Lower listing onto page 2 as well (read twice, if counted by page); one sold
  // in front pulls one onto page 1, already read (missed). Either would read as a change of
  // Lower, and the next read as its reversal: a false stock_increase.
  const initial = [L('Floor', 100, 40), L('Lower', 60, 240), L('Upper', 40, 40)];
  const s = new Steps(initial);
  s.moves('a lot added in front during a read (insert_front, 1 read): Floor 40 → 44, read once more', { move: 'insert_front', reads: 1 })
    .moves('the first lot sold during a read (remove_front, 1 read): Floor 44 → 40, a fall: nothing', { move: 'remove_front', reads: 1 })
    .stock('pages steady: Lower 240 → 244', 'Lower', 'standard', 244);
  const before = s.take();
  s.moves('two reads in a row disagree (insert_front, 2 reads): that poll fails; the next reads Floor 40 → 48', { move: 'insert_front', reads: 2 })
    .moves('the first lot sold during two reads (remove_front, 2 reads): Floor 48 → 40, a fall: nothing', { move: 'remove_front', reads: 2 })
    .stock('pages steady: Upper 40 → 44', 'Upper', 'standard', 44);
  return {
    title: 'pf_06 listings moving between pages',
    pending: null,
    initial,
    requestsPerPoll: pf06Pages(initial),
    items: [
      { label: 'all-changes', change_type: null, kinds: ['standard'] },
      { label: 'lower-stock', change_type: 'stock_increase', section: 'Lower', kinds: ['standard'] },
    ],
    phases: [before, s.take()],
  };
}

/** Every script of a platform; `next` numbers the simulator events across the run. */
export function scriptsFor(p: AlertPlatform, o: ScriptOptions, next: () => number): Script[] {
  const main: Kind = p.kinds ? 'standard' : 'resale';
  const parts: [Role, Part][] = [
    ['flapping', flapping(main)],
    ['cooldown', cooldown(main, o, p.requestsPerPoll)],
  ];
  if (p.kinds) parts.push(['mixed', mixed(p)]);
  if (p.platform === 'pf_01') parts.push(['arms', arms()]);
  if (p.platform === 'pf_06') parts.push(['moves', moving()]);
  // The incident needs at least 5 failing targets and half the platform's (docs/monitoring.md).
  const failing = Math.max(5, parts.length);
  for (let n = 1; n <= failing; n++) parts.push(['incident', incident(main, o, n, failing)]);
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
