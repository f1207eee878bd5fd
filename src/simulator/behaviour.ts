// How a simulated event's page request plays out once the event is found: its transient
// `failures` first, then its `behaviour` (a 404, a 503, a 429 or 403 with a Retry-After, a hang,
// a slow answer, the site's bot challenge with status 200, a malformed or a normal page). The
// platforms (serve.ts) and the marketplaces (marketplaces/serve.ts) both go through here so a
// scraper's retries, time-outs and back-offs meet one simulation whichever site it scrapes; each
// caller says only how its route answers with a page, with a failure (answerPage with its page,
// or with failurePage's for the route's type) and with its challenge (challenge-pages.ts).
import type { Context } from 'koa';
import type { Behaviour } from './state.ts';

/** The fields of a platform or marketplace event that decide how its pages answer. */
export interface Behaving {
  behaviour: Behaviour;
  delay_ms: number;
  /** The next N page requests answer 503 first; counted down here. */
  failures: number;
  blocked_status: 429 | 403;
  /** Seconds `blocked` asks the client to wait; null sends no Retry-After. */
  retry_after_s: number | null;
}

/** The statuses a behaviour answers with instead of the page. */
export type FailureStatus = 404 | 503 | 429 | 403;

const FAILURE_TEXT: Record<FailureStatus, string> = {
  404: 'Event not found',
  503: 'Service temporarily unavailable',
  429: 'Too many requests',
  403: 'Access denied',
};

/** A page as a route answers it: HTML or JSON, 200 unless `status` says otherwise. */
export interface PageContent {
  type: 'html' | 'json';
  body: string | object;
  status?: number;
}

export function answerPage(ctx: Context, content: PageContent): void {
  ctx.status = content.status ?? 200;
  if (content.type === 'json') {
    ctx.type = 'application/json';
    ctx.body = typeof content.body === 'string' ? content.body : JSON.stringify(content.body);
  } else {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = String(content.body);
  }
}

/** A failure status as a route of `type` shows it. */
export function failurePage(type: 'html' | 'json', status: FailureStatus): PageContent {
  const text = FAILURE_TEXT[status];
  return type === 'json'
    ? { type, status, body: { error: text } }
    : { type, status, body: `<!doctype html><html><head><title>${status}</title></head><body><h1>${text}</h1></body></html>` };
}

export interface Answers {
  page(variant: { malformed: boolean }): void;
  failure(status: FailureStatus): void;
  /** The site's bot challenge for the route (challenge-pages.ts): status 200, Akamai's 403. */
  challenge(): void;
}

/**
 * Resolves when the client goes away (or never, while it waits). `stop` removes the listener: a
 * kept-alive socket serves many requests, and each would leave one behind.
 */
function clientGone(ctx: Context): { gone: Promise<void>; stop(): void } {
  const socket = ctx.req.socket;
  let onClose = () => {};
  const gone = new Promise<void>((resolve) => {
    if (socket.destroyed) return resolve();
    onClose = () => resolve();
    socket.once('close', onClose);
  });
  return { gone, stop: () => socket.off('close', onClose) };
}

/**
 * Answers one request as the event's behaviour says. `countFailures: false` leaves `failures`
 * alone, for a route whose own failure rule stands in for it (pf_01's data arms).
 */
export async function serveBehaviour(ctx: Context, event: Behaving, answers: Answers, opts: { countFailures?: boolean } = {}): Promise<void> {
  if (opts.countFailures !== false && event.failures > 0) {
    event.failures--;
    return answers.failure(503);
  }
  switch (event.behaviour) {
    case 'not_found':
      return answers.failure(404);
    case 'error':
      return answers.failure(503);
    case 'blocked':
      if (event.retry_after_s !== null) ctx.set('Retry-After', String(event.retry_after_s));
      return answers.failure(event.blocked_status);
    case 'hang':
      // Never answers; the socket is released when the client gives up or the server closes.
      await clientGone(ctx).gone;
      ctx.respond = false;
      return;
    case 'slow': {
      let timer: NodeJS.Timeout | undefined;
      const client = clientGone(ctx);
      const waited = await Promise.race([
        new Promise<'done'>((resolve) => (timer = setTimeout(() => resolve('done'), event.delay_ms))),
        client.gone.then(() => 'gone' as const),
      ]);
      clearTimeout(timer);
      client.stop();
      if (waited === 'gone') {
        ctx.respond = false;
        return;
      }
      return answers.page({ malformed: false });
    }
    case 'challenge':
      return answers.challenge();
    case 'malformed':
      return answers.page({ malformed: true });
    case 'ok':
      return answers.page({ malformed: false });
  }
}
