// Which due target of a shard gets the next request slot (issue 25). A platform's request budget
// is shared between the accounts that watch its targets, not first come, first served: one
// account's 400 targets cannot push another account's 3 to the back of the queue.
//
// Start-time fair queueing over accounts. Each account has a service counter; a poll of a target
// watched by k accounts charges each of them 1/k (a shared target counts once, for all its
// watchers). The next slot goes to the due target whose least-served watcher has been served
// least; among equals, to the one due first. An account that starts waiting (it had nothing due
// at the previous choice) starts at the service level of the moment, so time spent with nothing
// due is not saved up as credit against the others.
//
// Shards split an account's targets unevenly (2 of its 20 here, 8 there), and each shard shares
// its own budget. So that an account's service adds up to the same over the platform whatever the
// split, a shard weighs each account by the share of its targets on the platform that the shard
// holds (sync's `weights`): a poll charges 1/(k × weight). With equal accounts the budget then
// goes evenly over every target, and a shortfall stretches every target's interval alike (issue
// 27: too few healthy proxies), while a small account keeps its place beside a large one.
//
// Polls in flight are shared too. A shard runs at most `maxInFlight` polls at once, and the last
// quarter of those places is kept for accounts that have no poll in flight: an account whose
// target falls due never waits behind another account's slow polls. The other places go by the
// same order as the slots, so accounts with slow polls share them as their polls end.
//
// An account's priorities order its own targets (issue 40): the slot goes to the account chosen
// as above, and among that account's due targets to the one it gave the highest `priority` (the
// highest of its items on the target), the earliest due among equals. So when the budget runs
// short, an account's high-priority targets keep their interval and its others stretch, while
// what the account receives is unchanged: priorities never move a slot from one account to
// another. A target shared by two accounts ranks by each one's own priority when that one's turn
// comes. Lower-priority targets wait as long as higher ones of the same account are due.
//
// Pure: the poll loop (activities/poll-shard.ts) calls pick() when the pacer's next slot is due,
// then started() and finished() around the poll. Tested in test/monitors/fair-share.test.ts
// against a fair share the test computes itself.

/** `fair`: as above. `due`: the earliest due first, as before issue 25 (kept to compare against). */
export const POLL_ORDERS = ['fair', 'due'] as const;
export type PollOrder = (typeof POLL_ORDERS)[number];

export interface FairShareSettings {
  /** Polls of the shard in flight at once. */
  maxInFlight: number;
  order?: PollOrder;
}

interface Account {
  /** Service received: the sum of 1/k over the polls started of targets it watches with k-1 others. */
  served: number;
  /** Polls in flight of targets it watches. */
  inFlight: number;
  /** The last pick() that found one of its targets due. */
  seen: number;
}

const NOBODY: readonly number[] = [];

export class FairShare {
  readonly maxInFlight: number;
  /** Places only an account with no poll in flight may take. */
  readonly reserved: number;
  readonly order: PollOrder;
  private readonly accounts = new Map<number, Account>();
  private watchers: ReadonlyMap<string, readonly number[]> = new Map();
  /** Each account's share (0..1] of its targets on the platform that are in this shard; 1 when not given. */
  private weights: ReadonlyMap<number, number> = new Map();
  /** Per target, each watcher's priority on it (aligned with `watchers`); 0 when not given. */
  private priorities: ReadonlyMap<string, readonly number[]> = new Map();
  /** Accounts whose targets in the shard do not all have one priority: only theirs are ranked. */
  private ranked: ReadonlySet<number> = new Set();
  /** The accounts each poll in flight was charged to (its watchers when it started). */
  private readonly running = new Map<string, readonly number[]>();
  /** The service level of the last choice: where an account that starts waiting begins. */
  private level = 0;
  private round = 0;
  /** Polls in flight. */
  inFlight = 0;

  constructor(settings: FairShareSettings) {
    if (!(settings.maxInFlight >= 1)) throw new RangeError(`maxInFlight must be at least 1, not ${settings.maxInFlight}`);
    this.maxInFlight = settings.maxInFlight;
    this.reserved = Math.floor(settings.maxInFlight / 4);
    this.order = settings.order ?? 'fair';
  }

  /**
   * The accounts watching each target of the shard, optionally each account's share of its
   * platform's targets that are in this shard, and each watcher's priority on each target (an
   * array aligned with the target's watchers). Each replaces the previous map.
   */
  sync(
    watchers: ReadonlyMap<string, readonly number[]>,
    weights: ReadonlyMap<number, number> = new Map(),
    priorities: ReadonlyMap<string, readonly number[]> = new Map(),
  ): void {
    this.watchers = watchers;
    this.weights = weights;
    this.priorities = priorities;
    const first = new Map<number, number>();
    const ranked = new Set<number>();
    for (const [key, ids] of watchers) {
      const ps = priorities.get(key);
      ids.forEach((id, i) => {
        const p = ps?.[i] ?? 0;
        const seen = first.get(id);
        if (seen === undefined) first.set(id, p);
        else if (seen !== p) ranked.add(id);
      });
    }
    this.ranked = ranked;
    const live = new Set<number>();
    for (const ids of watchers.values()) for (const id of ids) live.add(id);
    for (const [id, a] of this.accounts) if (!live.has(id) && a.inFlight === 0) this.accounts.delete(id);
  }

  /**
   * The index in `due` (targets due and not in flight, earliest due first) of the one to poll
   * next, or -1 when none may start now (the shard's or every waiting account's polls in flight
   * are at their bound; a finished poll makes room).
   */
  pick(due: readonly { key: string }[]): number {
    if (due.length === 0 || this.inFlight >= this.maxInFlight) return -1;
    if (this.order === 'due') return 0;
    const round = ++this.round;
    for (const t of due) {
      for (const id of this.watchersOf(t.key)) {
        const a = this.account(id);
        if (a.seen === round) continue;
        // Not waiting at the previous choice: no credit for the time it had nothing due.
        if (a.seen !== round - 1 && a.served < this.level) a.served = this.level;
        a.seen = round;
      }
    }
    // An account with polls in flight may start another only below the reserved places.
    const unreserved = this.inFlight < this.maxInFlight - this.reserved;
    let best = -1;
    let bestServed = Infinity;
    let chosen = -1;
    for (let i = 0; i < due.length; i++) {
      const ids = this.watchersOf(due[i]!.key);
      let served = ids.length === 0 ? this.level : Infinity;
      let who = -1;
      for (const id of ids) {
        const a = this.accounts.get(id)!;
        if ((unreserved || a.inFlight === 0) && a.served < served) {
          served = a.served;
          who = id;
        }
      }
      if (served < bestServed) {
        best = i;
        bestServed = served;
        chosen = who;
      }
    }
    if (best >= 0 && bestServed > this.level) this.level = bestServed;
    return this.ranked.has(chosen) ? this.highestOf(chosen, due, best) : best;
  }

  /**
   * The index of `account`'s highest-priority target in `due`, the earliest due among equals.
   * None of its targets comes before `from`: one would have been the account's first, and chosen.
   */
  private highestOf(account: number, due: readonly { key: string }[], from: number): number {
    let best = from;
    let top = this.priorityOf(account, due[from]!.key);
    for (let i = from + 1; i < due.length; i++) {
      const p = this.priorityOf(account, due[i]!.key);
      if (p > top) {
        best = i;
        top = p;
      }
    }
    return best;
  }

  /** `account`'s priority on `key`; -Infinity when it does not watch it. */
  private priorityOf(account: number, key: string): number {
    const i = this.watchersOf(key).indexOf(account);
    return i < 0 ? -Infinity : (this.priorities.get(key)?.[i] ?? 0);
  }

  /** A poll of `key` starts: its watchers are charged 1/k each, over their weight. */
  started(key: string): void {
    const ids = this.watchersOf(key);
    this.running.set(key, ids);
    this.inFlight++;
    for (const id of ids) {
      const a = this.account(id);
      const weight = this.weights.get(id) ?? 1;
      a.served += 1 / (ids.length * (weight > 0 ? weight : 1));
      a.inFlight++;
    }
  }

  /** The poll of `key` ended (however it ended). */
  finished(key: string): void {
    const ids = this.running.get(key);
    if (ids === undefined) return;
    this.running.delete(key);
    this.inFlight--;
    for (const id of ids) {
      const a = this.accounts.get(id);
      if (a) a.inFlight--;
    }
  }

  /** An account's service so far (tests and diagnostics). */
  served(accountId: number): number {
    return this.accounts.get(accountId)?.served ?? 0;
  }

  private watchersOf(key: string): readonly number[] {
    return this.watchers.get(key) ?? NOBODY;
  }

  private account(id: number): Account {
    let a = this.accounts.get(id);
    if (!a) {
      a = { served: this.level, inFlight: 0, seen: 0 };
      this.accounts.set(id, a);
    }
    return a;
  }
}
