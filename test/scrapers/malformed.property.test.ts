// Property: however a platform's real page or answer is damaged (an element or attribute gone,
// a JSON field deleted or replaced by any JSON value, text replaced), its adapter either reads
// something that passes the validity checks or fails with a ScrapeFailure: never a TypeError or
// another crash, and never a negative, fractional or non-finite number in what it reports.
import { load } from 'cheerio';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScrapeFailure, type FetchedPage, type OfferSection, type PageFetcher, type ScrapeData, type SeatMapSection } from '../../src/scrapers/types.ts';
import { HTTP_PLATFORMS, startHarness, type Harness, type HttpPlatform } from './platform-harness.ts';

const INVENTORY = [
  { name: 'Floor', price: 120.5, stock: 6, ticket_type: 'resale', presale: true },
  { name: 'Balcony', price: 45, stock: 0 },
  { name: 'Balcony', price: 55.25, stock: 9, accessible: true },
];

type Recorded = { kind: 'html' | 'json'; page: FetchedPage & { data?: unknown } };

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ timeoutMs: 5_000 });
});
afterAll(async () => {
  await h?.close();
});

/** Every path to a value inside a JSON document (the root excluded). */
function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return entries.flatMap(([k, v]) => [[...prefix, k], ...paths(v, [...prefix, k])]);
}

const DELETE = Symbol('delete');

function mutateJson(data: unknown, path: (string | number)[], replacement: unknown): unknown {
  const copy = structuredClone(data) as Record<string | number, unknown>;
  let parent = copy;
  for (const step of path.slice(0, -1)) parent = parent[step] as Record<string | number, unknown>;
  const last = path.at(-1)!;
  if (replacement === DELETE) {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else {
    parent[last] = replacement;
  }
  return copy;
}

type HtmlDamage = { element: number; action: 'remove' | 'empty' | 'text' | 'drop-attr' | 'set-attr'; text: string };

function mutateHtml(body: string, damage: HtmlDamage): string {
  const $ = load(body);
  const elements = $('body *').toArray();
  if (elements.length === 0) return body;
  const el = $(elements[damage.element % elements.length]!);
  const attrs = Object.keys(el.attr() ?? {});
  const attr = attrs.length ? attrs[damage.element % attrs.length]! : 'class';
  switch (damage.action) {
    case 'remove':
      el.remove();
      break;
    case 'empty':
      el.empty();
      break;
    case 'text':
      el.text(damage.text);
      break;
    case 'drop-attr':
      el.removeAttr(attr);
      break;
    case 'set-attr':
      el.attr(attr, damage.text);
      break;
  }
  return $.html();
}

/** What any successful scrape must satisfy, however odd the page. */
function checkValid(data: ScrapeData): void {
  for (const section of Object.values(data.sections) as (OfferSection | SeatMapSection)[]) {
    expect(Number.isSafeInteger(section.stock) && section.stock >= 0).toBe(true);
    const items: { price: number; quantity?: number }[] = 'seats' in section ? [...section.seats, ...section.offers] : section.offers;
    for (const item of items) {
      expect(Number.isFinite(item.price) && item.price >= 0).toBe(true);
      if (item.quantity !== undefined) expect(Number.isSafeInteger(item.quantity) && item.quantity > 0).toBe(true);
    }
    if (items.length > 0) expect(section.min_price).toBe(Math.min(...items.map((i) => i.price)));
  }
}

async function outcome(promise: Promise<ScrapeData>): Promise<void> {
  try {
    checkValid(await promise);
  } catch (err) {
    if (!(err instanceof ScrapeFailure)) throw err;
  }
}

describe('damaged pages never crash an adapter', () => {
  it.each(HTTP_PLATFORMS)('%s', async (platform: HttpPlatform) => {
    const ref = await h.put(platform, 900, { sections: INVENTORY, currency: 'EUR' });
    // Record what the adapter fetches from the real simulator...
    const recorded = new Map<string, Recorded>();
    const recorder: PageFetcher = {
      html: async (url, init) => {
        const page = await h.http.html(url, init);
        recorded.set(url, { kind: 'html', page });
        return page;
      },
      json: async (url, init) => {
        const page = await h.http.json(url, init);
        recorded.set(url, { kind: 'json', page });
        return page;
      },
    };
    await h.adapter(platform, recorder).scrape(ref);
    const urls = [...recorded.keys()];

    // ...then replay it with one piece damaged.
    const damage = fc.record({
      url: fc.nat({ max: urls.length - 1 }),
      path: fc.nat(),
      replacement: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant(DELETE)),
      html: fc.record({ element: fc.nat(), action: fc.constantFrom('remove', 'empty', 'text', 'drop-attr', 'set-attr'), text: fc.oneof(fc.string(), fc.constantFrom('-1', '1.5', 'NaN', '1e309', 'Sold out', '€-3.00')) }),
    });
    await fc.assert(
      fc.asyncProperty(damage, async (d) => {
        const target = urls[d.url]!;
        const replay: PageFetcher = {
          html: async (url, init) => {
            const rec = recorded.get(url);
            // A damaged page can send the adapter where the recording never went (a page count
            // raised from 1 to 2): the simulator answers that, as the platform would.
            if (!rec) return h.http.html(url, init);
            const body = url === target ? mutateHtml(rec.page.body, d.html as HtmlDamage) : rec.page.body;
            return { status: 200, url, body, $: load(body) };
          },
          json: async (url, init) => {
            const rec = recorded.get(url);
            if (!rec) return h.http.json(url, init);
            if (url !== target) return { status: 200, url, body: rec.page.body, data: rec.page.data };
            const all = paths(rec.page.data);
            const data = all.length ? mutateJson(rec.page.data, all[d.path % all.length]!, d.replacement) : d.replacement === DELETE ? undefined : d.replacement;
            return { status: 200, url, body: JSON.stringify(data) ?? '', data };
          },
        };
        await outcome(h.adapter(platform, replay).scrape(ref));
      }),
      { numRuns: Number(process.env.DAMAGE_RUNS ?? 150) },
    );

    // Everywhere, the value fast-check once found only by chance: an object whose toString is
    // not a function, so that String() of it throws. At every place of every JSON answer.
    const hostile: unknown = JSON.parse('{"toString":[]}');
    for (const [target, rec] of recorded) {
      if (rec.kind !== 'json') continue;
      for (const place of paths(rec.page.data)) {
        const data = mutateJson(rec.page.data, place, hostile);
        const replay: PageFetcher = {
          html: async (url) => {
            const r = recorded.get(url)!;
            return { status: 200, url, body: r.page.body, $: load(r.page.body) };
          },
          json: async (url) => {
            const r = recorded.get(url)!;
            return url === target ? { status: 200, url, body: JSON.stringify(data), data } : { status: 200, url, body: r.page.body, data: r.page.data };
          },
        };
        await outcome(h.adapter(platform, replay).scrape(ref));
      }
    }
  });
});
