// Sends calls to a store in groups: one group in flight per lane, and the calls that arrive
// while it is out form the next one. A lone call waits for nothing (or for `gatherMs`, when
// asked), and a busy caller pays one round trip for many calls rather than one each. Used for
// gateway admissions, key lookups, rate-limit peeks and stream admissions: each says what one
// group costs (its `send`), this module says when groups go. MixedGroups is the variant for
// writes that lock per key (an account's watchlist creates): one group holds many keys' calls,
// a key has one group out at a time, and the keys waiting take turns.

export interface GroupedCallsOptions<I, O> {
  /** Sends one group; answers one output per input, in the inputs' order. A throw fails the whole group. */
  send(inputs: I[]): Promise<O[]>;
  /** The most calls in one group: the rest wait for the next. */
  maxGroup: number;
  /**
   * Independent queues, each with its own group in flight. Callers that touch disjoint rows pick
   * disjoint lanes, so two groups of one process never wait on each other's locks.
   */
  lanes?: number;
  /** How long a call that finds its lane idle waits for company before its group goes (0: at once). */
  gatherMs?: number;
  /**
   * Answers a group's callers at the next check phase rather than at once, so the lane's next
   * group is sent before their continuations run: the store works on it meanwhile.
   */
  answerAfterNextSend?: boolean;
}

interface Queued<I, O> {
  input: I;
  resolve(output: O): void;
  reject(err: unknown): void;
}

interface Lane<I, O> {
  queue: Queued<I, O>[];
  inFlight: boolean;
  timer: NodeJS.Timeout | null;
}

/** The lane of `key`: numbers by their remainder, strings by a hash, so one key always gets one lane. */
export function laneOf(key: number | string, lanes: number): number {
  if (typeof key === 'number') return Math.abs(key) % lanes;
  let h = 0;
  for (let i = 0; i < key.length; i++) h = (h * 31 + key.charCodeAt(i)) | 0;
  return Math.abs(h) % lanes;
}

export class GroupedCalls<I, O> {
  private readonly lanes: Lane<I, O>[];

  constructor(private readonly options: GroupedCallsOptions<I, O>) {
    this.lanes = Array.from({ length: options.lanes ?? 1 }, () => ({ queue: [], inFlight: false, timer: null }));
  }

  private laneFor(key: number | string): Lane<I, O> {
    return this.lanes[laneOf(key, this.lanes.length)]!;
  }

  /** Queues `input` on the lane of `laneKey` and answers with its output once its group comes back. */
  call(input: I, laneKey: number | string = 0): Promise<O> {
    const lane = this.laneFor(laneKey);
    return new Promise<O>((resolve, reject) => {
      lane.queue.push({ input, resolve, reject });
      this.wake(lane);
    });
  }

  /**
   * Moves a call still queued here (not yet sent) to `other`'s lane of `laneKey`, where its
   * caller keeps waiting for the same answer. False when it is not queued here.
   */
  expedite(input: I, other: GroupedCalls<I, O>, laneKey: number | string = 0): boolean {
    for (const lane of this.lanes) {
      const i = lane.queue.findIndex((q) => q.input === input);
      if (i < 0) continue;
      const [queued] = lane.queue.splice(i, 1);
      const to = other.laneFor(laneKey);
      to.queue.push(queued!);
      other.wake(to);
      return true;
    }
    return false;
  }

  private wake(lane: Lane<I, O>): void {
    if (lane.inFlight) return;
    const gather = this.options.gatherMs ?? 0;
    if (gather <= 0) void this.drain(lane);
    else lane.timer ??= setTimeout(() => void this.drain(lane), gather).unref();
  }

  private async drain(lane: Lane<I, O>): Promise<void> {
    if (lane.inFlight) return;
    if (lane.timer) clearTimeout(lane.timer);
    lane.timer = null;
    lane.inFlight = true;
    try {
      while (lane.queue.length > 0) {
        const group = lane.queue.splice(0, this.options.maxGroup);
        let outputs: O[];
        try {
          outputs = await this.options.send(group.map((q) => q.input));
        } catch (err) {
          for (const q of group) q.reject(err);
          continue;
        }
        const answer = () => group.forEach((q, i) => q.resolve(outputs[i]!));
        if (this.options.answerAfterNextSend) setImmediate(answer);
        else answer();
      }
    } finally {
      lane.inFlight = false;
    }
  }
}

export interface MixedGroupsOptions<I, O> {
  /** Sends one group; answers one output per input, in the inputs' order. A throw fails the whole group. */
  send(inputs: I[]): Promise<O[]>;
  /** The most calls in one group: the rest wait for the next. */
  maxGroup: number;
  /** The most groups out at once. */
  inFlight: number;
}

/**
 * Groups that mix keys: many accounts' writes in one transaction, where each key's calls need
 * its own lock. A key has at most one group out, so its calls go in arrival order, one group
 * after another, as with a lane of its own; but while groups are out, every key's calls that
 * arrive wait for the next group together, rather than each key sending a group of its own.
 * A group takes the ready keys' calls in turns, one of each per round, starting with the key
 * that has waited longest, and a key still waiting after its turn goes to the back of the line:
 * a key with many calls queued holds back another key's call by no more than one group for
 * every `maxGroup` keys ahead of it, however many calls it has queued.
 */
export class MixedGroups<I, O> {
  /** Keys with calls queued, in the order they take their turns. */
  private readonly waiting = new Map<number | string, Queued<I, O>[]>();
  /** Keys with a group out. */
  private readonly busy = new Set<number | string>();
  private out = 0;

  constructor(private readonly options: MixedGroupsOptions<I, O>) {}

  /** Keys with calls queued or out, for tests that nothing idle is kept. */
  get keysHeld(): number {
    return new Set([...this.waiting.keys(), ...this.busy]).size;
  }

  /** Queues `input` for `key` and answers with its output once its group comes back. */
  call(input: I, key: number | string): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const queue = this.waiting.get(key);
      if (queue) queue.push({ input, resolve, reject });
      else this.waiting.set(key, [{ input, resolve, reject }]);
      this.pump();
    });
  }

  private pump(): void {
    while (this.out < this.options.inFlight) {
      const group = this.take();
      if (group.length === 0) return;
      this.out++;
      void this.sendGroup(group);
    }
  }

  /** The next group: the ready keys' calls, one of each per round, up to maxGroup. */
  private take(): { key: number | string; queued: Queued<I, O> }[] {
    const group: { key: number | string; queued: Queued<I, O> }[] = [];
    const ready = [...this.waiting.keys()].filter((key) => !this.busy.has(key));
    while (group.length < this.options.maxGroup && ready.length > 0) {
      for (let i = 0; i < ready.length && group.length < this.options.maxGroup; ) {
        const key = ready[i]!;
        const queue = this.waiting.get(key)!;
        group.push({ key, queued: queue.shift()! });
        if (queue.length > 0) i++;
        else {
          this.waiting.delete(key);
          ready.splice(i, 1);
        }
      }
    }
    for (const { key } of group) {
      this.busy.add(key);
      const queue = this.waiting.get(key);
      // Had its turn and still waits: to the back of the line.
      if (queue && this.waiting.delete(key)) this.waiting.set(key, queue);
    }
    return group;
  }

  private async sendGroup(group: { key: number | string; queued: Queued<I, O> }[]): Promise<void> {
    let outputs: O[] | null = null;
    let failure: unknown = null;
    try {
      outputs = await this.options.send(group.map((g) => g.queued.input));
    } catch (err) {
      failure = err;
    }
    this.out--;
    for (const { key } of group) this.busy.delete(key);
    // The next group goes before this one's callers run: the store works on it meanwhile.
    this.pump();
    group.forEach((g, i) => (outputs ? g.queued.resolve(outputs[i]!) : g.queued.reject(failure)));
  }
}
