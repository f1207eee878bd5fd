// The walls in front of the simulated sites: a Koa middleware that judges every request under
// /{platform}/ and /{marketplace}/ by its site's wall (wall.ts) before the address limits and the
// routes see it, as a CDN's wall stands in front of the origin. A refused request is answered with
// the site's challenge page (challenge-pages.ts) and goes no further; a passing one carries the
// wall's Set-Cookie, if any, to whatever the site answers.
import type { TLSSocket } from 'node:tls';
import type { Context, Middleware } from 'koa';
import type { PlatformKey } from '../../platform/registry.ts';
import { sourceAddress } from '../address-limits.ts';
import { answerChallenge } from '../challenge-pages.ts';
import type { RequestLog } from '../request-log.ts';
import type { WireFacts } from '../tls/wire-facts.ts';
import type { Walls, WalledSite } from './wall.ts';

/**
 * The request's wire facts: the front's (ctx.state.wire), or, on a server without the front,
 * what Node itself knows (no ClientHello, no HTTP/2 SETTINGS), so a wall still judges
 * plaintext, HTTP version and header order.
 */
export function wireFactsOf(ctx: Context): WireFacts {
  const facts = (ctx.state as { wire?: WireFacts }).wire;
  if (facts) return facts;
  const raw = ctx.req.rawHeaders;
  const names: string[] = [];
  const pseudo: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    (name.startsWith(':') ? pseudo : names).push(name);
  }
  return {
    scheme: (ctx.req.socket as Partial<TLSSocket>).encrypted ? 'https' : 'http',
    hello: null,
    httpVersion: ctx.req.httpVersion,
    h2Settings: null,
    pseudoHeaderOrder: pseudo,
    headerOrder: names,
  };
}

export function wallsMiddleware(
  walls: Walls,
  options: { requests?: RequestLog; eventKey?: (platform: PlatformKey, ctx: Context) => string | null } = {},
): Middleware {
  return async (ctx, next) => {
    const path = ctx.path;
    const end = path.indexOf('/', 1);
    const segment = end === -1 ? path.slice(1) : path.slice(1, end);
    const wall = walls.lookup(segment);
    if (!wall || !wall.enabled) return next();
    const at = Date.now();
    const address = sourceAddress(ctx);
    const verdict = wall.judge({ wire: wireFactsOf(ctx), headers: ctx.headers, address }, at);
    if (verdict.pass) {
      for (const cookie of verdict.setCookies) ctx.append('Set-Cookie', cookie);
      return next();
    }
    const site = segment as WalledSite;
    if (site.startsWith('pf_')) {
      const key = options.eventKey?.(site as PlatformKey, ctx) ?? null;
      if (key !== null) options.requests?.record(site as PlatformKey, key, address, at, true);
    }
    const type = site === 'pf_10' || ctx.accepts('html', 'json') === 'json' ? 'json' : 'html';
    answerChallenge(ctx, site, type);
  };
}
