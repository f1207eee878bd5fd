// Grouped calls (src/runtime/grouped-calls.ts), the one queue behind gateway admissions, key
// lookups, rate-limit peeks and stream admissions: every call answered with its own output once,
// in arrival order per lane, never more than one group in flight per lane nor more than maxGroup
// calls in a group, a failed group failing its own calls only; and the options (gathering, moving
// a queued call to another queue, answering after the next send) doing what their callers rely on.
// MixedGroups (an account's watchlist creates): groups of many keys, one group out per key, and
// turns that bound how long one key's many calls hold another's back.
import { setImmediate as nextCheck } from 'node:timers/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GroupedCalls, laneOf, MixedGroups } from '../../src/runtime/grouped-calls.ts';

interface Input {
  id: number;
  lane: number;
}

/** The output the test expects for an input, written down before any call is made. */
const answerOf = (input: Input) => input.id * 7 + input.lane;

describe('GroupedCalls', () => {
  it('answers each call with its own output, in arrival order per lane, within the group and lane bounds', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          lanes: fc.integer({ min: 1, max: 4 }),
          maxGroup: fc.integer({ min: 1, max: 6 }),
          // Each call: its lane key and how many check phases pass before the next arrives.
          calls: fc.array(fc.record({ laneKey: fc.integer({ min: 0, max: 20 }), gap: fc.integer({ min: 0, max: 2 }) }), { minLength: 1, maxLength: 40 }),
          // Groups (numbered in the order they are sent) that fail.
          failing: fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { maxLength: 5 }),
          // How many check phases each send takes.
          sendTicks: fc.integer({ min: 0, max: 3 }),
        }),
        async ({ lanes, maxGroup, calls, failing, sendTicks }) => {
          const sent: Input[][] = [];
          const inFlight = new Map<number, number>();
          let overlapped = false;
          const groups = new GroupedCalls<Input, number>({
            lanes,
            maxGroup,
            send: async (inputs) => {
              const lane = inputs[0]!.lane;
              const n = sent.push(inputs) - 1;
              if ((inFlight.get(lane) ?? 0) > 0) overlapped = true;
              inFlight.set(lane, (inFlight.get(lane) ?? 0) + 1);
              for (let t = 0; t < sendTicks; t++) await nextCheck();
              inFlight.set(lane, inFlight.get(lane)! - 1);
              if (failing.includes(n)) throw new Error(`group ${n}`);
              return inputs.map(answerOf);
            },
          });
          const outcomes: Promise<{ input: Input; ok: boolean; value: unknown }>[] = [];
          for (const [id, c] of calls.entries()) {
            const input = { id, lane: laneOf(c.laneKey, lanes) };
            outcomes.push(
              groups.call(input, c.laneKey).then(
                (value) => ({ input, ok: true, value }),
                (err: Error) => ({ input, ok: false, value: err.message }),
              ),
            );
            for (let t = 0; t < c.gap; t++) await nextCheck();
          }
          const settled = await Promise.all(outcomes);

          expect(overlapped).toBe(false);
          expect(sent.every((g) => g.length >= 1 && g.length <= maxGroup)).toBe(true);
          // Each group holds one lane's calls only.
          expect(sent.every((g) => g.every((i) => i.lane === g[0]!.lane))).toBe(true);
          // Every call sent exactly once, and in arrival order within its lane.
          const ids = sent.flat().map((i) => i.id);
          expect([...ids].sort((a, b) => a - b)).toEqual(calls.map((_, id) => id));
          for (let lane = 0; lane < lanes; lane++) {
            const order = sent.flat().filter((i) => i.lane === lane).map((i) => i.id);
            expect(order).toEqual([...order].sort((a, b) => a - b));
          }
          // Each call hears its own answer, or its own group's failure.
          for (const s of settled) {
            const n = sent.findIndex((g) => g.includes(s.input));
            if (failing.includes(n)) expect(s).toEqual({ input: s.input, ok: false, value: `group ${n}` });
            else expect(s).toEqual({ input: s.input, ok: true, value: answerOf(s.input) });
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('sends a lone call at once, and gathers calls for gatherMs when asked', async () => {
    const sent: number[][] = [];
    const send = async (inputs: number[]) => (sent.push(inputs), inputs);
    const atOnce = new GroupedCalls<number, number>({ send, maxGroup: 10 });
    const answer = atOnce.call(1);
    expect(sent).toEqual([[1]]); // sent before call() returned
    await expect(answer).resolves.toBe(1);

    sent.length = 0;
    const gathering = new GroupedCalls<number, number>({ send, maxGroup: 10, gatherMs: 30 });
    const answers = [gathering.call(1)];
    await new Promise((r) => setTimeout(r, 10));
    answers.push(gathering.call(2));
    expect(sent).toEqual([]);
    await expect(Promise.all(answers)).resolves.toEqual([1, 2]);
    expect(sent).toEqual([[1, 2]]);
  });

  it('moves a queued call to another queue, where its caller hears the answer, and the first never sends it', async () => {
    const slowSent: string[][] = [];
    const fastSent: string[][] = [];
    const slow = new GroupedCalls<string, string>({ send: async (i) => (slowSent.push(i), i.map((s) => `slow:${s}`)), maxGroup: 10, gatherMs: 40 });
    const fast = new GroupedCalls<string, string>({ send: async (i) => (fastSent.push(i), i.map((s) => `fast:${s}`)), maxGroup: 10 });
    const a = slow.call('a');
    const b = slow.call('b');
    expect(slow.expedite('a', fast)).toBe(true);
    await expect(a).resolves.toBe('fast:a');
    expect(fastSent).toEqual([['a']]);
    expect(slow.expedite('a', fast)).toBe(false); // no longer queued there
    await expect(b).resolves.toBe('slow:b');
    expect(slowSent).toEqual([['b']]);
    // A gathering queue emptied by a move sends nothing when its timer fires.
    const c = slow.call('c');
    slow.expedite('c', fast);
    await c;
    await new Promise((r) => setTimeout(r, 60));
    expect(slowSent).toEqual([['b']]);
  });

  it('with answerAfterNextSend, sends the next group before answering the one before it', async () => {
    const events: string[] = [];
    let release!: () => void;
    const firstBack = new Promise<void>((r) => (release = r));
    const groups = new GroupedCalls<number, number>({
      maxGroup: 1,
      answerAfterNextSend: true,
      send: async ([n]) => {
        // As a pool does, the query goes out a tick after it is asked for.
        await null;
        events.push(`send ${n}`);
        if (n === 1) await firstBack;
        return [n!];
      },
    });
    const one = groups.call(1).then(() => events.push('answer 1'));
    const two = groups.call(2).then(() => events.push('answer 2'));
    release();
    await Promise.all([one, two]);
    expect(events.indexOf('send 2')).toBeLessThan(events.indexOf('answer 1'));
  });

  it('lanes of a key are stable and within range', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer(), fc.string()), fc.integer({ min: 1, max: 16 }), (key, lanes) => {
        const lane = laneOf(key, lanes);
        expect(Number.isInteger(lane) && lane >= 0 && lane < lanes).toBe(true);
        expect(laneOf(key, lanes)).toBe(lane);
      }),
    );
  });

  it("mixing keys: each call answered once, a key's calls in order and never in two groups out, and a key waits behind one group per maxGroup keys ahead", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          inFlight: fc.integer({ min: 1, max: 3 }),
          maxGroup: fc.integer({ min: 1, max: 6 }),
          // Key 0 floods: many calls, all at once, at the start.
          flood: fc.integer({ min: 0, max: 40 }),
          calls: fc.array(fc.record({ key: fc.integer({ min: 0, max: 12 }), gap: fc.integer({ min: 0, max: 2 }) }), { minLength: 1, maxLength: 40 }),
          failing: fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { maxLength: 4 }),
          sendTicks: fc.integer({ min: 0, max: 3 }),
        }),
        async ({ inFlight, maxGroup, flood, calls, failing, sendTicks }) => {
          const made = [...Array.from({ length: flood }, () => ({ key: 0, gap: 0 })), ...calls];
          const sent: Input[][] = [];
          const outKeys = new Set<number>();
          let out = 0;
          let mostOut = 0;
          let keyTwiceOut = false;
          const groups = new MixedGroups<Input, number>({
            inFlight,
            maxGroup,
            send: async (inputs) => {
              const n = sent.push(inputs) - 1;
              const keys = new Set(inputs.map((i) => i.lane));
              for (const k of keys) if (outKeys.has(k)) keyTwiceOut = true;
              for (const k of keys) outKeys.add(k);
              mostOut = Math.max(mostOut, ++out);
              for (let t = 0; t < sendTicks; t++) await nextCheck();
              out--;
              for (const k of keys) outKeys.delete(k);
              if (failing.includes(n)) throw new Error(`group ${n}`);
              return inputs.map(answerOf);
            },
          });
          // For each call whose key had no call unanswered when it came: the groups already sent
          // then, and how many other keys had calls waiting to be sent (the test's own count).
          const arrivals = new Map<number, { sentBefore: number; keysAhead: number }>();
          const answered = new Set<number>();
          const outcomes: Promise<{ input: Input; ok: boolean; value: unknown }>[] = [];
          for (const [id, c] of made.entries()) {
            const input = { id, lane: c.key };
            const sentIds = new Set(sent.flat().map((i) => i.id));
            const before = made.slice(0, id).map((m, j) => ({ key: m.key, j }));
            if (before.every((b) => b.key !== c.key || answered.has(b.j))) {
              const waiting = before.filter(({ j }) => !sentIds.has(j));
              arrivals.set(id, { sentBefore: sent.length, keysAhead: new Set(waiting.map((w) => w.key)).size });
            }
            outcomes.push(
              groups.call(input, c.key).then(
                (value) => ({ input, ok: true, value }),
                (err: Error) => ({ input, ok: false, value: err.message }),
              ).finally(() => answered.add(id)),
            );
            for (let t = 0; t < c.gap; t++) await nextCheck();
          }
          const settled = await Promise.all(outcomes);

          expect(keyTwiceOut).toBe(false);
          expect(mostOut).toBeLessThanOrEqual(inFlight);
          expect(sent.every((g) => g.length >= 1 && g.length <= maxGroup)).toBe(true);
          // Every call sent exactly once, and in arrival order within its key.
          const ids = sent.flat().map((i) => i.id);
          expect([...ids].sort((a, b) => a - b)).toEqual(made.map((_, id) => id));
          for (const key of new Set(made.map((m) => m.key))) {
            const order = sent.flat().filter((i) => i.lane === key).map((i) => i.id);
            expect(order).toEqual([...order].sort((a, b) => a - b));
          }
          // Turns: a call waits behind at most one group per maxGroup keys that were waiting
          // ahead of it, however many calls those keys had queued.
          for (const [id, a] of arrivals) {
            const n = sent.findIndex((g) => g.some((i) => i.id === id));
            expect(n - a.sentBefore + 1).toBeLessThanOrEqual(Math.floor(a.keysAhead / maxGroup) + 1);
          }
          for (const s of settled) {
            const n = sent.findIndex((g) => g.includes(s.input));
            if (failing.includes(n)) expect(s).toEqual({ input: s.input, ok: false, value: `group ${n}` });
            else expect(s).toEqual({ input: s.input, ok: true, value: answerOf(s.input) });
          }
          expect(groups.keysHeld).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('mixing keys: the calls that come while a group is out go together in the next, whatever their keys', async () => {
    const sent: number[][] = [];
    const groups = new MixedGroups<number, number>({ maxGroup: 50, inFlight: 1, send: async (inputs) => (sent.push([...inputs]), await nextCheck(), inputs) });
    await Promise.all(Array.from({ length: 16 }, (_, k) => groups.call(k, k)));
    expect(sent).toEqual([[0], Array.from({ length: 15 }, (_, k) => k + 1)]);
  });
});
