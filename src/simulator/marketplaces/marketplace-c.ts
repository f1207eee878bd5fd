// Marketplace C in the simulator: only an event page, `/tickets/{id}`, that marketplace A links
// to (the tracker never scrapes C; the page exists so the link leads somewhere).
import type Router from '@koa/router';
import { esc, page } from '../html.ts';
import type { ServeMarketplaceEvent } from './serve.ts';

export function mountMarketplaceC(router: Router, serve: ServeMarketplaceEvent): void {
  router.get('/tickets/:id', (ctx) =>
    serve(ctx, { marketplace: 'marketplace_c', key: ctx.params.id!, type: 'html' }, (event, { malformed }) => ({
      type: 'html',
      body: page({
        lang: 'en',
        title: `${event.name} | marketplace C`,
        body: malformed
          ? '<div class="event">'
          : `<div class="event" data-event-id="${esc(event.key)}"><h1>${esc(event.name)}</h1>${event.starts_at ? `<time datetime="${esc(event.starts_at)}">${esc(event.starts_at)}</time>` : ''}</div>`,
      }),
    })),
  );
}
