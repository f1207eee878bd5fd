// Property: pf_06's parser, given a set of listing pages each read at some moment of an inventory
// that changes while it is read (listings added, sold, changed in place, moved elsewhere in the
// order), never counts a listing twice and never misses one silently. The test models the
// platform itself: a list of listings, pages of `size` cut from it at the moment each is read,
// page 1 first, the others in any order.
//
// The oracle:
// - every page read at one inventory: exactly that inventory, never a failure;
// - otherwise a failure (`upstream`, the pages disagree), or listings each counted once, each with
//   the content a page showed of it, and exactly the listings there were while the pages were read.
// The one thing the rule cannot see (docs/scraping.md, "pf_06: one inventory from many pages"): a
// sale and an addition in the same gap between two reads leave every count as it was, and a
// listing pushed onto a page already read goes unseen. In that case only "each counted once, with
// a content it had, as many as page 1 counts" is asserted.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePf06, Pf06PagesDisagree } from '../../src/scrapers/platforms/pf_06.ts';
import type { ScrapeFailure, ScrapeData } from '../../src/scrapers/types.ts';
import { refOf } from './platform-harness.ts';

const SECTIONS = [
  { id: 'sec-1', name: 'Floor' },
  { id: 'sec-2', name: 'Balcony' },
  { id: 'sec-3', name: 'Box' },
];
const SECTION_NAME = new Map(SECTIONS.map((s) => [s.id, s.name]));
type Note = 'obstructed_view' | 'wheelchair_accessible' | 'presale';

interface Content {
  section_id: string;
  quantity: number;
  cents: number;
  kind: 'standard' | 'resale' | 'platinum' | 'general_admission';
  notes: Note[];
}
interface Listing extends Content {
  id: string;
}

const content: fc.Arbitrary<Content> = fc.record({
  section_id: fc.constantFrom(...SECTIONS.map((s) => s.id)),
  quantity: fc.integer({ min: 1, max: 4 }),
  cents: fc.integer({ min: 100, max: 100_000 }),
  kind: fc.constantFrom('standard', 'resale', 'platinum', 'general_admission'),
  notes: fc.subarray<Note>(['obstructed_view', 'wheelchair_accessible', 'presale']),
});

/** What happens to the inventory between two moments; positions are taken modulo its length. */
type Move =
  | { op: 'add'; at: number; content: Content }
  | { op: 'sell'; at: number }
  | { op: 'change'; at: number; content: Content }
  | { op: 'reorder'; from: number; to: number; content: Content | null };

const move: fc.Arbitrary<Move> = fc.oneof(
  fc.record({ op: fc.constant('add' as const), at: fc.nat(), content }),
  fc.record({ op: fc.constant('sell' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('change' as const), at: fc.nat(), content }),
  fc.record({ op: fc.constant('reorder' as const), from: fc.nat(), to: fc.nat(), content: fc.option(content) }),
);

interface Step {
  listings: Listing[];
  added: boolean;
  sold: boolean;
}

/** The inventory at every moment: [0] the first, then one per move. */
function moments(initial: Content[], moves: Move[]): Step[] {
  let listings: Listing[] = initial.map((c, i) => ({ id: `L${i + 1}`, ...c }));
  const out: Step[] = [{ listings, added: false, sold: false }];
  moves.forEach((m, j) => {
    const next = [...listings];
    let added = false;
    let sold = false;
    if (m.op === 'add') {
      next.splice(m.at % (next.length + 1), 0, { id: `N${j + 1}`, ...m.content });
      added = true;
    } else if (next.length > 0) {
      const at = (m.op === 'reorder' ? m.from : m.at) % next.length;
      if (m.op === 'sell') {
        next.splice(at, 1);
        sold = true;
      } else if (m.op === 'change') {
        next[at] = { id: next[at]!.id, ...m.content };
      } else {
        const [moved] = next.splice(at, 1);
        next.splice(m.to % (next.length + 1), 0, m.content ? { id: moved!.id, ...m.content } : moved!);
      }
    }
    listings = next;
    out.push({ listings, added, sold });
  });
  return out;
}

/** Page `page` (from 1) as the platform answers it at one moment. */
function pageAt(listings: readonly Listing[], page: number, size: number) {
  return {
    event: { id: 'K0000700', name: 'Paged', venue: { name: 'Arena', city: 'Springfield' }, currency: 'USD' },
    sections: SECTIONS,
    listings: listings.slice((page - 1) * size, page * size).map((l) => ({
      id: l.id,
      section_id: l.section_id,
      quantity: l.quantity,
      price: { amount: (l.cents / 100).toFixed(2), currency: 'USD' },
      kind: l.kind,
      notes: l.notes,
    })),
    page,
    total_pages: Math.max(1, Math.ceil(listings.length / size)),
    total_listings: listings.length,
  };
}

/** A listing as the oracle compares it: its section's name and its offer, without the id. */
function expectedOffer(l: Listing): string {
  return JSON.stringify({
    section: SECTION_NAME.get(l.section_id),
    price: l.cents / 100,
    quantity: l.quantity,
    ticket_type: l.kind,
    restricted_view: l.notes.includes('obstructed_view'),
    accessible: l.notes.includes('wheelchair_accessible'),
    presale: l.notes.includes('presale'),
  });
}

/** What the parser reported, by listing id; fails the property if an id is reported twice. */
function reported(data: ScrapeData): Map<string, string> {
  const out = new Map<string, string>();
  if (data.sections_type !== 'OfferSections') throw new Error('pf_06 reads offers');
  for (const [name, section] of Object.entries(data.sections)) {
    for (const { id, ...offer } of section.offers) {
      expect(out.has(id), `listing ${id} counted twice`).toBe(false);
      out.set(id, JSON.stringify({ section: name, ...offer }));
    }
  }
  return out;
}

const scenario = fc
  .record({
    initial: fc.array(content, { maxLength: 40, size: 'medium' }),
    size: fc.integer({ min: 1, max: 8 }),
    moves: fc.array(move, { maxLength: 5, size: 'medium' }),
    // The moment each page after the first is read at, modulo the number of moments.
    readAt: fc.array(fc.nat(), { minLength: 1, maxLength: 60 }),
  })
  .map(({ initial, size, moves, readAt }) => {
    const steps = moments(initial, moves);
    const pageCount = Math.max(1, Math.ceil(initial.length / size));
    const readMoment = (page: number) => (page === 1 ? 0 : readAt[page % readAt.length]! % steps.length);
    return { steps, size, pageCount, readMoment };
  });

const ref = refOf('pf_06', 'K0000700', 'us');

describe('pf_06 reads one inventory from pages read at different moments', () => {
  it('never counts a listing twice nor misses one silently', () => {
    fc.assert(
      fc.property(scenario, ({ steps, size, pageCount, readMoment }) => {
        const pages = Array.from({ length: pageCount }, (_, p) => pageAt(steps[readMoment(p + 1)]!.listings, p + 1, size));
        const read = [...new Set(Array.from({ length: pageCount }, (_, p) => readMoment(p + 1)))].sort((a, b) => a - b);
        const atRead = read.map((m) => steps[m]!.listings);
        const oneInventory = atRead.every((listings) => JSON.stringify(listings) === JSON.stringify(atRead[0]));

        let data: ScrapeData;
        try {
          data = parsePf06(ref, pages, 'https://pf06.example/events/K0000700');
        } catch (err) {
          expect(oneInventory, `failed on pages that agree: ${String(err)}`).toBe(false);
          expect(err).toBeInstanceOf(Pf06PagesDisagree);
          expect((err as ScrapeFailure).kind).toBe('upstream');
          return;
        }
        const got = reported(data);
        if (oneInventory) {
          expect(got).toEqual(new Map(atRead[0]!.map((l) => [l.id, expectedOffer(l)])));
          return;
        }
        // Each listing reported with a content it had at a moment a page was read.
        for (const [id, offer] of got) {
          const had = atRead.flatMap((listings) => listings.filter((l) => l.id === id).map(expectedOffer));
          expect(had, `listing ${id} as reported`).toContain(offer);
        }
        expect(got.size).toBe(atRead[0]!.length);
        // The blind spot: a sale and an addition between the same two reads.
        const blind = read.slice(1).some((to, i) => {
          const between = steps.slice(read[i]! + 1, to + 1);
          return between.some((s) => s.added) && between.some((s) => s.sold);
        });
        if (blind) return;
        // Otherwise no listing came or went while the pages were read: the ones reported are exactly those.
        for (const listings of atRead) expect([...got.keys()].sort()).toEqual(listings.map((l) => l.id).sort());
      }),
      { numRuns: Number(process.env.PF06_PAGES_RUNS ?? 1_000) },
    );
  });
});
