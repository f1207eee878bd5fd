// How every simulated platform answers a request for one event: unknown event or wrong region
// is a 404, then the event's behaviour decides (a transient 503, a 404, a 429 or 403, a hang, a
// slow answer, the platform's challenge page, a malformed page, or the platform's normal page).
// Platform modules only render.
import type { Context } from 'koa';
import type { PlatformKey } from '../platform/registry.ts';
import { sourceAddress } from './address-limits.ts';
import { answerPage, failurePage, serveBehaviour, type PageContent } from './behaviour.ts';
import { answerChallenge } from './challenge-pages.ts';
import type { RequestLog } from './request-log.ts';
import type { SimEvent, SimStore } from './state.ts';

export interface ServeTarget {
  platform: PlatformKey;
  key: string;
  /** The region the request asks for; the event is only found in its own region. */
  region: string | null;
  /** pf_01's data arms fail on their own, per the event's `arms`. */
  arm?: 'v1' | 'v2';
  /** pf_01's event page, which answers 404 on its own when the event's `page` is `not_found`. */
  eventPage?: true;
  /** How a failure status (404, 503, 429, 403) looks on this route. */
  type: 'html' | 'json';
}

export type Render = (event: SimEvent, variant: { malformed: boolean }) => PageContent;
export type ServeEvent = (ctx: Context, target: ServeTarget, render: Render) => Promise<void>;

export function createServe(store: SimStore, requests?: RequestLog): ServeEvent {
  return async (ctx, target, render) => {
    // Every request for an event, found or not, as it arrives (request-log.ts).
    requests?.record(target.platform, target.key, sourceAddress(ctx));
    const event = store.get(target.platform, target.key);
    if (!event || (target.region !== null && target.region.toLowerCase() !== event.region)) {
      return answerPage(ctx, failurePage(target.type, 404));
    }
    event.hits++;
    // pf_01's data arms fail on their own, per the event's `arms`, instead of counting down `failures`.
    if (target.arm && event.arms[target.arm] === 'error') return answerPage(ctx, failurePage(target.type, 503));
    if (target.arm && event.arms[target.arm] === 'not_found') return answerPage(ctx, failurePage(target.type, 404));
    if (target.eventPage && event.page === 'not_found') return answerPage(ctx, failurePage(target.type, 404));
    return serveBehaviour(
      ctx,
      event,
      {
        page: (variant) => {
          if (!variant.malformed) event.reads++;
          answerPage(ctx, render(event, variant));
        },
        failure: (status) => answerPage(ctx, failurePage(target.type, status)),
        challenge: () => answerChallenge(ctx, target.platform, target.type),
      },
      { countFailures: !target.arm },
    );
  };
}
