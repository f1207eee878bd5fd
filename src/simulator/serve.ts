// How every simulated platform answers a request for one event: unknown event or wrong region
// is a 404, then the event's behaviour decides (a transient 503, a 404, a hang, a slow answer,
// a malformed page, or the platform's normal page). Platform modules only render.
import type { Context } from 'koa';
import type { PlatformKey } from '../platform/registry.ts';
import type { SimEvent, SimStore } from './state.ts';

export interface PageContent {
  type: 'html' | 'json';
  body: string | object;
  status?: number;
}

export interface ServeTarget {
  platform: PlatformKey;
  key: string;
  /** The region the request asks for; the event is only found in its own region. */
  region: string | null;
  /** pf_01's data arms fail on their own, per the event's `arms`. */
  arm?: 'v1' | 'v2';
  /** How a 404 or 503 looks on this route. */
  type: 'html' | 'json';
}

export type Render = (event: SimEvent, variant: { malformed: boolean }) => PageContent;
export type ServeEvent = (ctx: Context, target: ServeTarget, render: Render) => Promise<void>;

function answer(ctx: Context, content: PageContent): void {
  ctx.status = content.status ?? 200;
  if (content.type === 'json') {
    ctx.type = 'application/json';
    ctx.body = typeof content.body === 'string' ? content.body : JSON.stringify(content.body);
  } else {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = String(content.body);
  }
}

function failure(type: 'html' | 'json', status: 404 | 503): PageContent {
  const text = status === 404 ? 'Event not found' : 'Service temporarily unavailable';
  return type === 'json'
    ? { type, status, body: { error: text } }
    : { type, status, body: `<!doctype html><html><head><title>${status}</title></head><body><h1>${text}</h1></body></html>` };
}

/** Resolves when the client goes away (or never, while it waits). */
function clientGone(ctx: Context): Promise<void> {
  return new Promise((resolve) => {
    if (ctx.req.socket.destroyed) return resolve();
    ctx.req.socket.once('close', () => resolve());
  });
}

export function createServe(store: SimStore): ServeEvent {
  return async (ctx, target, render) => {
    const event = store.get(target.platform, target.key);
    if (!event || (target.region !== null && target.region.toLowerCase() !== event.region)) {
      return answer(ctx, failure(target.type, 404));
    }
    event.hits++;
    if (target.arm) {
      if (event.arms[target.arm] === 'error') return answer(ctx, failure(target.type, 503));
    } else if (event.failures > 0) {
      event.failures--;
      return answer(ctx, failure(target.type, 503));
    }
    switch (event.behaviour) {
      case 'not_found':
        return answer(ctx, failure(target.type, 404));
      case 'error':
        return answer(ctx, failure(target.type, 503));
      case 'hang':
        // Never answers; the socket is released when the client gives up or the server closes.
        await clientGone(ctx);
        ctx.respond = false;
        return;
      case 'slow': {
        let timer: NodeJS.Timeout | undefined;
        const waited = await Promise.race([
          new Promise<'done'>((resolve) => (timer = setTimeout(() => resolve('done'), event.delay_ms))),
          clientGone(ctx).then(() => 'gone' as const),
        ]);
        clearTimeout(timer);
        if (waited === 'gone') {
          ctx.respond = false;
          return;
        }
        return answer(ctx, render(event, { malformed: false }));
      }
      case 'malformed':
        return answer(ctx, render(event, { malformed: true }));
      case 'ok':
        return answer(ctx, render(event, { malformed: false }));
    }
  };
}
