// Property tests of the Watchlist API against the real gateway and PostgreSQL: whatever body or
// path a client sends, the answer is never a 5xx; it is either a 2xx with a valid item that
// reflects what was sent, or a 4xx in the watchlist envelope, and a refused request stores
// nothing (no new row, no change of the stored item, no change-log entry). An accepted item's
// event is one the Live Availability parser accepts for its platform and region (the monitors
// scrape what is stored); events in the documented format are accepted, and clear violations of
// it (another host, another form) are refused as `event: ...`. A pf_08 item takes its region from
// the event URL's domain, and a non-empty row_filter is accepted only where offers have rows.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, newAccount, startTestGateway, type Reply, type TestAccount, type TestGateway } from '../support/harness.ts';
import {
  BOOLEANS,
  changeCount,
  createItem,
  dbRow,
  expectItem,
  ITEM_FIELDS,
  NULLABLE,
  rowCount,
  SERVER_ONLY,
  SETTABLE,
  TARGET_ONLY,
} from '../apis/watchlist/helpers.ts';
import type { WatchlistItem } from '../../src/apis/watchlist/schema.ts';
import { parseEventRef } from '../../src/platform/event-ref.ts';
import { isPlatformKey } from '../../src/platform/registry.ts';
import { rolesJsonProblem } from '../../src/webhooks/role-ids.ts';

const RUNS = 150;
const TIMEOUT = 60_000;

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway();
});

afterAll(async () => {
  await gw?.close();
});

// ---- arbitraries ---------------------------------------------------------------------------

/** Characters with a bias towards the awkward ones: NUL, lone surrogates, quotes, BOM, NBSP. */
const unit = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...'abcdXYZ0129 -_./'.split('')) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.constantFrom('\u0000', '\ud800', '\udfff', '😀', 'é', '\u00a0', '\ufeff', '"', '\\', '\n', '\t') },
);
const text = (maxLength = 24) => fc.string({ unit, maxLength });
const anyJson = fc.jsonValue({ maxDepth: 3, stringUnit: unit });

const PLATFORMS = ['pf_01', 'pf_02', 'pf_03', 'pf_04', 'pf_05', 'pf_06', 'pf_07', 'pf_08', 'pf_09', 'pf_10', 'pf_11'];
/** Platforms whose event id is a full event URL (spec 2.6); the others take a bare id. */
const URL_PLATFORMS = ['pf_02', 'pf_03', 'pf_04', 'pf_07', 'pf_08', 'pf_11'];

// ---- events (spec 2.6, in the shapes of docs/live-availability.md's "Event ids" table) ---------

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const chars = (alphabet: string, minLength: number, maxLength: number) =>
  fc.string({ unit: fc.constantFrom(...alphabet.split('')), minLength, maxLength });
const eventUrl = (hosts: string[], path: fc.Arbitrary<string>) =>
  fc.tuple(fc.constantFrom('https', 'http'), fc.constantFrom(...hosts), path).map(([scheme, host, p]) => `${scheme}://${host}${p}`);

/** Platforms whose offers carry rows (spec 2.6: seat maps, SeatMapSections). */
const ROW_PLATFORMS = ['pf_01', 'pf_02'];

/** pf_08's domains and the region each one means. */
const PF08_DOMAINS: [string, string][] = [
  ['pf08.example.com.au', 'au'],
  ['pf08.example.co.nz', 'nz'],
  ['pf08.example.sg', 'sg'],
  ['pf08.example.com.my', 'my'],
  ['pf08.example.co.uk', 'uk'],
  ['pf08.example.com.ph', 'ph'],
];

/** A valid event of each platform with a region the platform serves (any case). */
const validTargetOf: Record<string, fc.Arbitrary<{ event: string; region: string }>> = {
  pf_01: fc.record({ event: chars(ALNUM, 16, 16), region: fc.constantFrom('UK', 'us', 'De', 'za') }),
  pf_02: fc.record({
    event: eventUrl(['www.pf02.example', 'pf02.example'], fc.tuple(chars(LOWER, 2, 2), chars(`${ALNUM}-`, 3, 40)).map(([l, id]) => `/${l}/event/${id}`)),
    region: fc.constantFrom('uk', 'US', 'nu', 'de'),
  }),
  pf_03: fc.record({
    event: eventUrl(['pf03.example', 'www.pf03.example'], chars(`${ALNUM}-`, 1, 60).map((slug) => `/e/${slug}`)),
    region: fc.constantFrom('us', 'FR', 'abcdefgh'),
  }),
  pf_04: fc.record({
    event: eventUrl(['www.pf04.example', 'pf04.example'], fc.tuple(chars(LOWER, 2, 2), chars(DIGITS, 3, 12)).map(([l, n]) => `/${l}/tickets/${n}`)),
    region: fc.constantFrom('De', 'it', 'uk', 'hu'),
  }),
  pf_05: fc.record({ event: chars(DIGITS, 6, 10), region: fc.constantFrom('it', 'IT') }),
  pf_06: fc.record({ event: chars(ALNUM, 8, 8), region: fc.constantFrom('fr', 'us') }),
  pf_07: fc.record({
    event: eventUrl(
      ['www.pf07.example', 'www.pf07.example.co.uk'],
      fc.tuple(chars(`${LOWER}${DIGITS}-`, 0, 30), chars(DIGITS, 3, 12)).map(([slug, n]) => `/event/${slug ? `${slug}-` : ''}${n}`),
    ),
    region: fc.constantFrom('uk', 'us', 'fr'),
  }),
  pf_08: fc
    .tuple(fc.constantFrom(...PF08_DOMAINS), fc.constantFrom('https', 'http'), chars(`${ALNUM}-`, 3, 40), fc.boolean())
    .map(([[host, region], scheme, id, upper]) => ({ event: `${scheme}://${host}/event/${id}`, region: upper ? region.toUpperCase() : region })),
  pf_09: fc.record({ event: chars(DIGITS, 4, 9), region: fc.constantFrom('cz', 'sk') }),
  pf_10: fc.record({ event: fc.uuid().map((u) => u.toLowerCase()), region: fc.constantFrom('fr', 'us') }),
  pf_11: fc.record({ event: eventUrl(['tickets.pf11.example'], chars(DIGITS, 1, 12).map((n) => `/event/${n}`)), region: fc.constantFrom('us', 'nl') }),
};

/** Mostly nothing around the event, now and then whitespace the server trims. */
const padding = fc.oneof({ weight: 6, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom(' ', '\n', '\t ', '  ') });

/** A target the watchlist must accept: a platform, a valid event of it, a region it serves. */
const validTarget = fc
  .constantFrom(...PLATFORMS)
  .chain((website) =>
    fc.tuple(validTargetOf[website]!, padding, padding).map(([t, before, after]) => ({ website, event: `${before}${t.event}${after}`, region: t.region })),
  );

/** Hosts no platform owns, internal addresses among them. */
const FOREIGN_EVENTS = [
  'http://127.0.0.1/e/1',
  'http://localhost/event/1',
  'http://[::1]/event/1',
  'http://169.254.169.254/latest/meta-data/',
  'http://10.0.0.1/de/tickets/883120',
  'https://pf03.example.evil.test/e/1',
  'https://evil.test/e/1',
  'file:///etc/passwd',
  'javascript:alert(1)',
];

/**
 * An event that is clearly not valid for `website`: a URL on another platform's host or on no
 * platform's, a URL on a bare-id platform, a bare id on a URL platform, or the platform's own URL
 * with credentials, a port, another scheme or another path.
 */
function wrongEventFor(website: string): fc.Arbitrary<string> {
  const otherUrls = URL_PLATFORMS.filter((p) => p !== website);
  const choices: fc.Arbitrary<string>[] = [
    fc.constantFrom(...otherUrls).chain((p) => validTargetOf[p]!.map((t) => t.event)),
    fc.constantFrom(...FOREIGN_EVENTS),
  ];
  const own = validTargetOf[website]!.map((t) => t.event);
  if (URL_PLATFORMS.includes(website)) {
    choices.push(
      chars(ALNUM, 1, 20),
      own.map((e) => e.replace('://', '://user:pw@')),
      own.map((e) => e.replace(/^(https?:\/\/[^/]+)/, '$1:8443')),
      own.map((e) => e.replace(/^https?:/, 'ftp:')),
      own.map((e) => e.replace(/^(https?:\/\/[^/]+)/, '$1.evil.test')),
      own.map((e) => e.replace(/^(https?:\/\/[^/]+)\/.*$/, '$1/nope/1')),
    );
  } else {
    choices.push(own.map((id) => `https://${website.replace('_', '')}.example/event/${id}`), own.map((id) => `${id}/x`));
  }
  return fc.oneof(...choices);
}

/** Valid events of any platform (so usually of another platform than the body's), and random text. */
const anyEvent = fc.oneof(
  { weight: 3, arbitrary: validTarget.map((t) => t.event) },
  { weight: 1, arbitrary: fc.constantFrom(...FOREIGN_EVENTS) },
  { weight: 1, arbitrary: text(40) },
  { weight: 1, arbitrary: fc.webUrl() },
);

const isoDay = fc
  .date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2100-12-31T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10));

function pad(n: number, width: number): string {
  return String(Math.abs(n)).padStart(width, '0');
}

/** RFC 3339 timestamps over the whole four-digit-year range with offsets up to ±18h. */
const timestamp = fc
  .tuple(
    fc.date({ min: new Date('0001-01-02T00:00:00Z'), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true }),
    fc.integer({ min: -18 * 60, max: 18 * 60 }),
    fc.boolean(),
    fc.boolean(),
  )
  .map(([d, offsetMin, zulu, millis]) => {
    const off = zulu ? 0 : offsetMin;
    const local = new Date(d.getTime() + off * 60_000);
    const y = local.getUTCFullYear();
    const base = `${pad(y, 4)}-${pad(local.getUTCMonth() + 1, 2)}-${pad(local.getUTCDate(), 2)}T${pad(local.getUTCHours(), 2)}:${pad(local.getUTCMinutes(), 2)}:${pad(local.getUTCSeconds(), 2)}`;
    const frac = millis ? `.${pad(local.getUTCMilliseconds(), 3)}` : '';
    const zone = zulu ? 'Z' : `${off < 0 ? '-' : '+'}${pad(Math.trunc(Math.abs(off) / 60), 2)}:${pad(Math.abs(off) % 60, 2)}`;
    return base + frac + zone;
  });

const money = fc.oneof(
  fc.integer({ min: 0, max: 99_999_999 }).map((c) => c / 100),
  fc.integer({ min: 0, max: 2_000 }),
  fc.double({ min: 0, max: 2e7, noNaN: true }),
  fc.constantFrom(0, 0.01, 999_999.99, 1_000_000, 1e7, 1e7 + 1, 1.005, 0.1 + 0.2, -0.01),
);
const id = fc.oneof(fc.integer({ min: -2, max: 1_000 }), fc.constantFrom(Number.MAX_SAFE_INTEGER, 2 ** 53, 1e20, 0.5));
/** Discord role ids as strings (issue 24): 17-20 digits, and a few near misses. */
const snowflake = fc.bigInt({ min: 10n ** 16n, max: 10n ** 20n - 1n }).map(String);
const roleIdLike = fc.oneof(id, snowflake, fc.constantFrom('1234567890123456', '123456789012345678901', '0112233445566778899', '-112233445566778899'));

/** A valid-looking value of each field, often at or past the edges. */
const good: Record<string, fc.Arbitrary<unknown>> = {
  website: fc.constantFrom(...PLATFORMS, 'pf_12', 'PF_01', ''),
  event: anyEvent,
  region: fc.constantFrom('us', 'UK', 'de', 'It', 'cz', 'au', ' us ', 'xx', 'abcdefghi', 'u', ''),
  min_price_filter: money,
  max_price_filter: money,
  min_avg_price_threshold: money,
  max_avg_price_threshold: money,
  stock_threshold_filter: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: -10, max: 2_000_000 })),
  stock_threshold_filter_max: fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: -10, max: 2_000_000 })),
  seat_quantity: fc.integer({ min: -2, max: 105 }),
  priority: fc.integer({ min: -2, max: 1_005 }),
  section: text(),
  keywords: fc.array(text(8), { maxLength: 6 }),
  date_filter: fc.record({ from: fc.option(isoDay), to: fc.option(isoDay) }, { requiredKeys: [] }),
  row_filter: fc.array(text(4), { maxLength: 6 }),
  change_type: fc.constantFrom('stock_increase', 'price_decrease', 'price_increase', 'price_change'),
  ...Object.fromEntries(BOOLEANS.map((b) => [b, fc.boolean()])),
  muted_until: fc.oneof(timestamp, isoDay),
  cooldown_seconds: fc.oneof(fc.integer({ min: -5, max: 90_000 }), fc.constantFrom(0, 86_400, 86_401, 0.5)),
  mb_did: text(),
  roles_json: anyJson,
  webhook_setting_id: id,
  role_id: roleIdLike,
  website_id: id,
  notes: text(60),
};

/** Clean text: no NUL, no lone surrogates, not blank. */
const cleanText = (maxLength: number) =>
  fc.string({ unit: fc.constantFrom(...'abcdXYZ0129 -_./é😀'.split(/(?:)/u)), minLength: 1, maxLength }).filter((t) => t.trim() !== '');
const cents = (min: number, max: number) => fc.integer({ min, max }).map((c) => c / 100);
const orderedDays = fc.tuple(isoDay, isoDay).map(([a, b]) => (a <= b ? [a, b] : [b, a]));

/**
 * Values inside the documented domain of each field, chosen so that no two clash under the range
 * rules (every minimum range lies below every maximum range), so clean bodies are accepted.
 */
const valid: Record<string, fc.Arbitrary<unknown>> = {
  min_price_filter: cents(0, 49_999_999),
  max_price_filter: cents(50_000_000, 99_999_999),
  min_avg_price_threshold: cents(0, 99_999),
  max_avg_price_threshold: cents(100_000, 99_999_999),
  stock_threshold_filter: fc.integer({ min: 0, max: 100 }),
  stock_threshold_filter_max: fc.integer({ min: 100, max: 1_000_000 }),
  seat_quantity: fc.integer({ min: 1, max: 100 }),
  priority: fc.integer({ min: 0, max: 1_000 }),
  section: cleanText(40),
  keywords: fc.array(cleanText(20), { maxLength: 5 }),
  date_filter: orderedDays.chain(([from, to]) =>
    fc.record({ from: fc.constantFrom(from, null), to: fc.constantFrom(to, null) }, { requiredKeys: [] }),
  ),
  row_filter: fc.array(cleanText(5), { maxLength: 5 }),
  change_type: fc.constantFrom('stock_increase', 'price_decrease', 'price_increase'),
  ...Object.fromEntries(BOOLEANS.map((b) => [b, fc.boolean()])),
  muted_until: timestamp.filter((t) => !/^0001-01-01|^9999-12-31|[+-](1[6-9]|2\d):\d\d$/.test(t)),
  cooldown_seconds: fc.integer({ min: 0, max: 86_400 }),
  mb_did: cleanText(40),
  // Any JSON, but for numbers past 2^53 - 1 where role ids are read (role-id.test.ts): those are refused.
  roles_json: fc.jsonValue({ maxDepth: 3 }).filter((v) => rolesJsonProblem(v) === null),
  // An id must name an active webhook of the account (issue 15): test/apis/webhooks/items.test.ts.
  webhook_setting_id: fc.constant(null),
  role_id: fc.oneof(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), snowflake),
  website_id: fc.integer({ min: 1, max: 1_000_000 }),
  notes: fc.string({ maxLength: 200 }),
};

/** A body's row_filter made acceptable for its platform: cleared where offers carry no rows. */
function rowsFit(body: Record<string, unknown>): Record<string, unknown> {
  const rows = body.row_filter;
  return Array.isArray(rows) && rows.length > 0 && !ROW_PLATFORMS.includes(body.website as string) ? { ...body, row_filter: [] } : body;
}

const cleanSettable = fc.record(
  Object.fromEntries(SETTABLE.map((f) => [f, fc.oneof({ weight: 15, arbitrary: valid[f]! }, { weight: 1, arbitrary: fc.constant(null) })])),
  { requiredKeys: [] },
);

/** Bodies of valid values but now and then a null (which not every field allows). */
const cleanCreateRecord = fc.tuple(validTarget, cleanSettable).map(([t, rest]) => ({ ...t, ...rest }));

/** Bodies that must be accepted: a valid target, valid values, null only where a field allows it. */
const validCreateRecord = fc
  .tuple(
    validTarget,
    fc.record(
      Object.fromEntries(
        SETTABLE.map((f) => [
          f,
          (NULLABLE as readonly string[]).includes(f) ? fc.oneof({ weight: 15, arbitrary: valid[f]! }, { weight: 1, arbitrary: fc.constant(null) }) : valid[f]!,
        ]),
      ),
      { requiredKeys: [] },
    ),
  )
  .map(([t, rest]) => rowsFit({ ...t, ...rest }));

/** Valid bodies but for an event that is clearly wrong for their platform. */
const wrongEventRecord = validCreateRecord.chain((body) =>
  wrongEventFor(body.website as string).map((event) => ({ ...body, event }) as Record<string, unknown>),
);

/** Strings a database or a JSON codec may choke on. */
const nastyString = fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udc00', '\udbff\udbff', ' ', '', '\ufeff', 'x'.repeat(2_100));

/** Values at and past the edges of one field, or of another type altogether. */
function edge(name: string): fc.Arbitrary<unknown> {
  const special: Record<string, fc.Arbitrary<unknown>> = {
    roles_json: fc.constantFrom(
      JSON.parse('{"__proto__":{"admin":true},"b":[1]}'),
      JSON.parse('[{"__proto__":5}]'),
      JSON.parse('['.repeat(150) + ']'.repeat(150)),
      { 'k\u0000': 1 },
      ['\ud800'],
      { big: 'x'.repeat(17_000) },
      { n: 1e308, m: -1e-300, z: 0 },
    ),
    muted_until: fc.constantFrom(
      '0000-01-01T00:00:00Z',
      '0001-01-01T00:00:00+01:00',
      '9999-12-31T23:59:59-05:00',
      '2030-01-01T00:00:00+16:00',
      '2030-01-01T00:00:00.123456789Z',
    ),
    min_price_filter: fc.constantFrom(1_000_000, 1e7, 1.005, 0.1 + 0.2, 5e-324),
    max_avg_price_threshold: fc.constantFrom(1_000_000, 9_999_999.99, 0.001),
  };
  return fc.oneof(
    { weight: 3, arbitrary: good[name]! },
    { weight: 2, arbitrary: special[name] ?? nastyString },
    { weight: 1, arbitrary: nastyString },
    { weight: 1, arbitrary: anyJson },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.array(nastyString, { maxLength: 3 }) },
  );
}

/** A clean body with exactly one field pushed to its edge. */
function mutated<T extends Record<string, unknown>>(base: fc.Arbitrary<T>, fields: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .tuple(base, fc.constantFrom(...fields))
    .chain(([body, f]) => edge(f).map((v) => ({ ...body, [f]: v }) as Record<string, unknown>));
}

/** Mostly a plausible value, sometimes null, sometimes any JSON at all (often the wrong type). */
function field(name: string): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 6, arbitrary: good[name]! },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: anyJson },
  );
}

const settableRecord = fc.record(Object.fromEntries(SETTABLE.map((f) => [f, field(f)])), { requiredKeys: [] });

/** Create bodies: real field names with right, wrong or null values, targets usually right. */
const createRecord = fc
  .tuple(
    validTarget.chain((valid) =>
      fc.record(
        {
          website: fc.oneof({ weight: 8, arbitrary: fc.constant(valid.website) }, { weight: 1, arbitrary: field('website') }),
          event: fc.oneof(
            { weight: 6, arbitrary: fc.constant(valid.event) },
            { weight: 2, arbitrary: text(30).filter((s) => s.trim().length > 0) },
            { weight: 1, arbitrary: field('event') },
          ),
          region: fc.oneof(
            { weight: 6, arbitrary: fc.constant(valid.region) },
            { weight: 2, arbitrary: fc.constantFrom('us', 'uk', 'de', 'it', 'cz') },
            { weight: 1, arbitrary: field('region') },
          ),
        },
        { requiredKeys: [] },
      ),
    ),
    settableRecord,
    extras(),
  )
  .map(([t, s, x]) => ({ ...t, ...s, ...x }));

/** PATCH bodies: mostly settable fields; now and then a target, server or unknown field. */
const patchRecord = fc.tuple(settableRecord, extras()).map(([s, x]) => ({ ...s, ...x }));

function extras(): fc.Arbitrary<Record<string, unknown>> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant({}) },
    {
      weight: 1,
      arbitrary: fc.dictionary(fc.oneof(fc.constantFrom(...SERVER_ONLY, ...TARGET_ONLY, 'deleted_at', '__proto__'), text(10)), anyJson, {
        maxKeys: 2,
      }),
    },
  );
}

/** Objects whose keys mix real field names with anything, values of any JSON type. */
const mixedObject = fc.dictionary(fc.oneof(fc.constantFrom(...ITEM_FIELDS), text(12)), anyJson, { maxKeys: 8 });

/** fc.object mapped to what JSON can carry (undefined dropped, NaN and Infinity to null, -0 to 0). */
const anythingAsJson = fc
  .object({ key: fc.oneof(fc.constantFrom(...ITEM_FIELDS), fc.string()), maxDepth: 3 })
  .map((o) => JSON.parse(JSON.stringify(o)) as unknown);

/** A POST body and what it must get: created, refused for its event, or either. */
type PostCase = { body: unknown; must: 'create' | 'refuse-event' | null };
const anyOutcome = (a: fc.Arbitrary<unknown>) => a.map((body): PostCase => ({ body, must: null }));
const postBodies = fc.oneof(
  { weight: 1, arbitrary: anyOutcome(anyJson) },
  { weight: 1, arbitrary: anyOutcome(createRecord) },
  { weight: 1, arbitrary: anyOutcome(cleanCreateRecord) },
  { weight: 2, arbitrary: validCreateRecord.map((body): PostCase => ({ body, must: 'create' })) },
  { weight: 1, arbitrary: wrongEventRecord.map((body): PostCase => ({ body, must: 'refuse-event' })) },
  { weight: 5, arbitrary: anyOutcome(mutated(cleanCreateRecord, [...TARGET_ONLY, ...SETTABLE])) },
  { weight: 1, arbitrary: anyOutcome(mixedObject) },
  { weight: 1, arbitrary: anyOutcome(anythingAsJson) },
);
const patchBodies = fc.oneof(
  { weight: 1, arbitrary: anyJson },
  { weight: 1, arbitrary: patchRecord },
  { weight: 2, arbitrary: cleanSettable },
  { weight: 5, arbitrary: mutated(cleanSettable, SETTABLE) },
  { weight: 1, arbitrary: mixedObject },
  { weight: 1, arbitrary: anythingAsJson },
);

/** Text that is rarely JSON: random characters, and JSON documents cut short or corrupted. */
const rawBodies = fc.oneof(
  fc.string({ unit, maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.tuple(fc.json({ maxDepth: 3 }), fc.nat()).map(([j, n]) => j.slice(0, j.length > 1 ? n % j.length : 0)),
  fc.tuple(fc.json({ maxDepth: 3 }), fc.nat(), fc.constantFrom('}', ',', '"', '\u0000', "'", ']')).map(([j, n, c]) => {
    const at = j.length ? n % j.length : 0;
    return j.slice(0, at) + c + j.slice(at);
  }),
);

// ---- checks --------------------------------------------------------------------------------

/** Never a 5xx; a 2xx is a valid item; a 4xx is exactly `{error: string}` or `{detail: string}`. */
function checkReply(r: Reply, success: number): void {
  expect(r.status, r.text).toBeLessThan(500);
  if (r.status < 300) {
    expect(r.status).toBe(success);
    expectItem(r.body);
    return;
  }
  expect([400, 404, 413]).toContain(r.status);
  const keys = Object.keys(r.body ?? {});
  expect(keys.length === 1 && (keys[0] === 'error' || keys[0] === 'detail'), r.text).toBe(true);
  expect(typeof r.body[keys[0]!]).toBe('string');
}

/** What the server sees of a JSON body: JSON.stringify then JSON.parse (drops -0, undefined). */
function asSent(body: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
}

/** The region a pf_08 event URL's domain stands for. */
function pf08Region(event: string): string {
  return PF08_DOMAINS.find(([host]) => new URL(event.trim()).hostname === host)![1];
}

/**
 * Each field that was sent comes back as sent (region lower-case, or for pf_08 its domain's; event
 * trimmed; times in UTC).
 */
function expectReflects(item: WatchlistItem, sent: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(sent)) {
    const got = item[k as keyof WatchlistItem];
    if (k === 'region') expect(got).toBe(item.website === 'pf_08' ? pf08Region(item.event) : (v as string).trim().toLowerCase());
    else if (k === 'event') expect(got).toBe((v as string).trim());
    else if (k === 'muted_until' && v !== null) expect(Date.parse(got as string), `${k}: ${String(v)}`).toBe(Date.parse(v as string));
    else expect(got, `${k}: ${JSON.stringify(v)}`).toEqual(v);
  }
}

function isJsonText(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

// ---- properties ----------------------------------------------------------------------------

describe('POST /watchlist with arbitrary bodies', () => {
  let acct: TestAccount;
  beforeAll(async () => {
    acct = await newAccount(gw.db);
  });

  it(
    'answers a valid item reflecting the body, or a 4xx that stores nothing',
    async () => {
      let created = 0;
      await fc.assert(
        fc.asyncProperty(postBodies, async ({ body, must }) => {
          const rows = await rowCount(gw.db, acct.accountId);
          const changes = await changeCount(gw.db, acct.accountId);
          const r = await call(gw.url, 'POST', '/watchlist', { key: acct.key, body });
          checkReply(r, 201);
          if (must === 'create') expect(r.status, r.text).toBe(201);
          if (must === 'refuse-event') {
            expect(r.status, r.text).toBe(400);
            expect(r.body.error, r.text).toMatch(/^event: /);
          }
          if (r.status === 201) {
            created++;
            expectReflects(r.body, asSent(body));
            // Only what the Live Availability parser accepts is kept: the monitors scrape it.
            expect(isPlatformKey(r.body.website)).toBe(true);
            expect(parseEventRef(r.body.website, r.body.event, r.body.region).ok, `${r.body.website} ${r.body.event} ${r.body.region}`).toBe(true);
            expect(r.body.client_id).toBe(acct.accountId);
            expect(await rowCount(gw.db, acct.accountId)).toBe(rows + 1);
            expect(await changeCount(gw.db, acct.accountId)).toBe(changes + 1);
            // Read back through the API: what was answered is what was stored.
            expect((await call(gw.url, 'GET', `/watchlist/${r.body.id}`, { key: acct.key })).body).toEqual(r.body);
            expect((await call(gw.url, 'DELETE', `/watchlist/${r.body.id}`, { key: acct.key })).status).toBe(204);
          } else {
            expect(r.status).toBe(400);
            expect(await rowCount(gw.db, acct.accountId)).toBe(rows);
            expect(await changeCount(gw.db, acct.accountId)).toBe(changes);
          }
        }),
        { numRuns: RUNS },
      );
      // The generators must reach the success path too, or the property says little.
      expect(created).toBeGreaterThan(0);
    },
    TIMEOUT,
  );
});

describe('PATCH /watchlist/{id} with arbitrary bodies', () => {
  let acct: TestAccount;
  let current: WatchlistItem;
  beforeAll(async () => {
    acct = await newAccount(gw.db);
    current = await createItem(gw.url, acct.key);
  });

  it(
    'answers the updated item changing only what was sent, or a 4xx that changes nothing',
    async () => {
      let updated = 0;
      await fc.assert(
        fc.asyncProperty(patchBodies, async (body) => {
          const before = await dbRow(gw.db, current.id);
          const changes = await changeCount(gw.db, acct.accountId);
          const r = await call(gw.url, 'PATCH', `/watchlist/${current.id}`, { key: acct.key, body });
          checkReply(r, 200);
          if (r.status === 200) {
            updated++;
            const sent = asSent(body);
            expectReflects(r.body, sent);
            for (const f of ITEM_FIELDS) {
              if (!(f in sent) && f !== 'updated_at') expect(r.body[f], f).toEqual(current[f]);
            }
            expect(r.body.updated_at >= current.updated_at).toBe(true);
            expect((await call(gw.url, 'GET', `/watchlist/${current.id}`, { key: acct.key })).body).toEqual(r.body);
            current = r.body;
          } else {
            expect(r.status).toBe(400);
            expect(await dbRow(gw.db, current.id)).toEqual(before);
            expect(await changeCount(gw.db, acct.accountId)).toBe(changes);
          }
        }),
        { numRuns: RUNS },
      );
      expect(updated).toBeGreaterThan(0);
    },
    TIMEOUT,
  );
});

describe('raw bodies that are mostly not JSON', () => {
  let acct: TestAccount;
  let item: WatchlistItem;
  beforeAll(async () => {
    acct = await newAccount(gw.db);
    item = await createItem(gw.url, acct.key);
  });

  it(
    'answers 400 {detail} to text that is not JSON, on POST and PATCH, and stores nothing',
    async () => {
      await fc.assert(
        fc.asyncProperty(rawBodies, async (text) => {
          // What the server decodes: the UTF-8 the client sends (lone surrogates become U+FFFD).
          const decoded = Buffer.from(text, 'utf8').toString('utf8');
          const json = isJsonText(decoded);
          const rows = await rowCount(gw.db, acct.accountId);
          const before = await dbRow(gw.db, item.id);
          const headers = { 'content-type': 'application/json' };
          const post = await call(gw.url, 'POST', '/watchlist', { key: acct.key, raw: text, headers });
          const patch = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, raw: text, headers });
          for (const r of [post, patch]) {
            checkReply(r, r === post ? 201 : 200);
            if (!json && decoded.trim() !== '') {
              expect(r.status).toBe(400);
              expect(Object.keys(r.body)).toEqual(['detail']);
            }
            if (!json) expect(r.status).toBe(400);
          }
          if (post.status === 201) {
            await call(gw.url, 'DELETE', `/watchlist/${post.body.id}`, { key: acct.key });
          } else {
            expect(await rowCount(gw.db, acct.accountId)).toBe(rows);
          }
          if (patch.status !== 200) expect(await dbRow(gw.db, item.id)).toEqual(before);
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT,
  );
});

describe('arbitrary ids under /watchlist/', () => {
  let stranger: TestAccount;
  let owner: TestAccount;
  let owned: WatchlistItem;
  beforeAll(async () => {
    owner = await newAccount(gw.db);
    owned = await createItem(gw.url, owner.key);
    stranger = await newAccount(gw.db);
  });

  const segment = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary', maxLength: 12 }),
    fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String),
    fc.integer({ min: 0, max: 5_000 }).map(String),
    fc.constantFrom('health', 'health/', '1/2', '', ' 1', '1 ', '+1', '1e3', '0x10', '١٢٣', '9007199254740993', '9999999999999999'),
  );

  it(
    'never answers 5xx, and never reaches an item of another account',
    async () => {
      const before = await dbRow(gw.db, owned.id);
      const changes = await changeCount(gw.db, owner.accountId);
      await fc.assert(
        fc.asyncProperty(segment, fc.constantFrom('GET', 'PATCH', 'DELETE'), async (s, method) => {
          const path = `/watchlist/${encodeURIComponent(s)}`;
          const r = await call(gw.url, method, path, { key: stranger.key, body: method === 'PATCH' ? { notes: 'stranger' } : undefined });
          expect(r.status, `${method} ${path}: ${r.text}`).toBeLessThan(500);
          if (r.status === 200) {
            // Only the list (a trailing slash) and the health probe can succeed: the stranger owns nothing.
            expect(method).toBe('GET');
            expect([[], { status: 'ok' }]).toContainEqual(r.body);
          } else {
            expect(r.status).toBe(404);
            const e = r.body?.error;
            expect(typeof e === 'string' || (typeof e?.code === 'string' && e.code === 'not_found'), r.text).toBe(true);
          }
        }),
        { numRuns: RUNS },
      );
      // The owner's item, whose id is among the numbers tried, was never touched.
      const hit = await call(gw.url, 'PATCH', `/watchlist/${owned.id}`, { key: stranger.key, body: { notes: 'stranger' } });
      expect(hit.status).toBe(404);
      expect(await dbRow(gw.db, owned.id)).toEqual(before);
      expect(await changeCount(gw.db, owner.accountId)).toBe(changes);
    },
    TIMEOUT,
  );

  it('answers malformed percent-encoding without a 5xx', async () => {
    for (const raw of ['%', '%zz', '%E0%A4%A', '%00', '%2F', '..%2F1', '1%00', '%C0%AF']) {
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        const r = await call(gw.url, method, `/watchlist/${raw}`, { key: stranger.key, body: method === 'PATCH' ? {} : undefined });
        expect(r.status, `${method} ${raw}: ${r.text}`).toBeLessThan(500);
      }
    }
  });
});
