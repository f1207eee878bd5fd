// The simulator's background drift: each step moves one section of each drifting event by one
// ticket (never below zero) and now and then its price by 1%; events set exactly stay put.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/server.ts';
import { simEventInputSchema, SimStore } from '../../src/simulator/state.ts';

/** A random source that plays back the given numbers. */
const sequence = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length]!;
};

function storeWith(stocks: number[], drift = true): SimStore {
  const store = new SimStore(() => new Date('2027-01-01T00:00:00Z'));
  for (const e of store.all()) store.delete(e.platform, e.key);
  store.put('pf_03', 'show-1', simEventInputSchema.parse({ region: 'us', drift, sections: stocks.map((stock, i) => ({ name: `S${i}`, price: 100, stock })) }));
  return store;
}

describe('drift', () => {
  it('moves one section by exactly one ticket per step', () => {
    const store = storeWith([5, 5, 5]);
    // section index 0.5 * 3 -> 1; direction 0.9 -> +1; price untouched (0.9 >= 0.2).
    store.drift(sequence(0.5, 0.9, 0.9));
    expect(store.get('pf_03', 'show-1')!.sections.map((s) => s.stock)).toEqual([5, 6, 5]);
    store.drift(sequence(0.0, 0.1, 0.9));
    expect(store.get('pf_03', 'show-1')!.sections.map((s) => s.stock)).toEqual([4, 6, 5]);
  });

  it('never takes stock below zero', () => {
    const store = storeWith([0]);
    for (let i = 0; i < 20; i++) store.drift(sequence(0, 0.1, 0.9));
    expect(store.get('pf_03', 'show-1')!.sections[0]!.stock).toBe(0);
  });

  it('changes a price by 1% now and then, kept to cents', () => {
    const store = storeWith([5]);
    store.drift(sequence(0, 0.9, 0.1, 0.9));
    expect(store.get('pf_03', 'show-1')!.sections[0]!.price).toBe(101);
  });

  it('leaves events set exactly (drift off) alone', () => {
    const store = storeWith([5, 5], false);
    store.drift(sequence(0.5, 0.9, 0.1, 0.9));
    expect(store.get('pf_03', 'show-1')!.sections.map((s) => [s.stock, s.price])).toEqual([
      [5, 100],
      [5, 100],
    ]);
  });

  it('keeps total stock within one ticket per step, and never negative, over any run', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 6 }), fc.array(fc.double({ min: 0, max: 0.999, noNaN: true }), { minLength: 3, maxLength: 60 }), (stocks, randoms) => {
        const store = storeWith(stocks);
        const random = sequence(...randoms);
        for (let step = 0; step < 30; step++) {
          const before = store.get('pf_03', 'show-1')!.sections.reduce((sum, s) => sum + s.stock, 0);
          store.drift(random);
          const sections = store.get('pf_03', 'show-1')!.sections;
          const after = sections.reduce((sum, s) => sum + s.stock, 0);
          expect(Math.abs(after - before)).toBeLessThanOrEqual(1);
          expect(sections.every((s) => s.stock >= 0)).toBe(true);
        }
      }),
    );
  });

  it('runs on its interval when the simulator is started with driftMs', async () => {
    const sim = await startSimulator({ empty: true, driftMs: 10 });
    try {
      sim.store.put('pf_03', 'show-1', simEventInputSchema.parse({ region: 'us', drift: true, sections: [{ name: 'A', price: 10, stock: 50 }] }));
      const before = sim.store.get('pf_03', 'show-1')!.updated_at;
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(sim.store.get('pf_03', 'show-1')!.updated_at).not.toBe(before);
    } finally {
      await sim.close();
    }
  });
});
