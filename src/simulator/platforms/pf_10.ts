// pf_10 in the simulator: GraphQL-style `POST /graphql` with `{query, variables: {id, region}}`,
// answering `{data: {event: {...}}}` with sectors and their offers. As GraphQL servers do, an
// unknown event (or another region's) is `{data: {event: null}}` with status 200, a request that
// is not a query a 400 with `errors`. Malformed: the event comes without its `sectors`.
import type { Context } from 'koa';
import { groupByName } from '../inventory.ts';
import { cents } from '../money.ts';
import type { SimPlatform } from '../platform.ts';
import type { SimEvent, SimSection } from '../state.ts';

const TICKET_TYPE: Record<SimSection['ticket_type'], string> = { standard: 'STANDARD', resale: 'RESALE', platinum: 'PLATINUM', general_admission: 'GENERAL_ADMISSION' };
const MAX_BODY = 64 * 1024;

async function readBody(ctx: Context): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new Error('request body too large');
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function graphqlError(ctx: Context, message: string): void {
  ctx.status = 400;
  ctx.body = { errors: [{ message }], data: null };
}

function eventData(event: SimEvent, malformed: boolean) {
  const sectors = [...groupByName(event.sections)].map(([name, group]) => ({
    name,
    offers: group.map((section) => ({
      id: `${event.key}:${event.sections.indexOf(section) + 1}`,
      price: { amount: cents(section.price) / 100, currency: event.currency },
      available: section.stock,
      ticketType: TICKET_TYPE[section.ticket_type],
      restrictedView: section.restricted_view,
      accessible: section.accessible,
      presale: section.presale,
    })),
  }));
  return {
    data: {
      event: {
        id: event.key,
        title: event.name,
        startsAt: event.starts_at,
        currency: event.currency,
        venue: { name: event.venue, city: event.city },
        ...(malformed ? {} : { sectors }),
      },
    },
  };
}

export const pf10: SimPlatform = {
  platform: 'pf_10',
  mount(router, serve) {
    router.post('/graphql', async (ctx) => {
      let body: unknown;
      try {
        body = await readBody(ctx);
      } catch (err) {
        return graphqlError(ctx, `body must be JSON: ${(err as Error).message}`);
      }
      const request = (typeof body === 'object' && body !== null ? body : {}) as { query?: unknown; variables?: { id?: unknown; region?: unknown } };
      if (typeof request.query !== 'string' || !request.query.includes('event(')) return graphqlError(ctx, 'only the event query is supported');
      const { id, region } = request.variables ?? {};
      if (typeof id !== 'string' || !id) return graphqlError(ctx, 'Variable "$id" of required type "ID!" was not provided.');
      await serve(ctx, { platform: 'pf_10', key: id, region: typeof region === 'string' ? region : null, type: 'json' }, (event, { malformed }) => ({
        type: 'json',
        body: eventData(event, malformed),
      }));
      if (ctx.status === 404) {
        ctx.status = 200;
        ctx.body = { data: { event: null } };
      }
    });
  },
};
