// Sends calls to a store in groups: one group in flight per lane, and the calls that arrive
// while it is out form the next one. A lone call waits for nothing (or for `gatherMs`, when
// asked), and a busy caller pays one round trip for many calls rather than one each. Used for
// gateway admissions, key lookups, rate-limit peeks and stream admissions: each says what one
// group costs (its `send`), this module says when groups go.

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
  /**
   * A lane of its own for each key, made on its first call and dropped once idle, in place of
   * `lanes`: one key's calls never wait behind another key's group (a lane per account).
   */
  laneEachKey?: boolean;
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
  key: number | string;
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
  /** With laneEachKey: the lanes of the keys with calls queued or in flight. */
  private readonly keyed = new Map<number | string, Lane<I, O>>();

  constructor(private readonly options: GroupedCallsOptions<I, O>) {
    this.lanes = Array.from({ length: options.lanes ?? 1 }, (_, key) => ({ key, queue: [], inFlight: false, timer: null }));
  }

  /** Lanes with calls queued or in flight (with laneEachKey), for tests that no idle lane is kept. */
  get keyedLanes(): number {
    return this.keyed.size;
  }

  private laneFor(key: number | string): Lane<I, O> {
    if (!this.options.laneEachKey) return this.lanes[laneOf(key, this.lanes.length)]!;
    let lane = this.keyed.get(key);
    if (!lane) this.keyed.set(key, (lane = { key, queue: [], inFlight: false, timer: null }));
    return lane;
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
    for (const lane of [...this.lanes, ...this.keyed.values()]) {
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
      if (this.options.laneEachKey && lane.queue.length === 0 && lane.timer === null) this.keyed.delete(lane.key);
    }
  }
}
