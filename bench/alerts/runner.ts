// Plays every script against the simulator, all scenarios at once, step by step. A step is its
// control call, then a wait until the event served at least two polls' worth of requests after
// it (the step was seen; a failing page: one poll) and the step's expected notifications reached
// the client, or, once seen, a short grace for those that do not come (they are scored missed
// at the end, not here). Timed steps (the cooldown) start at their scheduled second; one more
// than an interval late is recorded, since the cooldown's outcome is written for the schedule.
//
// Between the phases the worker is SIGKILLed: every script's first phase-2 control call is
// made (a script whose phase 2 starts by waiting makes none), then the kill, then the worker is
// started again after BENCH_KILL_DOWN_MS. A step made before the kill is only seen by polls after
// it (its requests are counted from the kill), so no change is taken as seen by a worker that
// died before recording it. A step that observes a hold spanning the kill (killBeforeS) is
// reported when the kill came too late for that.
//
// Only the stream's arrivals pace the steps; webhooks and Discord are scored at the end.
import type { Lifecycle } from '../monitors/lifecycle.ts';
import type { Stack } from '../monitors/stack.ts';
import { progress, sleep } from '../monitors/support.ts';
import type { Inbox } from './channels.ts';
import type { AlertsConfig } from './config.ts';
import type { Hook, ItemRun } from './items.ts';
import { requestsToSee } from './platforms.ts';
import { afterMoves, type Expected, type Listing, type Step } from './model.ts';
import type { Script } from './scenarios.ts';
import { simEventKey, type SimControl } from './sim.ts';

/** An expectation for one created item (each spec has a twin per webhook kind). */
export type ExpectedRun = Expected & {
  itemId: number;
  key: string;
  hook: Hook;
};

export interface StepRecord {
  step: Step;
  index: number;
  /** Date.now() when the control call was sent (a wait step: when it began). */
  putAt: number | null;
  /** Requests the event had served when the call took effect. */
  hitsAtPut: number;
  /** Whether enough polls after the call were seen. */
  seen: boolean;
  /** Date.now() when they were (a wait step: when it began); null while not. */
  seenAt: number | null;
  /** How late a timed step started, in ms (null: not timed). */
  lateMs: number | null;
  /** Why the step could not observe what it was written for (the kill came too late). */
  problem: string | null;
}

export interface ScriptRun {
  script: Script;
  items: ItemRun[];
  expected: ExpectedRun[];
  steps: StepRecord[];
  /** Date.now() of the first step: timed steps count from it. */
  startedAt: number | null;
}

export interface KillRecord {
  killedAt: number;
  /** Date.now() when the new worker answered /metrics. */
  readyAt: number | null;
  /** Date.now() of the first request any event served after the kill (the new worker polling; null: none within a minute). */
  firstPollAt: number | null;
  downMs: number;
}

/** The worker's SIGKILL as the steps see it. */
class Outage {
  killedAt: number | null = null;
  hitsAtKill: Map<string, number> | null = null;
  down = false;
  backAt: number | null = null;
}

export class Runner {
  private readonly outage = new Outage();
  kill: KillRecord | null = null;
  stepsDone = 0;
  readonly stepsTotal: number;

  constructor(
    private readonly cfg: AlertsConfig,
    private readonly stack: Stack,
    private readonly sim: SimControl,
    private readonly inbox: Inbox,
    private readonly runs: readonly ScriptRun[],
    private readonly life: Lifecycle,
  ) {
    this.stepsTotal = runs.reduce((n, r) => n + r.steps.length, 0);
  }

  async run(): Promise<void> {
    progress(`phase 1: ${this.runs.length} scenarios, their steps before the worker's SIGKILL...`);
    const started = Date.now();
    await Promise.all(this.runs.map((r) => this.play(r, 0, () => {})));
    progress(`  phase 1 took ${((Date.now() - started) / 1000).toFixed(0)} s`);
    let arrived = 0;
    let allPut!: () => void;
    const latch = new Promise<void>((resolve) => (allPut = resolve));
    const arrive = () => {
      if (++arrived === this.runs.length) allPut();
    };
    progress(`phase 2: the rest of the steps${this.cfg.kill ? ', the worker SIGKILLed right after their first control calls' : ''}...`);
    const phase2 = Promise.all(this.runs.map((r) => this.play(r, 1, arrive)));
    await Promise.race([latch, phase2]);
    if (this.cfg.kill) await this.killWorker();
    await phase2;
  }

  private async killWorker(): Promise<void> {
    const { worker } = this.stack;
    // From here on a phase-2 step counts as seen only by polls after the kill (conservative: the
    // old worker may still poll in these 300 ms, and may die before recording what it read).
    this.outage.killedAt = Date.now();
    await sleep(300);
    this.outage.down = true;
    const killedAt = Date.now();
    progress(`  SIGKILL of the worker (pid ${worker.pid})`);
    await worker.kill();
    this.outage.hitsAtKill = await this.sim.hits();
    await sleep(this.cfg.killDownMs);
    const started = await worker.start();
    this.outage.down = false;
    this.outage.backAt = Date.now();
    this.kill = { killedAt, readyAt: started.readyAt, firstPollAt: null, downMs: this.cfg.killDownMs };
    progress(`  new worker ready ${((started.readyAt - killedAt) / 1000).toFixed(1)} s after the kill (pid ${worker.pid}); waiting for its first poll...`);
    const total = (hits: Map<string, number>) => [...hits.values()].reduce((t, n) => t + n, 0);
    const atKill = total(this.outage.hitsAtKill);
    while (Date.now() - started.readyAt < 60_000) {
      this.life.check();
      if (total(await this.sim.hits()) > atKill) {
        this.kill.firstPollAt = Date.now();
        progress(`  polling resumed ${((this.kill.firstPollAt - killedAt) / 1000).toFixed(1)} s after the kill`);
        return;
      }
      await sleep(200);
    }
    progress('  no poll within 60 s of the new worker being ready');
  }

  /** Plays one phase of a script; `arrive` is called once its first control call is made (or there is none). */
  private async play(r: ScriptRun, phase: 0 | 1, arrive: () => void): Promise<void> {
    const offset = phase === 0 ? 0 : r.script.phases[0].length;
    const steps = r.steps.slice(offset, offset + r.script.phases[phase].length);
    let arrived = false;
    try {
      if (steps.length === 0) return;
      r.startedAt ??= Date.now();
      let inventory: readonly Listing[] = inventoryBefore(r, offset);
      for (const [i, rec] of steps.entries()) {
        this.life.check();
        // A phase that starts by waiting makes no control call before the kill.
        if (rec.step.waitOnly && !arrived) {
          arrived = true;
          arrive();
        }
        if (rec.step.atS !== undefined) {
          const due = r.startedAt + rec.step.atS * 1000;
          if (Date.now() < due) await sleep(due - Date.now());
          rec.lateMs = Math.max(0, Date.now() - due);
        }
        if (rec.step.killBeforeS !== undefined && this.cfg.kill) {
          const by = r.startedAt + rec.step.killBeforeS * 1000;
          const killedAt = this.outage.killedAt === null ? null : this.outage.killedAt + 300;
          if (killedAt === null || killedAt >= by) {
            rec.problem = `the worker's SIGKILL ${killedAt === null ? 'had not come' : `came ${((killedAt - by) / 1000).toFixed(1)} s after`} the end of the hold it should span (raise BENCH_KILL_COOLDOWN_S)`;
          }
        }
        if (rec.step.inventory) inventory = rec.step.inventory;
        rec.putAt = Date.now();
        rec.hitsAtPut = rec.step.waitOnly ? ((await this.sim.hits()).get(simEventKey(r.script)) ?? 0) : await this.sim.put(r.script, inventory, rec.step);
        // pf_06's moves change the simulator's own inventory: the next control call starts from it.
        if (rec.step.moves) inventory = afterMoves(inventory, rec.step.moves);
        if (!arrived) {
          arrived = true;
          arrive();
        }
        const next = steps[i + 1]?.step.atS;
        await this.observe(r, rec, next === undefined ? null : r.startedAt + next * 1000);
        this.stepsDone++;
      }
    } finally {
      if (!arrived) arrive();
    }
  }

  /** Waits until the step was seen and its notifications arrived, or its time is up. */
  private async observe(r: ScriptRun, rec: StepRecord, nextDue: number | null): Promise<void> {
    const key = simEventKey(r.script);
    const failing = (rec.step.behaviour ?? 'ok') !== 'ok';
    const perPoll = r.script.requestsPerPoll ?? r.script.platform.requestsPerPoll;
    // Reads whose pages disagree (pf_06's moves) are made again: they cost their requests first.
    const moved = rec.step.moves ? 2 * rec.step.moves.reads * perPoll : 0;
    const need = failing ? 1 : moved ? moved + 2 * perPoll + 1 : requestsToSee(perPoll);
    const expected = r.expected.filter((e) => e.step === rec.index);
    const grace = Math.max(3_000, 3 * this.cfg.intervalMs);
    // A wait step makes no change to be seen: it only waits for what the cooldown's end sends.
    let seenAt: number | null = rec.step.waitOnly ? Date.now() : null;
    if (rec.step.waitOnly) {
      rec.seen = true;
      rec.seenAt = seenAt;
    }
    for (;;) {
      this.life.check();
      const hits = (await this.sim.hits()).get(key) ?? 0;
      let base = rec.hitsAtPut;
      const o = this.outage;
      const beforeKill = o.killedAt !== null && rec.putAt! < o.killedAt;
      if (beforeKill && o.hitsAtKill) base = Math.max(base, o.hitsAtKill.get(key) ?? 0);
      if (!rec.seen && hits >= base + need && !(beforeKill && !o.hitsAtKill)) {
        rec.seen = true;
        seenAt = Date.now();
        rec.seenAt = seenAt;
      }
      const allArrived = expected.every((e) => this.inbox.count('stream', e.key) > 0);
      if (rec.seen && allArrived) return;
      const now = Date.now();
      if (seenAt !== null && (now - seenAt > grace || (nextDue !== null && now >= nextDue))) return;
      if (!o.down && now - Math.max(rec.putAt!, o.backAt ?? 0) > this.cfg.stepTimeoutMs) {
        progress(`  ${r.script.platform.platform} ${r.script.role}: step ${rec.index + 1} "${rec.step.label}" was not seen within ${this.cfg.stepTimeoutMs / 1000} s (${hits - base} of ${need} requests); going on`);
        return;
      }
      await sleep(100);
    }
  }
}

function inventoryBefore(r: ScriptRun, index: number): readonly Listing[] {
  let inventory: readonly Listing[] = r.script.initial;
  for (const rec of r.steps.slice(0, index)) if (rec.step.inventory) inventory = afterMoves(rec.step.inventory, rec.step.moves);
  return inventory;
}
