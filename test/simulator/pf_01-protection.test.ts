// pf_01's anti-bot protection in the simulator (issue 23): the session cookie every page sets,
// the JavaScript challenge that changes on every load, api/session trading its answer for a token
// bound to the cookie and the user agent, the data arms refusing everything else with the
// challenge marker, the `changed` redesign, the token carried in a cookie, the front page's own
// data request, the control API and the bounded maps. Spoken to over loopback HTTP as a scraper
// would; the challenge is run in node:vm (a test may, the service never does). Last, a real
// Chromium shows the page renders in every mode, keeping its token in its script only (issue 37:
// no sessionStorage key, no data-session attribute, nothing kept for a scraper).
import vm from 'node:vm';
import fc from 'fast-check';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_ARGS } from '../../src/scrapers/browser-pages.ts';
import { generateChallenge, Pf01Protection } from '../../src/simulator/platforms/pf_01-protection.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { simEventInputSchema } from '../../src/simulator/state.ts';

const UA = 'Mozilla/5.0 (X11; Linux x86_64) pf01-protection-test';
const MARKER = { error: 'challenge_required', challenge: '/pf_01/' };
const COOKIE = /^pf01_sid=([0-9a-f]{32}); Path=\/pf_01; HttpOnly; SameSite=Lax$/;

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ empty: true });
});
afterAll(async () => {
  await sim?.close();
});

let serial = 0;
function putEvent(fields: Record<string, unknown> = {}): string {
  const key = `Pf01Guard${String(++serial).padStart(7, '0')}`;
  sim.store.put('pf_01', key, simEventInputSchema.parse({ region: 'uk', sections: [{ name: 'Floor', price: 10, stock: 3 }], ...fields }));
  return key;
}

/** Runs a page's challenge script as the browser would, and returns what it computes. */
function solve(code: string): number {
  const context: { window: { __pf01Challenge?: () => number } } = { window: {} };
  vm.runInNewContext(code, context, { timeout: 1_000 });
  return context.window.__pf01Challenge!();
}

interface Loaded {
  status: number;
  setCookie: string | null;
  /** `pf01_sid=...`, to send back. */
  cookie: string;
  sid: string;
  code: string;
  html: string;
}

/** Loads an HTML page of pf_01 (the event page, or the front page for `/`). */
async function load(path: string, options: { cookie?: string; ua?: string } = {}): Promise<Loaded> {
  const res = await fetch(`${sim.baseUrls.pf_01}${path}`, { headers: { 'user-agent': options.ua ?? UA, ...(options.cookie ? { cookie: options.cookie } : {}) } });
  const html = await res.text();
  const setCookie = res.headers.get('set-cookie');
  const sid = setCookie ? COOKIE.exec(setCookie)?.[1] ?? '' : '';
  const code = /<script id="pf01-challenge">([\s\S]*?)<\/script>/.exec(html)?.[1] ?? '';
  return { status: res.status, setCookie, cookie: `pf01_sid=${sid}`, sid, code, html };
}

function postSession(body: unknown, options: { cookie?: string; ua?: string } = {}): Promise<Response> {
  return fetch(`${sim.baseUrls.pf_01}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': options.ua ?? UA, ...(options.cookie ? { cookie: options.cookie } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** A page load and its answered challenge: the cookie and the token a browser ends up with. */
async function session(key: string, options: { ua?: string; field?: string } = {}): Promise<{ cookie: string; token: string; expires_at: string }> {
  const page = await load(`/event/${key}?region=uk`, { ua: options.ua });
  expect(page.status).toBe(200);
  const res = await postSession({ [options.field ?? 'answer']: solve(page.code) }, { cookie: page.cookie, ua: options.ua });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { token: string; expires_at: string };
  return { cookie: page.cookie, ...body };
}

const ARMS = {
  v2: (key: string) => `/api/v2/events/${key}/seats?region=uk`,
  v1: (key: string) => `/api/v1/events/${key}/availability?region=uk`,
};

function arm(which: 'v1' | 'v2', key: string, headers: Record<string, string | undefined>): Promise<Response> {
  const sent = Object.fromEntries(Object.entries({ 'user-agent': UA, ...headers }).filter(([, v]) => v !== undefined)) as Record<string, string>;
  return fetch(`${sim.baseUrls.pf_01}${ARMS[which](key)}`, { headers: sent });
}

async function expectChallengeRequired(res: Response): Promise<void> {
  expect(res.status).toBe(403);
  expect(res.headers.get('x-pf01-challenge')).toBe('required');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(await res.text()).toBe(JSON.stringify(MARKER));
}

const control = (method: string, path: string, body?: unknown) =>
  fetch(`${sim.url}/_sim${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });

const hits = (key: string) => sim.store.get('pf_01', key)!.hits;

describe('the session cookie', () => {
  it('is set by the event page and the front page, and a well-formed one is kept', async () => {
    const key = putEvent();
    const first = await load(`/event/${key}?region=uk`);
    expect(first.setCookie).toMatch(COOKIE);
    const again = await load(`/event/${key}?region=uk`, { cookie: first.cookie });
    expect(again.sid).toBe(first.sid);
    const front = await load('/', { cookie: first.cookie });
    expect(front.status).toBe(200);
    expect(front.sid).toBe(first.sid);
    expect(front.html).toContain('<script id="pf01-challenge">');
    // One that is not 32 lowercase hex digits is not ours: a new one is minted.
    const forged = await load('/', { cookie: 'pf01_sid=ABCDEF' });
    expect(forged.setCookie).toMatch(COOKIE);
    expect(forged.sid).not.toBe(first.sid);
    // Even a page that is an error sets it, as the platform's edge does.
    expect((await load('/event/UnknownEvent0001?region=uk')).setCookie).toMatch(COOKIE);
  });

  it('sends /pf_01 to /pf_01/, so the front page’s relative api/session resolves below it', async () => {
    const res = await fetch(`${sim.url}/pf_01`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/pf_01/');
  });
});

describe('the challenge', () => {
  it('differs on every page load, and its code computes the answer the simulator expects', async () => {
    const key = putEvent();
    const a = await load(`/event/${key}?region=uk`);
    const b = await load(`/event/${key}?region=uk`);
    expect(a.code).toMatch(/^window\.__pf01Challenge = function \(\) \{/);
    expect(a.code).not.toBe(b.code);
    const res = await postSession({ answer: solve(a.code) }, { cookie: a.cookie });
    expect(res.status).toBe(200);
  });

  it('gives a token bound to the cookie, with its expiry, for the right answer only', async () => {
    const key = putEvent();
    const page = await load(`/event/${key}?region=uk`);
    const before = Date.now();
    const res = await postSession({ answer: solve(page.code) }, { cookie: page.cookie });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as { token: string; expires_at: string };
    expect(Object.keys(body).sort()).toEqual(['expires_at', 'token']);
    expect(body.token).toMatch(/^[0-9a-f]{32,}$/);
    expect(body.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const ttl = Date.parse(body.expires_at) - before;
    expect(ttl).toBeGreaterThan(600_000 - 5_000);
    expect(ttl).toBeLessThanOrEqual(600_000 + 5_000);
  });

  it('refuses a wrong answer, and then the right one: a challenge is spent by any try', async () => {
    const key = putEvent();
    const page = await load(`/event/${key}?region=uk`);
    const answer = solve(page.code);
    await expectChallengeRequired(await postSession({ answer: (answer + 1) >>> 0 }, { cookie: page.cookie }));
    await expectChallengeRequired(await postSession({ answer }, { cookie: page.cookie }));
  });

  it('is single-use', async () => {
    const key = putEvent();
    const page = await load(`/event/${key}?region=uk`);
    const answer = solve(page.code);
    expect((await postSession({ answer }, { cookie: page.cookie })).status).toBe(200);
    await expectChallengeRequired(await postSession({ answer }, { cookie: page.cookie }));
  });

  it('is replaced by a newer page load of the same session', async () => {
    const key = putEvent();
    const older = await load(`/event/${key}?region=uk`);
    const newer = await load(`/event/${key}?region=uk`, { cookie: older.cookie });
    await expectChallengeRequired(await postSession({ answer: solve(older.code) }, { cookie: older.cookie }));
    const fresh = await load(`/event/${key}?region=uk`, { cookie: newer.cookie });
    expect((await postSession({ answer: solve(fresh.code) }, { cookie: fresh.cookie })).status).toBe(200);
  });

  it('refuses an answer without the cookie, from another session, or in a body it cannot read', async () => {
    const key = putEvent();
    const page = await load(`/event/${key}?region=uk`);
    const answer = solve(page.code);
    await expectChallengeRequired(await postSession({ answer }));
    const other = await load('/');
    await expectChallengeRequired(await postSession({ answer }, { cookie: other.cookie }));
    const third = await load('/');
    await expectChallengeRequired(await postSession('not json', { cookie: third.cookie }));
    const fourth = await load('/');
    await expectChallengeRequired(await postSession({ answer: String(solve(fourth.code)) }, { cookie: fourth.cookie }));
  });
});

describe('the data arms', () => {
  it('answer a valid session, with the event’s details, and count it as a hit', async () => {
    const key = putEvent({ name: 'Aurora Skies', venue: 'North Arena', city: 'Manchester', starts_at: '2027-07-01T18:00:00Z', currency: 'GBP' });
    const { cookie, token } = await session(key);
    expect(hits(key)).toBe(1);
    for (const which of ['v1', 'v2'] as const) {
      const res = await arm(which, key, { cookie, 'x-pf01-token': token });
      expect(res.status).toBe(200);
      const body = (await res.json()) as Record<string, unknown>;
      expect(body).toMatchObject({
        event_id: key,
        currency: 'GBP',
        event: { name: 'Aurora Skies', venue: 'North Arena', city: 'Manchester', starts_at: '2027-07-01T18:00:00Z' },
      });
      expect(Array.isArray(body.sections)).toBe(true);
    }
    expect(hits(key)).toBe(3);
    // The token is good for many requests while it lives.
    expect((await arm('v2', key, { cookie, 'x-pf01-token': token })).status).toBe(200);
  });

  it('refuse no token, no cookie, another session’s cookie, another user agent, before even looking the event up', async () => {
    const key = putEvent();
    const { cookie, token } = await session(key);
    const other = await load('/');
    const refusals: Record<string, string | undefined>[] = [
      { cookie },
      { 'x-pf01-token': token },
      { cookie, 'x-pf01-token': 'f'.repeat(48) },
      { cookie: other.cookie, 'x-pf01-token': token },
      { cookie, 'x-pf01-token': token, 'user-agent': `${UA} (another)` },
      { cookie, 'x-pf01-auth': token },
    ];
    for (const headers of refusals) {
      for (const which of ['v1', 'v2'] as const) await expectChallengeRequired(await arm(which, key, headers));
    }
    // Refused requests are not hits: only the page counted.
    expect(hits(key)).toBe(1);
    // An unknown event is refused the same way: the check is in front of the lookup.
    await expectChallengeRequired(await arm('v2', 'UnknownEvent0001', {}));
  });

  it('refuse a token once its TTL has run out', async () => {
    sim.protection.configure({ session_ttl_ms: 150 });
    try {
      const key = putEvent();
      const { cookie, token } = await session(key);
      expect((await arm('v1', key, { cookie, 'x-pf01-token': token })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 250));
      await expectChallengeRequired(await arm('v1', key, { cookie, 'x-pf01-token': token }));
    } finally {
      sim.protection.configure({ session_ttl_ms: 600_000 });
    }
  });

  it('refuse every token revoked, and take a new session afterwards', async () => {
    const key = putEvent();
    const a = await session(key);
    const b = await session(key);
    sim.protection.revokeAll();
    await expectChallengeRequired(await arm('v2', key, { cookie: a.cookie, 'x-pf01-token': a.token }));
    await expectChallengeRequired(await arm('v2', key, { cookie: b.cookie, 'x-pf01-token': b.token }));
    const c = await session(key);
    expect((await arm('v2', key, { cookie: c.cookie, 'x-pf01-token': c.token })).status).toBe(200);
  });

  it('still fail one by one, and come truncated when the event is malformed, for a valid session', async () => {
    const key = putEvent({ arms: { v1: 'error', v2: 'ok' } });
    const { cookie, token } = await session(key);
    expect((await arm('v1', key, { cookie, 'x-pf01-token': token })).status).toBe(503);
    expect((await arm('v2', key, { cookie, 'x-pf01-token': token })).status).toBe(200);
    const broken = putEvent({ behaviour: 'malformed' });
    const s = await session(broken);
    const text = await (await arm('v2', broken, { cookie: s.cookie, 'x-pf01-token': s.token })).text();
    expect(() => JSON.parse(text)).toThrow();
  });
});

describe('the `changed` challenge', () => {
  it('takes only the new names: `solution` at api/session, the token in x-pf01-auth', async () => {
    expect((await control('PUT', '/pf_01/protection', { challenge: 'changed' })).status).toBe(200);
    try {
      const key = putEvent();
      const page = await load(`/event/${key}?region=uk`);
      expect(page.html).toContain('x-pf01-auth');
      await expectChallengeRequired(await postSession({ answer: solve(page.code) }, { cookie: page.cookie }));

      const { cookie, token } = await session(key, { field: 'solution' });
      await expectChallengeRequired(await arm('v1', key, { cookie, 'x-pf01-token': token }));
      expect((await arm('v1', key, { cookie, 'x-pf01-auth': token })).status).toBe(200);
    } finally {
      await control('PUT', '/pf_01/protection', { challenge: 'standard' });
    }
  });
});

describe('the token in a cookie', () => {
  it('is taken from the cookie the page sets (named per mode), and no longer from the header', async () => {
    expect((await control('PUT', '/pf_01/protection', { token_in: 'cookie' })).status).toBe(200);
    try {
      const key = putEvent();
      const page = await load(`/event/${key}?region=uk`);
      expect(page.html).toContain("document.cookie = \"pf01_token=\" + data.token");
      const { cookie, token } = await session(key);
      await expectChallengeRequired(await arm('v1', key, { cookie, 'x-pf01-token': token }));
      expect((await arm('v1', key, { cookie: `${cookie}; pf01_token=${token}` })).status).toBe(200);
      expect((await control('PUT', '/pf_01/protection', { challenge: 'changed' })).status).toBe(200);
      const changed = await session(key, { field: 'solution' });
      await expectChallengeRequired(await arm('v2', key, { cookie: `${changed.cookie}; pf01_token=${changed.token}` }));
      expect((await arm('v2', key, { cookie: `${changed.cookie}; pf01_auth=${changed.token}` })).status).toBe(200);
    } finally {
      await control('PUT', '/pf_01/protection', { challenge: 'standard', token_in: 'header' });
    }
  });
});

describe('the front page', () => {
  it('asks the visitor endpoint with its session, which is guarded like the arms', async () => {
    const page = await load('/');
    expect(page.html).toContain("fetch('api/v1/visitor'");
    const res = await postSession({ answer: solve(page.code) }, { cookie: page.cookie });
    const { token } = (await res.json()) as { token: string };
    const visitor = (headers: Record<string, string>) => fetch(`${sim.baseUrls.pf_01}/api/v1/visitor`, { headers: { 'user-agent': UA, ...headers } });
    await expectChallengeRequired(await visitor({ cookie: page.cookie }));
    await expectChallengeRequired(await visitor({ cookie: page.cookie, 'x-pf01-token': token, 'user-agent': 'another browser' }));
    const ok = await visitor({ cookie: page.cookie, 'x-pf01-token': token });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ visitor: 'anonymous', cart: [] });
  });
});

describe('the pages keep nothing for a scraper', () => {
  it.each([
    ['standard', 'header'],
    ['standard', 'cookie'],
    ['changed', 'header'],
    ['changed', 'cookie'],
  ])('in the %s mode with the token in a %s: no sessionStorage, no data-session, no global', async (challenge, tokenIn) => {
    expect((await control('PUT', '/pf_01/protection', { challenge, token_in: tokenIn })).status).toBe(200);
    try {
      for (const page of [await load(`/event/${putEvent()}?region=uk`), await load('/')]) {
        expect(page.html).not.toMatch(/sessionStorage|localStorage|data-session|pf01\.session/);
        // The token stays a local of the page's functions: never assigned to window or the DOM.
        expect(page.html).not.toMatch(/window\.[A-Za-z_$]*\s*=\s*[^=]*token|setAttribute\([^)]*token/i);
      }
    } finally {
      await control('PUT', '/pf_01/protection', { challenge: 'standard', token_in: 'header' });
    }
  });
});

describe('the control API', () => {
  it('reads, changes, revokes and resets the protection', async () => {
    expect((await control('POST', '/reset')).status).toBe(204);
    const start = await (await control('GET', '/pf_01/protection')).json();
    expect(start).toEqual({ challenge: 'standard', token_in: 'header', session_ttl_ms: 600_000, sessions_issued: 0, sessions_active: 0, challenges_served: 0, refused: 0 });

    const key = putEvent();
    await session(key);
    const s = await session(key);
    await expectChallengeRequired(await arm('v1', key, {}));
    expect(await (await control('GET', '/pf_01/protection')).json()).toEqual({
      challenge: 'standard',
      token_in: 'header',
      session_ttl_ms: 600_000,
      sessions_issued: 2,
      sessions_active: 2,
      challenges_served: 2,
      refused: 1,
    });
    expect(sim.protection.stats()).toMatchObject({ sessions_issued: 2 });

    const put = await control('PUT', '/pf_01/protection', { challenge: 'changed', session_ttl_ms: 5_000 });
    expect(put.status).toBe(200);
    expect(await put.json()).toMatchObject({ challenge: 'changed', session_ttl_ms: 5_000, sessions_issued: 2 });
    expect(await (await control('PUT', '/pf_01/protection', {})).json()).toMatchObject({ challenge: 'changed', session_ttl_ms: 5_000 });

    expect((await control('POST', '/pf_01/protection/revoke')).status).toBe(204);
    expect(await (await control('GET', '/pf_01/protection')).json()).toMatchObject({ sessions_issued: 2, sessions_active: 0 });
    await control('PUT', '/pf_01/protection', { challenge: 'standard' });
    await expectChallengeRequired(await arm('v2', key, { cookie: s.cookie, 'x-pf01-token': s.token }));

    const again = await session(key);
    expect((await control('POST', '/reset')).status).toBe(204);
    expect(await (await control('GET', '/pf_01/protection')).json()).toEqual(start);
    // Reset forgets every session too.
    sim.store.put('pf_01', key, simEventInputSchema.parse({ region: 'uk' }));
    await expectChallengeRequired(await arm('v2', key, { cookie: again.cookie, 'x-pf01-token': again.token }));
  });

  it.each([
    ['not JSON', 'nope', /body must be JSON/],
    ['an unknown field', { challenge: 'standard', colour: 'red' }, /colour/],
    ['an unknown mode', { challenge: 'hard' }, /challenge/],
    ['an unknown token carrier', { token_in: 'query' }, /token_in/],
    ['a TTL below 100 ms', { session_ttl_ms: 50 }, /session_ttl_ms/],
    ['a TTL above a day', { session_ttl_ms: 86_400_001 }, /session_ttl_ms/],
    ['a TTL that is not whole', { session_ttl_ms: 1000.5 }, /session_ttl_ms/],
  ])('refuses a PUT with %s (400)', async (_, body, message) => {
    const res = await control('PUT', '/pf_01/protection', body);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(message);
    expect(sim.protection.stats()).toMatchObject({ challenge: 'standard', session_ttl_ms: 600_000 });
  });
});

describe('bounded memory', () => {
  it('keeps at most the capped pending challenges and tokens, evicting the oldest', async () => {
    const small = await startSimulator({ empty: true, pf01Limits: { pendingChallenges: 3, tokens: 2 } });
    try {
      const base = small.baseUrls.pf_01;
      const loadFront = async () => {
        const res = await fetch(`${base}/`, { headers: { 'user-agent': UA } });
        const html = await res.text();
        return { cookie: res.headers.get('set-cookie')!.split(';')[0]!, code: /<script id="pf01-challenge">([\s\S]*?)<\/script>/.exec(html)![1]! };
      };
      const redeem = (page: { cookie: string; code: string }) =>
        fetch(`${base}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': UA, cookie: page.cookie }, body: JSON.stringify({ answer: solve(page.code) }) });

      const pages = [];
      for (let i = 0; i < 5; i++) pages.push(await loadFront());
      expect(small.protection.sizes().pending).toBe(3);
      // The two oldest were evicted; the three newest still stand.
      expect((await redeem(pages[0]!)).status).toBe(403);
      expect((await redeem(pages[1]!)).status).toBe(403);
      const tokens: { cookie: string; token: string }[] = [];
      for (const page of pages.slice(2)) {
        const res = await redeem(page);
        expect(res.status).toBe(200);
        tokens.push({ cookie: page.cookie, token: ((await res.json()) as { token: string }).token });
      }
      expect(small.protection.sizes()).toEqual({ pending: 0, tokens: 2 });
      small.store.put('pf_01', 'CapEvent00000001', simEventInputSchema.parse({ region: 'uk' }));
      const seats = (t: { cookie: string; token: string }) =>
        fetch(`${base}/api/v2/events/CapEvent00000001/seats?region=uk`, { headers: { 'user-agent': UA, cookie: t.cookie, 'x-pf01-token': t.token } });
      expect((await seats(tokens[0]!)).status).toBe(403);
      expect((await seats(tokens[1]!)).status).toBe(200);
      expect((await seats(tokens[2]!)).status).toBe(200);
    } finally {
      await small.close();
    }
  });

  it('prunes expired tokens before evicting live ones, and forgets challenges after two minutes', () => {
    let now = 1_000_000;
    const protection = new Pf01Protection({ maxTokens: 2, sessionTtlMs: 1_000, now: () => now });
    const issue = (sid: string, ttl?: number) => {
      if (ttl) protection.configure({ session_ttl_ms: ttl });
      const code = protection.challenge(sid);
      return protection.redeem(sid, solve(code), UA)!.token;
    };
    const sid = (n: number) => n.toString(16).padStart(32, '0');
    const longLived = issue(sid(1), 60_000);
    const shortLived = issue(sid(2), 1_000);
    now += 2_000;
    const third = issue(sid(3));
    // The expired one (newer) went, not the oldest live one.
    expect(protection.authorize(sid(1), longLived, UA)).toBe(true);
    expect(protection.authorize(sid(2), shortLived, UA)).toBe(false);
    expect(protection.authorize(sid(3), third, UA)).toBe(true);
    expect(protection.sizes().tokens).toBe(2);

    const code = protection.challenge(sid(4));
    now += 120_000;
    expect(protection.redeem(sid(4), solve(code), UA)).toBeNull();
  });
});

describe('generateChallenge', () => {
  /** A small seeded generator (mulberry32), so a failing seed replays. */
  const seeded = (seed: number) => () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };

  it('run in a VM, the code returns exactly the stored answer, for any seed', () => {
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const { code, answer } = generateChallenge(seeded(seed));
        const steps = code.split('\n').filter((line) => line.startsWith('  n = ')).length;
        expect(steps).toBeGreaterThanOrEqual(4);
        expect(steps).toBeLessThanOrEqual(8);
        expect(Number.isInteger(answer) && answer >= 0 && answer < 2 ** 32).toBe(true);
        expect(solve(code)).toBe(answer);
      }),
      { numRuns: 500 },
    );
  });

  it('holds at the edges of the random source too (0 and just below 1)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constant(0), fc.constant(1 - 2 ** -53), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })), { minLength: 1, maxLength: 60 }), (values) => {
        let i = 0;
        const { code, answer } = generateChallenge(() => values[i++ % values.length]!);
        expect(solve(code)).toBe(answer);
      }),
      { numRuns: 300 },
    );
  });

  it('uses every kind of step', () => {
    const random = seeded(7);
    const codes = Array.from({ length: 50 }, () => generateChallenge(random).code).join('\n');
    expect(codes).toContain('Math.imul(n, ');
    expect(codes).toMatch(/n = \(n \+ \d+\) >>> 0;/);
    expect(codes).toMatch(/n = \(n \^ \d+\) >>> 0;/);
    expect(codes).toMatch(/n = \(\(n << \d+\) \| \(n >>> \d+\)\) >>> 0;/);
    expect(codes).toMatch(/n = n % \d+;/);
  });
});

describe('in a real browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** Opens a page in a fresh context (no cookie or storage from before) and reads what it left. */
  async function visit(path: string, until: string) {
    const context = await browser.newContext({ userAgent: UA });
    try {
      const page = await context.newPage();
      const asked: { path: string; headers: Record<string, string> }[] = [];
      page.on('request', (request) => {
        const url = new URL(request.url());
        if (url.pathname.includes('/api/') && request.method() === 'GET') asked.push({ path: url.pathname, headers: request.headers() });
      });
      await page.goto(`${sim.baseUrls.pf_01}${path}`);
      await page.waitForFunction(until, undefined, { timeout: 10_000 });
      const left = await page.evaluate(() => ({
        state: document.body.getAttribute('data-state'),
        arms: [document.body.getAttribute('data-arm-v1'), document.body.getAttribute('data-arm-v2')],
        storage: sessionStorage.length + localStorage.length,
        attributes: Array.from(document.body.attributes, (a) => a.name).filter((name) => name.includes('session')),
        seats: document.querySelectorAll('#seat-map .seat').length,
        visitor: document.querySelector('#home .visitor')?.textContent ?? null,
      }));
      return { ...left, asked, cookies: await context.cookies() };
    } finally {
      await context.close();
    }
  }

  it.each([
    ['standard', 'header'],
    ['changed', 'header'],
    ['changed', 'cookie'],
  ] as const)('in the %s mode, token in a %s: draws the seat map with the token on its own requests, keeping it nowhere', async (challenge, tokenIn) => {
    sim.protection.configure({ challenge, token_in: tokenIn });
    try {
      const key = putEvent();
      const seen = await visit(`/event/${key}?region=uk`, "document.body.getAttribute('data-state') === 'ready'");
      expect(seen).toMatchObject({ state: 'ready', arms: ['ok', 'ok'], storage: 0, attributes: [], seats: 3 });
      expect(hits(key)).toBe(3);
      expect(seen.asked.map((a) => a.path).sort()).toEqual([`/pf_01/api/v1/events/${key}/availability`, `/pf_01/api/v2/events/${key}/seats`]);
      const { tokenHeader, tokenCookie } = challenge === 'standard' ? { tokenHeader: 'x-pf01-token', tokenCookie: 'pf01_token' } : { tokenHeader: 'x-pf01-auth', tokenCookie: 'pf01_auth' };
      for (const a of seen.asked) expect(a.headers[tokenHeader] !== undefined).toBe(tokenIn === 'header');
      expect(seen.cookies.some((c) => c.name === tokenCookie)).toBe(tokenIn === 'cookie');

      const front = await visit('/', "document.querySelector('#home .visitor') !== null");
      expect(front).toMatchObject({ visitor: 'Welcome! Sign in to see your tickets.', storage: 0, attributes: [] });
      expect(front.asked.map((a) => a.path)).toEqual(['/pf_01/api/v1/visitor']);
    } finally {
      sim.protection.configure({ challenge: 'standard', token_in: 'header' });
    }
  });

  it('marks both arms error, asking neither, when no session can be had', async () => {
    const key = putEvent();
    const context = await browser.newContext({ userAgent: UA });
    try {
      // A client that breaks the challenge: api/session refuses it.
      await context.route('**/api/session', (route) => route.continue({ postData: JSON.stringify({ answer: -1 }) }));
      const page = await context.newPage();
      await page.goto(`${sim.baseUrls.pf_01}/event/${key}?region=uk`);
      await page.waitForFunction("document.body.getAttribute('data-state') === 'ready'", undefined, { timeout: 10_000 });
      expect(await page.evaluate(() => [document.body.getAttribute('data-arm-v1'), document.body.getAttribute('data-arm-v2')])).toEqual(['error', 'error']);
      expect(hits(key)).toBe(1);
    } finally {
      await context.close();
    }
  });
});
