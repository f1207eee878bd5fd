// pf_06's listings in the simulator: each keeps its id while the inventory around it changes, the
// pages say how many pages and listings there are, and `moves` moves the listings between pages
// right after a page 1 is served (docs/simulator.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ empty: true });
});
afterAll(async () => {
  await sim?.close();
});

const control = (method: string, path: string, body?: unknown) =>
  fetch(`${sim.url}/_sim${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

interface Page {
  listings: { id: string; quantity: number }[];
  total_pages: number;
  total_listings: number;
}
const page = async (key: string, n: number): Promise<Page> => (await (await fetch(`${sim.baseUrls.pf_06}/v1/events/${key}/listings?region=us&page=${n}`)).json()) as Page;
const lots = (p: Page) => p.listings.map((l) => `${l.id}:${l.quantity}`);

// 9 tickets in lots of four, then 200: 3 + 50 listings, two pages.
const SECTIONS = [
  { name: 'Floor', price: 100, stock: 9 },
  { name: 'Balcony', price: 50, stock: 200 },
];

describe('pf_06 listings', () => {
  it('numbers a section lots from its last, so lots added or sold at its front renumber no other', async () => {
    await control('PUT', '/pf_06/events/ids-1', { region: 'us', sections: SECTIONS });
    const first = await page('ids-1', 1);
    expect(first).toMatchObject({ total_pages: 2, total_listings: 53 });
    expect(lots(first).slice(0, 4)).toEqual(['ids-1-1-3:4', 'ids-1-1-2:4', 'ids-1-1-1:1', 'ids-1-2-50:4']);
    await control('PUT', '/pf_06/events/ids-1', { region: 'us', sections: [{ ...SECTIONS[0], stock: 13 }, SECTIONS[1]] });
    expect(lots(await page('ids-1', 1)).slice(0, 4)).toEqual(['ids-1-1-4:4', 'ids-1-1-3:4', 'ids-1-1-2:4', 'ids-1-1-1:1']);
  });

  it.each([
    // Floor's new lot first of all: Balcony's lot 4, page 1's last, is page 2's first too.
    ['insert_front', 13, 54, 'ids-2-1-4:4', ['ids-2-2-4:4', 'ids-2-2-3:4', 'ids-2-2-2:4', 'ids-2-2-1:4']],
    // Floor's lot 3 sold: Balcony's lot 3, page 2's first, moved onto page 1.
    ['remove_front', 5, 52, 'ids-2-1-2:4', ['ids-2-2-2:4', 'ids-2-2-1:4']],
  ] as const)('%s moves the listings one place right after page 1 is served, for `reads` reads', async (move, floorAfter, totalAfter, frontAfter, secondAfter) => {
    const put = await control('PUT', '/pf_06/events/ids-2', { region: 'us', sections: SECTIONS, moves: { move, reads: 1 } });
    expect(await put.json()).toMatchObject({ moves: { move, reads: 1 } });
    const first = await page('ids-2', 1);
    expect(first).toMatchObject({ total_pages: 2, total_listings: 53 });
    expect(lots(first).slice(0, 4)).toEqual(['ids-2-1-3:4', 'ids-2-1-2:4', 'ids-2-1-1:1', 'ids-2-2-50:4']);
    expect(lots(first).at(-1)).toBe('ids-2-2-4:4');
    const second = await page('ids-2', 2);
    expect(second).toMatchObject({ total_pages: 2, total_listings: totalAfter });
    expect(lots(second)).toEqual(secondAfter);
    const state = await (await control('GET', '/pf_06/events/ids-2')).json();
    expect(state).toMatchObject({ moves: { move, reads: 0 }, sections: [{ name: 'Floor', stock: floorAfter }, { name: 'Balcony', stock: 200 }] });
    // Counted down: the next read finds the moved inventory and moves nothing more.
    expect(lots(await page('ids-2', 1))[0]).toBe(frontAfter);
    expect(await page('ids-2', 2)).toEqual(second);
  });

  it('refuses a move it does not know, and `moves` on its own is null', async () => {
    expect((await control('PUT', '/pf_06/events/ids-3', { region: 'us', moves: { move: 'shuffle' } })).status).toBe(400);
    expect(await (await control('PUT', '/pf_06/events/ids-3', { region: 'us' })).json()).toMatchObject({ moves: null });
  });
});
