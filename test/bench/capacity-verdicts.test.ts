// bench:capacity's verdicts (bench/capacity/verdicts.ts): each passes on figures that meet it and
// fails on figures that miss it, and steps that count nothing fail.
import { describe, expect, it } from 'vitest';
import { countedSomething, firstServed, firstShort, heldToNotifications, notifiedWhatChanged, served, type StepFigures } from '../../bench/capacity/verdicts.ts';

function step(over: Partial<StepFigures> = {}): StepFigures {
  return { intervalMs: 1_000, demanded: 1_000, polls: 990, notifications: 50, scheduled: 50, changePeriodMs: 100_000, statements: 400, cpu: { worker: 60, temporal: 5, postgres: 20, bench: 3 }, ...over };
}

describe("bench:capacity's verdicts", () => {
  it('a step is served at 95% of its demand, not below, and never with no demand', () => {
    expect(served(step({ polls: 950 }))).toBe(true);
    expect(served(step({ polls: 949 }))).toBe(false);
    expect(served(step({ demanded: 0, polls: 0 }))).toBe(false);
  });

  it('the first step must be served; later ones may fall short, and the first short one is named', () => {
    const steps = [step(), step({ intervalMs: 500, demanded: 2_000, polls: 1_990 }), step({ intervalMs: 250, demanded: 4_000, polls: 2_500 })];
    expect(firstServed(steps)).toBe(true);
    expect(firstShort(steps)?.intervalMs).toBe(250);
    expect(firstShort(steps.slice(0, 2))).toBeNull();
    expect(firstServed([step({ polls: 100 })])).toBe(false);
    expect(firstServed([])).toBe(false);
  });

  it('steps that count no poll, statement or worker CPU fail', () => {
    expect(countedSomething([step(), step()])).toBe(true);
    expect(countedSomething([step(), step({ polls: 0 })])).toBe(false);
    expect(countedSomething([step({ statements: 0 })])).toBe(false);
    expect(countedSomething([step({ cpu: { worker: 0, temporal: 0, postgres: 0, bench: 0 } })])).toBe(false);
    expect(countedSomething([])).toBe(false);
  });

  it('steps that poll each target 5 times a change period notify what the schedule changed, within 20 % and 5/s, served or not', () => {
    // 1,000 targets: 990 polls/s with a 100 s period poll each one 99 times a period.
    expect(notifiedWhatChanged([step({ notifications: 65, scheduled: 50 }), step({ polls: 40, notifications: 0 })])).toBe(true);
    expect(notifiedWhatChanged([step({ notifications: 66, scheduled: 50 })])).toBe(false);
    expect(notifiedWhatChanged([step({ notifications: 34, scheduled: 50 })])).toBe(false);
    // Past saturation (600 polls/s of 1,000 asked) a step is still held to it: what it misses fails.
    const short = step({ polls: 600, notifications: 7, scheduled: 48 });
    expect(served(short)).toBe(false);
    expect(heldToNotifications(short)).toBe(true);
    expect(notifiedWhatChanged([step(), short])).toBe(false);
    // Fewer than 5 polls of each target a period: changes may be seen a period late.
    expect(heldToNotifications(step({ polls: 49 }))).toBe(false);
    expect(heldToNotifications(step({ polls: 50 }))).toBe(true);
    expect(notifiedWhatChanged([step({ notifications: 0, scheduled: 0 })])).toBe(false);
    expect(notifiedWhatChanged([step({ polls: 10 })])).toBe(false);
    expect(notifiedWhatChanged([])).toBe(false);
  });
});
