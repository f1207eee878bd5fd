// POST /svc/data/search (spec 2.4, 4.1, limits in section 8): the request and response schemas
// (validation, types and the OpenAPI document from one definition) and the handler. The search
// itself is src/market-data/search-query.ts; docs/market-data.md "Search" documents the
// defaults, filter syntax, orders and typo tolerance chosen where the spec is silent.
//
// Every body field is optional: {} lists the whole catalog, most popular first. Unknown fields,
// wrong types and out-of-range values are 400 INVALID_REQUEST (a misspelt `hitsPerpage` is not
// silently ignored); so is a filterExpression that does not parse, with the position in the
// message. Database failures are EDGE_UNAVAILABLE / EDGE_TIMEOUT through errors.ts.
import { z } from 'zod';
import { readJsonObject } from '../../gateway/json-body.ts';
import type { RouteContext, RouteSpec } from '../../gateway/route.ts';
import {
  COUNT_CAP,
  MAX_FUZZY_WORDS,
  MAX_PAGE,
  searchEvents,
  SORT_BY,
  type SearchHit,
  type SearchParams,
  type SearchResult,
} from '../../market-data/search-query.ts';
import { MIN_LENGTH_FOR_1_TYPO, MIN_LENGTH_FOR_2_TYPOS } from '../../market-data/search-vocabulary.ts';
import { MarketDataError } from './errors.ts';
import { FILTERABLE_ATTRIBUTES, FilterSyntaxError, MAX_EXPRESSION_LENGTH } from './filter-expression.ts';
import { BACKEND_FAILURES, errorResponse } from './response-schemas.ts';

export const MAX_QUERY_LENGTH = 200;
export const MAX_HITS_PER_PAGE = 100;
export const SEARCH_DEFAULTS = { query: '', page: 1, hitsPerPage: 20, sortBy: 'recommended', filterExpression: '' } as const;

const SORT_LIST = SORT_BY.join(', ');

export const searchRequestSchema = z
  .strictObject({
    query: z
      .string({ error: `query must be a string of at most ${MAX_QUERY_LENGTH} characters` })
      .max(MAX_QUERY_LENGTH, { error: `query must be at most ${MAX_QUERY_LENGTH} characters` })
      // PostgreSQL text cannot hold NUL; nothing in the catalog contains one either.
      .refine((q) => !q.includes('\u0000'), { error: 'query must not contain NUL characters' })
      .default(SEARCH_DEFAULTS.query)
      .meta({
        description:
          `Words to find in event, artist and venue names and the city; every word must match. The last word also matches as a prefix ` +
          `(unless the query ends with a space). When the words as typed match nothing, typos are allowed: 1 in words of ` +
          `${MIN_LENGTH_FOR_1_TYPO}+ characters, 2 from ${MIN_LENGTH_FOR_2_TYPOS} (the first ${MAX_FUZZY_WORDS} words). Empty: every event.`,
      }),
    page: z
      .int({ error: `page must be an integer from 1 to ${MAX_PAGE}` })
      .min(1, { error: `page must be an integer from 1 to ${MAX_PAGE}` })
      .max(MAX_PAGE, { error: `page must be an integer from 1 to ${MAX_PAGE}` })
      .default(SEARCH_DEFAULTS.page)
      .meta({ description: '1-based page number.' }),
    hitsPerPage: z
      .int({ error: `hitsPerPage must be an integer from 1 to ${MAX_HITS_PER_PAGE}` })
      .min(1, { error: `hitsPerPage must be an integer from 1 to ${MAX_HITS_PER_PAGE}` })
      .max(MAX_HITS_PER_PAGE, { error: `hitsPerPage must be an integer from 1 to ${MAX_HITS_PER_PAGE}` })
      .default(SEARCH_DEFAULTS.hitsPerPage),
    sortBy: z
      .enum(SORT_BY, { error: `sortBy must be one of ${SORT_LIST}` })
      .default(SEARCH_DEFAULTS.sortBy)
      .meta({
        description:
          '`recommended`: with a query, by relevance (fewer typos, words in the event or artist name, whole words, then popularity); ' +
          'without, by popularity (tickets_sold_24h then tickets_sold, descending). Others: by that attribute, `.desc` descending, ' +
          'events without a value last; ties by event_id.',
      }),
    filterExpression: z
      .string({ error: `filterExpression must be a string of at most ${MAX_EXPRESSION_LENGTH} characters` })
      .max(MAX_EXPRESSION_LENGTH, { error: `filterExpression must be at most ${MAX_EXPRESSION_LENGTH} characters` })
      .default(SEARCH_DEFAULTS.filterExpression)
      .meta({
        description:
          'Attribute tests joined by AND, OR, NOT and parentheses: `attr:value` (equality; text case-insensitive), ' +
          '`attr > 10` (< <= > >= = != on numeric attributes), `attr:10 TO 20` (inclusive range). Values with spaces in quotes. ' +
          `Attributes: ${Object.keys(FILTERABLE_ATTRIBUTES).join(', ')}. event_date is Unix seconds.`,
      }),
  })
  .meta({ id: 'SearchRequest', description: 'Every field is optional; {} lists the whole catalog, most popular first.' });

export type SearchRequest = z.output<typeof searchRequestSchema>;

export const searchHitSchema = z
  .object({
    objectID: z.string().meta({ description: 'event_id as a string' }),
    event_id: z.int(),
    event_name: z.string(),
    event_date: z.int().nullable().meta({ description: 'Unix time in seconds; null when the catalog has no date' }),
    category_name: z.string().nullable(),
    artist_id: z.int().nullable(),
    artist_name: z.string().nullable(),
    venue_id: z.int().nullable(),
    venue_name: z.string().nullable(),
    venue_city: z.string().nullable(),
    venue_country: z.string().nullable(),
    venue_country_code: z.string().length(2).nullable(),
    tickets_sold: z.int(),
    tickets_sold_24h: z.int(),
    available_tickets: z.int(),
    capacity: z.int().nullable(),
    average_ticket_price_sold: z.number().nullable().meta({ description: 'In the currency of the event’s sales; null before the first sale' }),
  })
  .meta({ id: 'SearchHit', description: 'Spec 2.4; null where the catalog has no value' });

export const searchResponseSchema = z
  .object({
    hits: z.array(searchHitSchema),
    page: z.int().meta({ description: 'The 1-based page answered' }),
    hitsPerPage: z.int(),
    nbHits: z.int().meta({
      description:
        `The events that match: exactly when exhaustiveNbHits is true. When it is false, more than ${COUNT_CAP} match and nbHits is ${COUNT_CAP}, a lower bound ` +
        '(every search counts up to the cap, except {}: the whole catalog, a kept count)',
    }),
    nbPages: z.int().meta({
      description: `ceil(nbHits / hitsPerPage), at most ${MAX_PAGE}: every page up to it has hits. When exhaustiveNbHits is false, later pages (up to ${MAX_PAGE}) may have hits too`,
    }),
    exhaustiveNbHits: z.boolean().meta({ description: `Whether nbHits is the exact number of matching events (false: more than ${COUNT_CAP})` }),
    processingTimeMS: z.int().meta({ description: 'Time spent searching, in whole milliseconds' }),
  })
  .meta({ id: 'SearchResponse' });

// Compile-time check that the query layer's types are the schema's.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _hitMatches: Same<SearchHit, z.output<typeof searchHitSchema>> = true;
const _resultMatches: Same<SearchResult, z.output<typeof searchResponseSchema>> = true;
const _requestMatches: Same<SearchParams, SearchRequest> = true;
void _hitMatches;
void _resultMatches;
void _requestMatches;

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') {
    return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => JSON.stringify(k.slice(0, 40))).join(', ')}; accepted: ${Object.keys(searchRequestSchema.shape).join(', ')}`;
  }
  return issue.message;
}

async function readRequest(ctx: RouteContext): Promise<SearchRequest> {
  const body = await readJsonObject(ctx, ctx.state.services.config.MAX_BODY_BYTES, 'a JSON object (send {} for the defaults)');
  if (!body.ok) throw new MarketDataError('INVALID_REQUEST', body.message);
  const parsed = searchRequestSchema.safeParse(body.value);
  if (!parsed.success) throw new MarketDataError('INVALID_REQUEST', describeIssue(parsed.error.issues[0]!));
  return parsed.data;
}

export const searchRoute: RouteSpec = {
  operationId: 'searchEvents',
  summary: 'Full-text search over the event catalog, with filters, sort orders and paging',
  request: { body: searchRequestSchema },
  responses: {
    200: { description: 'Search response (spec 2.4)', schema: searchResponseSchema },
    400: errorResponse('INVALID_REQUEST: body not a JSON object, unknown field, wrong type, value out of range, or a filterExpression that does not parse (the message gives the position)'),
    ...BACKEND_FAILURES,
  },
  handler: async (ctx) => {
    const request = await readRequest(ctx);
    let result: SearchResult;
    try {
      result = await searchEvents(ctx.state.services.pool, request, ctx.state.services.searchVocabulary);
    } catch (err) {
      if (err instanceof FilterSyntaxError) throw new MarketDataError('INVALID_REQUEST', `filterExpression: ${err.message}`);
      throw err;
    }
    ctx.state.log.debug(
      { nb_hits: result.nbHits, ms: result.processingTimeMS, sort: request.sortBy, words: request.query ? request.query.split(/\s+/).length : 0 },
      'search',
    );
    ctx.body = result;
  },
};
