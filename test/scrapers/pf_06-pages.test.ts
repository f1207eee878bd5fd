// pf_06 reads one inventory from its pages (issue 38): against the simulator with its listings
// moving between pages during the read (its `moves`), the adapter reports either exactly an
// inventory the event had, which the test writes down itself from the simulator's state before
// the scrape, or a failure; never a listing twice, never one missed. And the parser's rules, one
// case each: what makes a set of pages disagree, and what it cannot see.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePf06, Pf06PagesDisagree, PF06_READS } from '../../src/scrapers/platforms/pf_06.ts';
import { failureDetail } from '../../src/scrapers/failure-detail.ts';
import type { FetchInit, PageFetcher, ScrapeData } from '../../src/scrapers/types.ts';
import type { SimSection } from '../../src/simulator/state.ts';
import { inventory } from './inventory-arbitrary.ts';
import { expectedOffers, failureOf, refOf, scrapedOffers, startHarness, type Harness } from './platform-harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ timeoutMs: 5_000 });
});
afterAll(async () => {
  await h?.close();
});

const LOT = 4;
type Move = 'insert_front' | 'remove_front';

/**
 * The inventory after one move, as docs/simulator.md describes it: `insert_front` adds a lot of
 * four to the first section entry (its lots come first, the new one first of all), `remove_front`
 * sells the first lot of the first entry that has one.
 */
function afterMove(sections: readonly SimSection[], move: Move): SimSection[] {
  const next = sections.map((s) => ({ ...s }));
  if (move === 'insert_front') {
    if (next[0]) next[0].stock += LOT;
  } else {
    const first = next.find((s) => s.stock > 0);
    if (first) first.stock = first.stock <= LOT ? 0 : first.stock - LOT;
  }
  return next;
}

async function simEvent(key: string): Promise<{ sections: SimSection[]; moves: { move: Move; reads: number } | null }> {
  const res = await fetch(`${h.sim.url}/_sim/pf_06/events/${key}`);
  expect(res.status).toBe(200);
  return (await res.json()) as { sections: SimSection[]; moves: { move: Move; reads: number } | null };
}

/** The harness's fetcher, counting the reads (requests for page 1) of a scrape. */
function counting(): { fetcher: PageFetcher; reads: () => number } {
  let reads = 0;
  return {
    reads: () => reads,
    fetcher: {
      html: (url: string, init?: FetchInit) => h.http.html(url, init),
      json: (url: string, init?: FetchInit) => {
        if (new URL(url).searchParams.get('page') === '1') reads++;
        return h.http.json(url, init);
      },
    },
  };
}

// 114 listings, three pages of 50: both section entries named Floor, a sold-out Box.
const SECTIONS = [
  { name: 'Floor', price: 120, stock: 90 },
  { name: 'Lower 101', price: 80, stock: 250, restricted_view: true },
  { name: 'Upper 305', price: 45.5, stock: 77, ticket_type: 'resale' },
  { name: 'Box', price: 300, stock: 0 },
  { name: 'Floor', price: 150, stock: 30, accessible: true },
];

let n = 0;

describe('pf_06 against listings that move between its pages', () => {
  it.each(['insert_front', 'remove_front'] as const)('%s during the first read: the pages disagree, the second read is the inventory after the move, exactly', async (move) => {
    const ref = await h.put('pf_06', 600 + n++, { sections: SECTIONS, moves: { move, reads: 1 } });
    const before = (await simEvent(ref.key)).sections;
    const expected = afterMove(before, move);
    const { fetcher, reads } = counting();
    const data = await h.adapter('pf_06', fetcher).scrape(ref);
    expect(reads()).toBe(2);
    if (data.sections_type !== 'OfferSections') throw new Error('expected offers');
    expect(scrapedOffers(data.sections)).toEqual(expectedOffers(ref, expected));
    expect(scrapedOffers(data.sections)).not.toEqual(expectedOffers(ref, before));
    // The simulator's own state says the same: the move happened once.
    expect(await simEvent(ref.key)).toMatchObject({ sections: expected, moves: { move, reads: 0 } });
  });

  it.each(['insert_front', 'remove_front'] as const)('%s during every read: fails after two reads as pages that disagree, never an inventory', async (move) => {
    const ref = await h.put('pf_06', 620 + n++, { sections: SECTIONS, moves: { move, reads: 10 } });
    const { fetcher, reads } = counting();
    const failure = await failureOf(h.adapter('pf_06', fetcher).scrape(ref));
    expect(failure).toBeInstanceOf(Pf06PagesDisagree);
    expect(failure).toMatchObject({ kind: 'upstream', retryable: true, exitAtFault: false });
    expect(failure.message).toMatch(/^pf_06: the listing pages disagree \(page \d counts \d+ listings on 3 pages, page 1 \d+ on 3\)/);
    expect(failureDetail(failure, 'pf_06')).toBe("pf_06's listings changed while they were being read; try again in a moment");
    expect(reads()).toBe(PF06_READS);
    expect((await simEvent(ref.key)).moves).toEqual({ move, reads: 10 - PF06_READS });
  });

  it('with nothing moving, reads once', async () => {
    const ref = await h.put('pf_06', 640, { sections: SECTIONS });
    const { fetcher, reads } = counting();
    const data = await h.adapter('pf_06', fetcher).scrape(ref);
    if (data.sections_type !== 'OfferSections') throw new Error('expected offers');
    expect(scrapedOffers(data.sections)).toEqual(expectedOffers(ref, (await simEvent(ref.key)).sections));
    expect(reads()).toBe(1);
  });

  it('any inventory, any move, any number of moving reads: an inventory the event had, exactly, or a failure', async () => {
    // Stock up to 300 a section entry: up to 75 lots each, so up to 12 pages.
    const big = inventory.chain((input) =>
      fc.record({
        input: fc.constant(input),
        stocks: fc.array(fc.integer({ min: 0, max: 300 }), { minLength: input.sections.length, maxLength: input.sections.length }),
        move: fc.constantFrom<Move>('insert_front', 'remove_front'),
        reads: fc.integer({ min: 0, max: 3 }),
      }),
    );
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(big, async ({ input, stocks, move, reads: movingReads }) => {
        const sections = input.sections.map((s, i) => ({ ...s, stock: stocks[i]! }));
        const ref = await h.put('pf_06', 700 + runs++, { ...input, sections, moves: { move, reads: movingReads } });
        // The inventories the event can have while it is read: before any move, after each.
        const states = [(await simEvent(ref.key)).sections];
        for (let i = 0; i < Math.min(movingReads, PF06_READS); i++) states.push(afterMove(states.at(-1)!, move));
        const { fetcher, reads } = counting();
        let data: ScrapeData;
        try {
          data = await h.adapter('pf_06', fetcher).scrape(ref);
        } catch (err) {
          expect(err).toBeInstanceOf(Pf06PagesDisagree);
          // Only a move during the second read too leaves the adapter without an inventory.
          expect(movingReads).toBeGreaterThanOrEqual(PF06_READS);
          expect(reads()).toBe(PF06_READS);
          return;
        }
        if (data.sections_type !== 'OfferSections') throw new Error('expected offers');
        const got = scrapedOffers(data.sections);
        const matches = states.map((state) => JSON.stringify(expectedOffers(ref, state)) === JSON.stringify(got));
        expect(matches, `the scrape is none of the ${states.length} inventories the event had`).toContain(true);
        expect(reads()).toBeLessThanOrEqual(PF06_READS);
      }),
      { numRuns: Number(process.env.PF06_MOVES_RUNS ?? 25) },
    );
  });
});

// The parser's rules, each on pages made by hand.
describe('a set of pf_06 pages that disagrees is no inventory', () => {
  const ref = refOf('pf_06', 'K0000650', 'us');
  const url = 'https://pf06.example/events/K0000650';
  const listing = (id: string, quantity = 2, amount = '10.00') => ({ id, section_id: 'sec-1', quantity, price: { amount }, kind: 'standard', notes: [] });
  const page = (listings: unknown[], totals: { pages?: number; listings?: number } = {}) => ({
    event: { currency: 'USD' },
    sections: [{ id: 'sec-1', name: 'Floor' }],
    listings,
    total_pages: totals.pages ?? 2,
    total_listings: totals.listings ?? 4,
  });
  const stock = (data: ScrapeData) => Object.values(data.sections).reduce((sum, s) => sum + s.stock, 0);

  it('counts a listing seen on two pages once', () => {
    // B on both pages with the same content, as when a listing is added in front of it between
    // the reads; here page 1 counts the three listings there are.
    const data = parsePf06(ref, [page([listing('A'), listing('B')], { listings: 3 }), page([listing('B'), listing('C')], { listings: 3 })], url);
    expect(stock(data)).toBe(6);
  });

  it.each([
    ['the same listing with different content on two pages', [page([listing('A'), listing('B')]), page([listing('B', 1), listing('C'), listing('D')])], /listing B is on page 1 and page 2 with different content/],
    ['a page whose total_pages is not page 1s', [page([listing('A'), listing('B')]), page([listing('C'), listing('D')], { pages: 3 })], /page 2 counts 4 listings on 3 pages, page 1 4 on 2/],
    ['a page whose total_listings is not page 1s', [page([listing('A'), listing('B')]), page([listing('C'), listing('D')], { listings: 5 })], /page 2 counts 5 listings on 2 pages, page 1 4 on 2/],
    ['fewer listings than page 1 counts (one moved onto page 1 after it was read)', [page([listing('A'), listing('B')]), page([listing('D')])], /3 different listings on the pages, page 1 counts 4/],
    ['more listings than page 1 counts', [page([listing('A'), listing('B')]), page([listing('C'), listing('D'), listing('E')])], /5 different listings on the pages, page 1 counts 4/],
  ])('%s', (_label, pages, message) => {
    let thrown: unknown;
    try {
      parsePf06(ref, pages, url);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(Pf06PagesDisagree);
    expect(thrown).toMatchObject({ kind: 'upstream', message: expect.stringMatching(message) });
  });

  it('one page holding a listing twice with different content is malformed, not moving', () => {
    expect(() => parsePf06(ref, [page([listing('A'), listing('A', 3)], { pages: 1, listings: 2 })], url)).toThrow(/^pf_06: listing A is twice on page 1, with different content$/);
  });

  it('a page without total_listings is malformed', () => {
    const { total_listings: _gone, ...bare } = page([listing('A')], { pages: 1, listings: 1 });
    expect(() => parsePf06(ref, [bare], url)).toThrow(/^pf_06: total_listings of page 1 is not a ticket count \(missing\)$/);
  });

  it('cannot see a sale and an addition between the same two reads (docs/scraping.md)', () => {
    // Page 1 read at [A B | C D]; then A is sold and E added at the end: [B C | D E]. Page 2
    // shows D E: C is on no page read, and the counts agree. What the rule cannot see, pinned.
    const data = parsePf06(ref, [page([listing('A'), listing('B')]), page([listing('D'), listing('E')])], url);
    if (data.sections_type !== 'OfferSections') throw new Error('expected offers');
    expect(data.sections.Floor!.offers.map((o) => o.id)).toEqual(['A', 'B', 'D', 'E']);
  });
});
