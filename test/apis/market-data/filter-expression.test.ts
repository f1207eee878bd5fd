// The search filterExpression parser and SQL compiler (src/apis/market-data/filter-expression.ts):
// hand cases for each construct and each error with its position, then properties: any string
// either compiles or is a FilterSyntaxError (the route's 400, never a 500); the SQL is built only
// from columns, fixed keywords and consecutive $n placeholders, so no input text reaches it; and
// generated valid expressions select in a real PostgreSQL exactly the rows a reference
// evaluator of the AST selects (NULLs, case-insensitive text, int4 columns against big values).
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  bindColumns,
  compileFilter,
  compileFilterNode,
  FILTERABLE_ATTRIBUTES,
  FilterSyntaxError,
  MAX_EXPRESSION_LENGTH,
  MAX_NESTING_DEPTH,
  MAX_TESTS,
  parseFilter,
  type AttributeType,
  type ComparisonOperator,
  type FilterAttribute,
  type FilterNode,
  type FilterableAttributeName,
} from '../../../src/apis/market-data/filter-expression.ts';

const NAMES = Object.keys(FILTERABLE_ATTRIBUTES) as FilterableAttributeName[];
const ATTRS: Record<string, FilterAttribute> = bindColumns(
  Object.fromEntries(NAMES.map((n) => [n, `t.${n}`])) as Record<FilterableAttributeName, string>,
);

function syntaxError(expression: string, attributes = ATTRS): FilterSyntaxError {
  try {
    compileFilter(expression, attributes);
  } catch (err) {
    if (err instanceof FilterSyntaxError) return err;
    throw err;
  }
  throw new Error(`expected a FilterSyntaxError for ${JSON.stringify(expression)}`);
}

// ---------------------------------------------------------------------------------------------
// SQL whitelist: the compiled SQL must tokenize completely into this vocabulary.

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function sqlTokens(sql: string, attributes: Record<string, FilterAttribute>): { ok: boolean; placeholders: number[]; rest: string } {
  const columns = [...new Set(Object.values(attributes).map((a) => a.column))].sort((a, b) => b.length - a.length);
  const re = new RegExp(
    [
      '\\s+',
      '\\(',
      '\\)',
      '(?:AND|OR|NOT|IS|TRUE)(?![A-Za-z0-9_])',
      'lower(?=\\()',
      '<=|>=|<>|<|>|=',
      '\\$([1-9][0-9]*)::(?:text|bigint|numeric)(?![A-Za-z0-9_])',
      `(?:${columns.map(escapeRegex).join('|')})(?![A-Za-z0-9_.])`,
    ].join('|'),
    'y',
  );
  const placeholders: number[] = [];
  let i = 0;
  while (i < sql.length) {
    re.lastIndex = i;
    const m = re.exec(sql);
    if (!m || m[0].length === 0) return { ok: false, placeholders, rest: sql.slice(i) };
    if (m[1] !== undefined) placeholders.push(Number(m[1]));
    i = re.lastIndex;
  }
  return { ok: true, placeholders, rest: '' };
}

/** Properties (2) and (3) for one successful result. */
function checkCompiled(result: { sql: string; params: unknown[] }, firstParam: number, attributes = ATTRS): void {
  const { ok, placeholders, rest } = sqlTokens(result.sql, attributes);
  expect(ok, `SQL outside the whitelist at ${JSON.stringify(rest)} in ${result.sql}`).toBe(true);
  expect(placeholders).toEqual(result.params.map((_, k) => firstParam + k));
}

// ---------------------------------------------------------------------------------------------
// Hand cases

describe('filterExpression: constructs', () => {
  it('an empty or blank expression filters nothing', () => {
    expect(compileFilter('', ATTRS)).toEqual({ sql: 'TRUE', params: [] });
    expect(compileFilter(' \t\n ', ATTRS, 7)).toEqual({ sql: 'TRUE', params: [] });
    expect(parseFilter('   ', FILTERABLE_ATTRIBUTES)).toBeNull();
  });

  it('colon equality on text is case-insensitive through lower() on both sides', () => {
    expect(compileFilter('venue_country_code:US', ATTRS)).toEqual({
      sql: '(lower(t.venue_country_code) = lower($1::text))',
      params: ['US'],
    });
  });

  it('bare words take letters of any script, digits, _, - and .; numbers are text for text attributes', () => {
    expect(parseFilter('venue_city:München', FILTERABLE_ATTRIBUTES)).toEqual({ kind: 'match', attribute: 'venue_city', value: 'München' });
    expect(parseFilter('venue_name:O2-Arena_1.5', FILTERABLE_ATTRIBUTES)).toMatchObject({ value: 'O2-Arena_1.5' });
    expect(parseFilter('venue_name:1234', FILTERABLE_ATTRIBUTES)).toMatchObject({ kind: 'match', value: '1234' });
  });

  it('quoted values in double or single quotes, with backslash escapes', () => {
    expect(parseFilter('venue_name:"Madison \\"Square\\" Garden"', FILTERABLE_ATTRIBUTES)).toMatchObject({ value: 'Madison "Square" Garden' });
    expect(parseFilter("artist_name:'Guns N\\' Roses'", FILTERABLE_ATTRIBUTES)).toMatchObject({ value: "Guns N' Roses" });
    expect(parseFilter('artist_name:"a\\\\b"', FILTERABLE_ATTRIBUTES)).toMatchObject({ value: 'a\\b' });
    expect(parseFilter('artist_name:"\\x\\n"', FILTERABLE_ATTRIBUTES)).toMatchObject({ value: 'xn' });
    expect(parseFilter('artist_name:"it\'s"', FILTERABLE_ATTRIBUTES)).toMatchObject({ value: "it's" });
    expect(parseFilter('event_name:""', FILTERABLE_ATTRIBUTES)).toMatchObject({ value: '' });
    expect(parseFilter('venue_country_code:"TO"', FILTERABLE_ATTRIBUTES)).toMatchObject({ value: 'TO' });
    expect(parseFilter('event_name:"a AND b OR (c)"', FILTERABLE_ATTRIBUTES)).toMatchObject({ kind: 'match', value: 'a AND b OR (c)' });
  });

  it('colon equality on numbers, and every comparison operator', () => {
    expect(compileFilter('tickets_sold:100', ATTRS)).toEqual({ sql: '(t.tickets_sold = $1::bigint)', params: [100] });
    const ops: [ComparisonOperator, string][] = [['<', '<'], ['<=', '<='], ['>', '>'], ['>=', '>='], ['=', '='], ['!=', '<>']];
    for (const [op, sqlOp] of ops) {
      expect(compileFilter(`capacity${op}5000`, ATTRS)).toEqual({ sql: `(t.capacity ${sqlOp} $1::bigint)`, params: [5000] });
      expect(compileFilter(` capacity ${op} 5000 `, ATTRS).sql).toBe(`(t.capacity ${sqlOp} $1::bigint)`);
    }
    expect(compileFilter('average_ticket_price_sold>=-12.5', ATTRS)).toEqual({
      sql: '(t.average_ticket_price_sold >= $1::numeric)',
      params: [-12.5],
    });
    expect(compileFilter('event_date<1767225600', ATTRS)).toEqual({ sql: '(t.event_date < $1::bigint)', params: [1767225600] });
    expect(parseFilter('capacity:-0', FILTERABLE_ATTRIBUTES)).toMatchObject({ value: 0 });
    expect(parseFilter('capacity:007', FILTERABLE_ATTRIBUTES)).toMatchObject({ value: 7 });
    expect(parseFilter('capacity<=9007199254740991', FILTERABLE_ATTRIBUTES)).toMatchObject({ value: Number.MAX_SAFE_INTEGER });
  });

  it('inclusive numeric range with TO', () => {
    expect(compileFilter('event_date:1700000000 TO 1800000000', ATTRS)).toEqual({
      sql: '(t.event_date >= $1::bigint AND t.event_date <= $2::bigint)',
      params: [1700000000, 1800000000],
    });
    expect(parseFilter('average_ticket_price_sold:9.5 to 20', FILTERABLE_ATTRIBUTES)).toEqual({
      kind: 'range',
      attribute: 'average_ticket_price_sold',
      low: 9.5,
      high: 20,
    });
  });

  it('AND binds tighter than OR; parentheses regroup; keywords are case-insensitive', () => {
    const a = { kind: 'match', attribute: 'venue_city', value: 'a' };
    const b = { kind: 'compare', attribute: 'capacity', op: '>', value: 1 };
    const c = { kind: 'match', attribute: 'venue_city', value: 'c' };
    expect(parseFilter('venue_city:a or capacity>1 AnD venue_city:c', FILTERABLE_ATTRIBUTES)).toEqual({
      kind: 'or',
      children: [a, { kind: 'and', children: [b, c] }],
    });
    expect(parseFilter('(venue_city:a OR capacity>1) and venue_city:c', FILTERABLE_ATTRIBUTES)).toEqual({
      kind: 'and',
      children: [{ kind: 'or', children: [a, b] }, c],
    });
    expect(parseFilter('venue_city:a AND capacity>1 AND venue_city:c', FILTERABLE_ATTRIBUTES)).toEqual({ kind: 'and', children: [a, b, c] });
    expect(parseFilter('not venue_city:a AND NoT NOT capacity>1', FILTERABLE_ATTRIBUTES)).toEqual({
      kind: 'and',
      children: [
        { kind: 'not', child: a },
        { kind: 'not', child: { kind: 'not', child: b } },
      ],
    });
    expect(parseFilter('((venue_city:a))', FILTERABLE_ATTRIBUTES)).toEqual(a);
    expect(parseFilter('venue_city:a AND(capacity>1)OR(venue_city:c)', FILTERABLE_ATTRIBUTES)).toMatchObject({ kind: 'or' });
  });

  it('compiles AND, OR and NOT, guarding tests under NOT so a NULL column counts as false', () => {
    expect(compileFilter('venue_country_code:US AND tickets_sold>100 OR capacity:1 TO 5', ATTRS)).toEqual({
      sql: '(((lower(t.venue_country_code) = lower($1::text)) AND (t.tickets_sold > $2::bigint)) OR (t.capacity >= $3::bigint AND t.capacity <= $4::bigint))',
      params: ['US', 100, 1, 5],
    });
    expect(compileFilter('NOT (venue_city:Paris OR capacity>10)', ATTRS)).toEqual({
      sql: '(NOT (((lower(t.venue_city) = lower($1::text)) IS TRUE) OR ((t.capacity > $2::bigint) IS TRUE)))',
      params: ['Paris', 10],
    });
  });

  it('numbers placeholders from firstParam', () => {
    const r = compileFilter('capacity>1 AND venue_city:x AND event_date:1 TO 2', ATTRS, 5);
    expect(r.params).toEqual([1, 'x', 1, 2]);
    checkCompiled(r, 5);
    expect(r.sql).toContain('$8::bigint');
    expect(() => compileFilter('capacity>1', ATTRS, 0)).toThrow(RangeError);
    expect(() => compileFilter('capacity>1', ATTRS, 1.5)).toThrow(RangeError);
  });

  it('keeps SQL injection text in params', () => {
    const r = compileFilter(`venue_name:"'; DROP TABLE x; --" OR artist_name:'" OR 1=1 --'`, ATTRS);
    expect(r.params).toEqual(["'; DROP TABLE x; --", '" OR 1=1 --']);
    expect(r.sql).not.toMatch(/DROP|--|1=1/);
    checkCompiled(r, 1);
  });

  it('exports the spec 2.4 hit fields (objectID aside) with their types, and binds columns', () => {
    expect(FILTERABLE_ATTRIBUTES).toEqual({
      event_id: 'integer',
      event_name: 'string',
      event_date: 'timestamp',
      category_name: 'string',
      artist_id: 'integer',
      artist_name: 'string',
      venue_id: 'integer',
      venue_name: 'string',
      venue_city: 'string',
      venue_country: 'string',
      venue_country_code: 'string',
      tickets_sold: 'integer',
      tickets_sold_24h: 'integer',
      available_tickets: 'integer',
      capacity: 'integer',
      average_ticket_price_sold: 'number',
    });
    expect(Object.isFrozen(FILTERABLE_ATTRIBUTES)).toBe(true);
    expect(ATTRS.event_date).toEqual({ type: 'timestamp', column: 't.event_date' });
    const custom = { name: { type: 'string', column: 'lower_name' } } satisfies Record<string, FilterAttribute>;
    expect(compileFilter('name:x', custom).sql).toBe('(lower(lower_name) = lower($1::text))');
  });

  it('compileFilterNode refuses a node whose attribute is not in the map (a programming error)', () => {
    expect(() => compileFilterNode({ kind: 'match', attribute: 'nope', value: 'x' }, ATTRS)).toThrow(/missing from the attribute map/);
    expect(compileFilterNode(null, ATTRS)).toEqual({ sql: 'TRUE', params: [] });
  });
});

const TOO_MANY_TESTS = Array.from({ length: MAX_TESTS + 1 }, (_, k) => `capacity>${k}`).join(' OR ');

describe('filterExpression: errors point at the position', () => {
  const long = (n: number) => `venue_name:"${'a'.repeat(n - 13)}"`;
  const cases: [string, number, RegExp][] = [
    ['tickets_sold>1 AND foo:1', 19, /^unknown attribute "foo" at position 19$/],
    ['constructor:1', 0, /unknown attribute "constructor"/],
    ['__proto__:x', 0, /unknown attribute "__proto__"/],
    ['toString>1', 0, /unknown attribute "toString"/],
    ['Venue_City:x', 0, /unknown attribute "Venue_City"/],
    ['venue_city:', 11, /^expected a value after ":" at position 11, found the end of the expression$/],
    ['venue_city:)', 11, /expected a value after ":" at position 11, found "\)"/],
    ['(venue_city: AND capacity>1)', 13, /expected a value after ":" at position 13, found "AND" \(AND is a keyword; quote it/],
    ['venue_country_code:TO', 19, /expected a value after ":" at position 19/],
    ['venue_city>5', 10, /^operator ">" needs a numeric attribute; venue_city is text \(position 10\)$/],
    ['venue_city = Paris', 11, /operator "=" needs a numeric attribute; venue_city is text \(position 11\)/],
    ['venue_city:a TO b', 13, /a range \("TO"\) needs a numeric attribute; venue_city is text \(position 13\)/],
    ['(venue_city:Paris', 0, /^unbalanced parentheses: "\(" at position 0 is not closed$/],
    ['((venue_city:Paris)', 0, /"\(" at position 0 is not closed/],
    ['venue_city:Paris)', 16, /^unbalanced parentheses: "\)" at position 16 has no matching "\("$/],
    ['venue_city:Paris capacity>1', 17, /^expected AND, OR or the end of the expression at position 17, found "capacity"$/],
    ['(venue_city:Paris capacity>1)', 18, /expected AND, OR or "\)" at position 18, found "capacity"/],
    ['venue_city:Paris AND', 20, /^expected an attribute name at position 20, found the end of the expression$/],
    ['AND venue_city:x', 0, /expected an attribute name at position 0, found "AND"/],
    ['NOT', 3, /expected an attribute name at position 3/],
    ['()', 1, /expected an attribute name at position 1, found "\)"/],
    ['"venue_city":x', 0, /expected an attribute name at position 0/],
    ['capacity venue_city', 9, /expected ":" or a comparison operator after capacity at position 9/],
    ['capacity', 8, /expected ":" or a comparison operator after capacity at position 8, found the end/],
    ['venue_city:"Paris', 11, /^unterminated quoted value: the " at position 11 is not closed$/],
    ["venue_city:'Paris\\'", 11, /unterminated quoted value: the ' at position 11/],
    ['venue_city:"Par\\', 11, /unterminated quoted value/],
    ['venue_city:"a\u0000b"', 13, /control character "\\u0000" in a quoted value at position 13/],
    ['venue_city:"a\\\u0001"', 14, /control character/],
    ['venue_city:Paris & capacity>1', 17, /^unexpected character "&" at position 17$/],
    ['venue_city:Paris; DROP TABLE x', 16, /unexpected character ";" at position 16/],
    ['venue_city:😀', 11, /unexpected character "😀" at position 11/],
    ['capacity!5', 8, /unexpected character "!" at position 8 \(did you mean "!="\?\)/],
    ['capacity:abc', 9, /expected a number after ":" at position 9 \(capacity is an integer\), found "abc"/],
    ['capacity>"5"', 9, /expected a number after ">" at position 9/],
    ['capacity==5', 9, /^expected a number after "=" at position 9 \(capacity is an integer\), found "="$/],
    ['average_ticket_price_sold>1e5', 26, /expected a number after ">" at position 26 \(average_ticket_price_sold is a number\)/],
    ['average_ticket_price_sold>.5', 26, /expected a number/],
    ['capacity:1.5', 9, /^capacity is an integer; 1.5 is not a whole number \(position 9\)$/],
    ['event_date>1700000000.5', 11, /event_date is a timestamp \(Unix seconds\); 1700000000.5 is not a whole number/],
    ['capacity:1 TO', 13, /expected a number after "TO" at position 13 \(capacity is an integer\), found the end/],
    ['capacity:1 TO x', 14, /expected a number after "TO" at position 14/],
    ['capacity:9007199254740992', 9, /number out of range at position 9/],
    ['average_ticket_price_sold<-9007199254740992', 26, /number out of range at position 26/],
    [`capacity>${'9'.repeat(33)}`, 9, /number too long at position 9 \(at most 32 characters\)/],
    [`average_ticket_price_sold>0.${'0'.repeat(40)}1`, 26, /number too long/],
    [long(MAX_EXPRESSION_LENGTH + 1), 6000, /^expression longer than 6000 characters \(6001\); it must end before position 6000$/],
    ['('.repeat(MAX_NESTING_DEPTH + 1) + 'capacity>1' + ')'.repeat(MAX_NESTING_DEPTH + 1), 32, /nesting deeper than 32 levels .* at position 32/],
    ['NOT '.repeat(MAX_NESTING_DEPTH + 1) + 'capacity>1', 128, /nesting deeper than 32 levels/],
    ['NOT ('.repeat(20) + 'capacity>1' + ')'.repeat(20), 80, /nesting deeper than 32 levels/],
    ['('.repeat(5999), 32, /nesting deeper/],
    [TOO_MANY_TESTS, TOO_MANY_TESTS.lastIndexOf('capacity'), /more than 100 attribute tests \(test 101 starts at position/],
  ];

  // Long inputs get a short test name.
  const labelled = cases.map(([e, p, m]) => [e.length > 60 ? `${e.slice(0, 57)}…` : e, p, e, m] as const);
  it.each(labelled)('%j fails at %i', (_label, position, expression, message) => {
    const err = syntaxError(expression);
    expect(err).toBeInstanceOf(FilterSyntaxError);
    expect(err.name).toBe('FilterSyntaxError');
    expect(err.message).toMatch(message);
    expect(err.position).toBe(position);
    expect(err.message).toContain(`position ${position}`);
  });

  it('accepts exactly the limits: 6000 characters, 32 levels, 100 tests', () => {
    expect(long(MAX_EXPRESSION_LENGTH)).toHaveLength(MAX_EXPRESSION_LENGTH);
    expect(compileFilter(long(MAX_EXPRESSION_LENGTH), ATTRS).params).toEqual(['a'.repeat(6000 - 13)]);
    expect(compileFilter('('.repeat(32) + 'capacity>1' + ')'.repeat(32), ATTRS).sql).toBe('(t.capacity > $1::bigint)');
    expect(parseFilter('NOT '.repeat(32) + 'capacity>1', FILTERABLE_ATTRIBUTES)).toMatchObject({ kind: 'not' });
    const hundred = compileFilter(Array.from({ length: MAX_TESTS }, (_, k) => `capacity>${k}`).join(' OR '), ATTRS);
    expect(hundred.params).toHaveLength(100);
    checkCompiled(hundred, 1);
  });

  it('depth counts nesting, not how many groups there are', () => {
    const chain = Array.from({ length: 100 }, () => '(capacity>1)').join(' AND ');
    expect(parseFilter(chain, FILTERABLE_ATTRIBUTES)).toMatchObject({ kind: 'and' });
  });
});

// ---------------------------------------------------------------------------------------------
// Properties over arbitrary text

const NASTY = [
  "'; DROP TABLE x; --",
  '" OR 1=1 --',
  "') OR ('1'='1",
  '$1',
  '::text',
  '/*',
  '*/',
  ';',
  '\\',
  '\u0000',
  '\ud800',
  'München',
  '中文',
  '😀',
  'İ',
  'ß',
  '\u00a0',
  '\u2028',
  'lower(',
  'TRUE',
];
const FRAGMENTS = [
  ...NAMES,
  'foo',
  '__proto__',
  'constructor',
  'AND',
  'and',
  'OR',
  'Or',
  'NOT',
  'not',
  'TO',
  'to',
  ':',
  '<',
  '<=',
  '>',
  '>=',
  '=',
  '!=',
  '!',
  '(',
  ')',
  '"',
  "'",
  ' ',
  ' ',
  ' ',
  '\t',
  '0',
  '1',
  '-5',
  '12.5',
  '2147483648',
  '9007199254740991',
  '9007199254740993',
  '1e400',
  '-0',
  '.5',
  'Paris',
  ...NASTY,
];

// Attribute tests with odd values, joined by keywords and parentheses: mostly valid or nearly so,
// which is what carries hostile values past the tokenizer.
const ODD_TEXT = fc.oneof(
  fc.constantFrom(...NASTY).map((v) => JSON.stringify(v)),
  fc.string({ unit: 'binary', maxLength: 12 }).map((v) => `'${v.replace(/[\\']/g, '\\$&')}'`),
  fc.constantFrom('Paris', 'TO', '"TO"', '12.5'),
);
const ODD_NUMBER = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('0', '-5', '2147483648', '9007199254740991', '-9007199254740991', '-0', '007') },
  { weight: 1, arbitrary: fc.constantFrom('12.5', '9007199254740992', '1e3', '0x10', 'Infinity', 'NaN') },
);
const testish = fc.constantFrom(...NAMES, 'foo').chain((name) => {
  const type = FILTERABLE_ATTRIBUTES[name as FilterableAttributeName] ?? 'string';
  const fitting =
    type === 'string'
      ? fc.tuple(fc.constant(':'), ODD_TEXT)
      : fc.oneof(
          fc.tuple(fc.constantFrom(':', '>', '<=', '!=', '=', '<', '>='), ODD_NUMBER),
          fc.tuple(fc.constant(':'), ODD_NUMBER, fc.constantFrom(' TO 5', ' to 100', ' TO x')),
        );
  const any = fc.tuple(fc.constantFrom(':', '>', '='), fc.oneof(ODD_TEXT, ODD_NUMBER));
  return fc.oneof({ weight: 6, arbitrary: fitting }, { weight: 1, arbitrary: any }).map((parts) => name + parts.join(''));
});
const testishText = fc
  .array(fc.tuple(testish, fc.constantFrom(' AND ', ' OR ', ' and NOT ')), { minLength: 1, maxLength: 4 })
  .chain((parts) => {
    const body = parts.map(([t, join], k) => (k === parts.length - 1 ? t : t + join)).join('');
    return fc.constantFrom(body, body, `(${body})`, `NOT (${body}`, `${body})`);
  });

const arbitraryText = fc.oneof(
  testishText,
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ unit: 'grapheme', maxLength: 80 }),
  fc.string({ unit: fc.constantFrom(...FRAGMENTS), maxLength: 40 }),
  fc.array(fc.constantFrom(...FRAGMENTS), { maxLength: 30 }).map((parts) => parts.join(' ')),
);

describe('filterExpression: properties over arbitrary text', () => {
  it('(1)-(3) any string compiles to whitelisted SQL with consecutive placeholders, or is a FilterSyntaxError', () => {
    let nonEmpty = 0;
    fc.assert(
      fc.property(arbitraryText, fc.integer({ min: 1, max: 60 }), (expression, firstParam) => {
        let result: { sql: string; params: unknown[] };
        try {
          result = compileFilter(expression, ATTRS, firstParam);
        } catch (err) {
          expect(err).toBeInstanceOf(FilterSyntaxError);
          const { position, message } = err as FilterSyntaxError;
          expect(Number.isInteger(position) && position >= 0 && position <= expression.length).toBe(true);
          expect(message).toContain(`position ${position}`);
          return;
        }
        if (result.params.length > 0) nonEmpty += 1;
        checkCompiled(result, firstParam);
      }),
      { numRuns: 3000 },
    );
    // The generated strings are meant to reach the compiler, not only the tokenizer's errors.
    expect(nonEmpty).toBeGreaterThan(60);
  });
});

// ---------------------------------------------------------------------------------------------
// Generated valid expressions against a real PostgreSQL

type Row = Record<FilterableAttributeName, string | number | null> & { id: number };

/** The reference semantics: a test on NULL is false; text equality compares lower-cased. */
function evaluate(n: FilterNode, row: Row): boolean {
  switch (n.kind) {
    case 'and':
      return n.children.every((c) => evaluate(c, row));
    case 'or':
      return n.children.some((c) => evaluate(c, row));
    case 'not':
      return !evaluate(n.child, row);
    case 'match': {
      const v = row[n.attribute as FilterableAttributeName];
      return typeof v === 'string' && v.toLowerCase() === n.value.toLowerCase();
    }
    case 'compare': {
      const v = row[n.attribute as FilterableAttributeName];
      if (typeof v !== 'number') return false;
      switch (n.op) {
        case '<':
          return v < n.value;
        case '<=':
          return v <= n.value;
        case '>':
          return v > n.value;
        case '>=':
          return v >= n.value;
        case '=':
          return v === n.value;
        case '!=':
          return v !== n.value;
      }
      return false;
    }
    case 'range': {
      const v = row[n.attribute as FilterableAttributeName];
      return typeof v === 'number' && v >= n.low && v <= n.high;
    }
  }
}

const TEXT_NAMES = NAMES.filter((n) => FILTERABLE_ATTRIBUTES[n] === 'string');
const INT_NAMES = NAMES.filter((n) => FILTERABLE_ATTRIBUTES[n] === 'integer' || FILTERABLE_ATTRIBUTES[n] === 'timestamp');
const NUM_NAMES = NAMES.filter((n) => FILTERABLE_ATTRIBUTES[n] === 'number');

// Candidate text values: case variants (so equality is tested case-insensitively), quoting and
// escaping needs, keywords, injection text. Only those for which PostgreSQL's lower() agrees
// with JavaScript's toLowerCase() in the test database's locale are used (see beforeAll).
const TEXT_CANDIDATES = [
  'Paris',
  'PARIS',
  'paris',
  'New York',
  'new york',
  'US',
  'us',
  'O2-Arena_1.5',
  'München',
  'MÜNCHEN',
  'Émile',
  'ÉMILE',
  'Øresund',
  '中文',
  '€uro',
  "O'Brien",
  'say "hi"',
  'back\\slash',
  '',
  'TO',
  'and',
  'Not',
  '1234',
  '-',
  "'; DROP TABLE x; --",
  '" OR 1=1 --',
  'x)) OR TRUE --',
];
// Around int4's limits and at the safe-integer limit: the ::bigint parameter must keep these
// from failing against the int4 columns.
const INT_EDGES = [2147483647, 2147483648, -2147483648, -2147483649, 3000000000, 9007199254740991, -9007199254740991];

// The temporary table: int4 for the counters (as a real table might have), bigint for ids and
// the Unix-second date, numeric(12,2) for the price; every column nullable.
const COLUMN_SQL: Record<AttributeType, (n: string) => string> = {
  string: () => 'text',
  integer: (n) => (n.endsWith('_id') ? 'bigint' : 'integer'),
  timestamp: () => 'bigint',
  number: () => 'numeric(12,2)',
};

const WORD_RE = /^[\p{L}\p{M}\p{Nd}_.-]+$/u;
const KEYWORD_RE = /^(?:and|or|not|to)$/i;

/** Text for an AST, with random keyword case, spacing, quoting, escapes and redundant parentheses. */
function print(n: FilterNode, rnd: () => number): string {
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const sp = () => pick([' ', ' ', ' ', '  ', '\t', '\n']);
  const opt = () => pick(['', '', ' ']);
  const kw = (k: string) => pick([k, k.toLowerCase(), k[0] + k.slice(1).toLowerCase()]);
  const num = (v: number, type: AttributeType) => (type === 'number' && rnd() < 0.3 ? v.toFixed(4) : String(v));
  const quote = (v: string) => {
    const q = pick(['"', "'"]);
    let out = q;
    for (const c of v) out += c === q || c === '\\' || rnd() < 0.05 ? `\\${c}` : c;
    return out + q;
  };
  const wrap = (s: string, needed: boolean) => (needed || rnd() < 0.1 ? `(${opt()}${s}${opt()})` : s);
  switch (n.kind) {
    case 'and':
      return n.children.map((c) => wrap(print(c, rnd), c.kind === 'and' || c.kind === 'or')).join(`${sp()}${kw('AND')}${sp()}`);
    case 'or':
      return n.children.map((c) => wrap(print(c, rnd), c.kind === 'or')).join(`${sp()}${kw('OR')}${sp()}`);
    case 'not':
      return `${kw('NOT')}${sp()}${wrap(print(n.child, rnd), n.child.kind === 'and' || n.child.kind === 'or')}`;
    case 'match': {
      const bare = WORD_RE.test(n.value) && !KEYWORD_RE.test(n.value) && rnd() < 0.7;
      return `${n.attribute}${opt()}:${opt()}${bare ? n.value : quote(n.value)}`;
    }
    case 'compare': {
      const type = FILTERABLE_ATTRIBUTES[n.attribute as FilterableAttributeName];
      const op = n.op === '=' && rnd() < 0.5 ? ':' : n.op;
      return `${n.attribute}${opt()}${op}${opt()}${num(n.value, type)}`;
    }
    case 'range': {
      const type = FILTERABLE_ATTRIBUTES[n.attribute as FilterableAttributeName];
      return `${n.attribute}:${num(n.low, type)}${sp()}${kw('TO')}${sp()}${num(n.high, type)}`;
    }
  }
}

function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function countTests(n: FilterNode): number {
  if (n.kind === 'and' || n.kind === 'or') return n.children.reduce((s, c) => s + countTests(c), 0);
  if (n.kind === 'not') return countTests(n.child);
  return 1;
}

describe('filterExpression: generated expressions against PostgreSQL', () => {
  let client: pg.Client;
  let rows: Row[];
  let texts: string[];
  let exprArb: fc.Arbitrary<{ ast: FilterNode; text: string }>;

  beforeAll(async () => {
    // inject() rather than the harness's databaseUrl(): the harness imports the whole gateway,
    // and this module needs nothing but the run's database.
    client = new pg.Client({ connectionString: inject('databaseUrl') });
    await client.connect();
    const probe = await client.query<{ x: string; l: string }>('SELECT x, lower(x) AS l FROM unnest($1::text[]) AS x', [TEXT_CANDIDATES]);
    texts = probe.rows.filter((r) => r.l === r.x.toLowerCase()).map((r) => r.x);
    expect(texts.length).toBeGreaterThan(15); // ASCII always agrees; the rest depends on the locale

    const textValue = fc.constantFrom(...texts);
    const intValue = fc.oneof({ weight: 5, arbitrary: fc.integer({ min: -2, max: 22 }) }, { weight: 1, arbitrary: fc.constantFrom(...INT_EDGES) });
    const numValue = fc.integer({ min: -20, max: 100 }).map((k) => k / 4);
    const nullable = <T,>(a: fc.Arbitrary<T>) => fc.option(a, { freq: 8, nil: null });
    const rowArb = fc.record(
      Object.fromEntries(
        NAMES.map((n) => {
          const type = FILTERABLE_ATTRIBUTES[n];
          const value =
            type === 'string'
              ? textValue
              : type === 'number'
                ? fc.integer({ min: 0, max: 60 }).map((k) => k / 4)
                : COLUMN_SQL[type](n) === 'integer'
                  ? fc.integer({ min: 0, max: 20 })
                  : fc.oneof(fc.integer({ min: 0, max: 20 }), fc.constantFrom(...INT_EDGES));
          return [n, nullable(value as fc.Arbitrary<string | number>)];
        }),
      ) as Record<FilterableAttributeName, fc.Arbitrary<string | number | null>>,
    );
    rows = fc.sample(rowArb, { numRuns: 50, seed: 20240605 }).map((r, id) => ({ ...r, id }) as Row);

    await client.query(
      `CREATE TEMP TABLE filter_rows (id integer PRIMARY KEY, ${NAMES.map((n) => `${n} ${COLUMN_SQL[FILTERABLE_ATTRIBUTES[n]](n)}`).join(', ')})`,
    );
    for (const row of rows) {
      await client.query(
        `INSERT INTO filter_rows (id, ${NAMES.join(', ')}) VALUES (${['id', ...NAMES].map((_, k) => `$${k + 1}`).join(', ')})`,
        [row.id, ...NAMES.map((n) => row[n])],
      );
    }

    const leaf: fc.Arbitrary<FilterNode> = fc.oneof(
      fc.record({ kind: fc.constant('match' as const), attribute: fc.constantFrom(...TEXT_NAMES), value: textValue }),
      fc.oneof(
        fc.record({
          kind: fc.constant('compare' as const),
          attribute: fc.constantFrom(...INT_NAMES),
          op: fc.constantFrom<ComparisonOperator>('<', '<=', '>', '>=', '=', '!='),
          value: intValue,
        }),
        fc.record({
          kind: fc.constant('compare' as const),
          attribute: fc.constantFrom(...NUM_NAMES),
          op: fc.constantFrom<ComparisonOperator>('<', '<=', '>', '>=', '=', '!='),
          value: fc.integer({ min: -20, max: 130 }).map((k) => k / 8),
        }),
      ),
      fc.oneof(
        fc.record({ kind: fc.constant('range' as const), attribute: fc.constantFrom(...INT_NAMES), low: intValue, high: intValue }),
        fc.record({ kind: fc.constant('range' as const), attribute: fc.constantFrom(...NUM_NAMES), low: numValue, high: numValue }),
      ),
    );
    const { node } = fc.letrec<{ node: FilterNode; and: FilterNode; or: FilterNode; not: FilterNode }>((tie) => ({
      node: fc.oneof({ maxDepth: 4, depthSize: 'small' }, leaf, tie('and'), tie('or'), tie('not')),
      and: fc.array(tie('node'), { minLength: 2, maxLength: 3 }).map((children) => ({ kind: 'and' as const, children })),
      or: fc.array(tie('node'), { minLength: 2, maxLength: 3 }).map((children) => ({ kind: 'or' as const, children })),
      not: tie('node').map((child) => ({ kind: 'not' as const, child })),
    }));
    exprArb = fc.tuple(node, fc.noBias(fc.integer())).map(([ast, seed]) => ({ ast, text: print(ast, prng(seed)) }));
  });

  afterAll(async () => {
    await client?.end();
  });

  const select = async (sql: string, params: unknown[]): Promise<number[]> => {
    // $1 belongs to the surrounding query, as it will in the search route: the filter starts at $2.
    const r = await client.query<{ id: number }>(`SELECT t.id FROM filter_rows t WHERE t.id >= $1 AND ${sql} ORDER BY t.id`, [0, ...params]);
    return r.rows.map((x) => x.id);
  };

  it('(4) generated valid expressions parse back to their AST, compile, and select what the reference evaluator selects', async () => {
    let nonTrivial = 0;
    await fc.assert(
      fc.asyncProperty(exprArb, async ({ ast, text }) => {
        expect(countTests(ast)).toBeLessThanOrEqual(MAX_TESTS);
        expect(text.length).toBeLessThanOrEqual(MAX_EXPRESSION_LENGTH);
        expect(parseFilter(text, FILTERABLE_ATTRIBUTES)).toEqual(ast);
        const compiled = compileFilter(text, ATTRS, 2);
        checkCompiled(compiled, 2);
        const expected = rows.filter((r) => evaluate(ast, r)).map((r) => r.id);
        expect(await select(compiled.sql, compiled.params), `${text}\n${compiled.sql}\n${JSON.stringify(compiled.params)}`).toEqual(expected);
        if (expected.length > 0 && expected.length < rows.length) nonTrivial += 1;
      }),
      { numRuns: 250 },
    );
    // The value pools are small so that filters actually split the rows.
    expect(nonTrivial).toBeGreaterThan(50);
  });

  it('every expression that compiles, however mangled, runs in PostgreSQL without an error', async () => {
    // Valid expressions with random fragments spliced in: mostly syntax errors, but the ones that
    // still compile carry odd values (unicode, lone surrogates, huge numbers) to the database.
    const mangled = fc
      .tuple(exprArb, fc.array(fc.tuple(fc.nat(), fc.constantFrom(...FRAGMENTS)), { maxLength: 3 }))
      .map(([{ text }, splices]) => splices.reduce((s, [at, frag]) => s.slice(0, at % (s.length + 1)) + frag + s.slice(at % (s.length + 1)), text));
    let ran = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(mangled, arbitraryText), async (expression) => {
        let compiled;
        try {
          compiled = compileFilter(expression, ATTRS, 2);
        } catch (err) {
          expect(err).toBeInstanceOf(FilterSyntaxError);
          return;
        }
        checkCompiled(compiled, 2);
        await select(compiled.sql, compiled.params);
        ran += 1;
      }),
      { numRuns: 300 },
    );
    expect(ran).toBeGreaterThan(20);
  });

  it('values at the edges reach PostgreSQL as parameters and compare correctly', async () => {
    const sql = (e: string) => compileFilter(e, ATTRS, 2);
    for (const e of [
      'tickets_sold>9007199254740991',
      'tickets_sold<-9007199254740991',
      'capacity:2147483648 TO 9007199254740991',
      `venue_name:"'; DROP TABLE filter_rows; --"`,
      'venue_name:"\ud800"',
      'average_ticket_price_sold<=0.00000000000000000000000000001',
      'NOT (venue_city:x OR NOT average_ticket_price_sold>0)',
    ]) {
      const c = sql(e);
      const ids = await select(c.sql, c.params);
      const ast = parseFilter(e, FILTERABLE_ATTRIBUTES)!;
      if (!e.includes('\ud800')) expect(ids, e).toEqual(rows.filter((r) => evaluate(ast, r)).map((r) => r.id));
    }
    expect((await client.query('SELECT count(*)::int AS n FROM filter_rows')).rows[0].n).toBe(rows.length);
  });
});
