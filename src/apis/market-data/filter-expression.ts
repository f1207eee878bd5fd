// Search filterExpression (POST /svc/data/search, spec 4.1, limit in section 8): a tokenizer and
// a recursive-descent parser that turn the client's text into an AST, and a compiler that turns
// the AST into a parameterised SQL boolean fragment for a WHERE clause. Pure and dependency-free
// so the search route, the benchmark and the property tests share one definition of the syntax.
//
// Grammar (keywords AND, OR, NOT, TO are case-insensitive; whitespace separates tokens):
//   expr    := or
//   or      := and ('OR' and)*
//   and     := unary ('AND' unary)*
//   unary   := 'NOT' unary | primary
//   primary := '(' expr ')' | test
//   test    := attribute ':' value                 equality; text compares case-insensitively
//            | attribute ':' number 'TO' number    inclusive range, numeric attributes only
//            | attribute op number                 op: < <= > >= = !=, numeric attributes only
//   value   := word | quoted
//   word    := one or more of: letters, digits, '_', '-', '.'
//   quoted  := "..." or '...' ; a backslash takes the next character literally (\" \' \\)
//   number  := -?digits(.digits)?  (a word of that shape; integer attributes take no decimals)
// A bare keyword is never a value (`venue_country_code:"TO"` needs the quotes), so a missing
// value is reported where it is missing rather than as a confusing error further on.
//
// Semantics: a test on a NULL column is false, and NOT of it is true (two-valued logic, like a
// missing attribute in Algolia's filters), whatever the nesting. `event_date` is compared as
// Unix seconds, as it appears in the search hit. An empty (or all-whitespace) expression filters
// nothing: it compiles to `TRUE` so callers can always write `WHERE ... AND <sql>`.
//
// Safety: every value goes to `params` as a typed `$n` placeholder; the SQL text is assembled
// only from the caller's trusted column expressions, fixed keywords and operators. Every failure
// on client input is a FilterSyntaxError with a 0-based position (UTF-16 code units, the same
// unit as String#length and the spec's 6000-character limit), to be rendered as a 400
// INVALID_REQUEST by the route; nothing else is thrown for any input string.

export type AttributeType = 'string' | 'integer' | 'number' | 'timestamp';

export interface FilterAttribute {
  type: AttributeType;
  /** A trusted SQL expression (column reference or function call) that yields the attribute. */
  column: string;
}

export interface CompiledFilter {
  /** A parenthesised SQL boolean expression, or `TRUE` for an empty expression. */
  sql: string;
  params: unknown[];
}

export type ComparisonOperator = '<' | '<=' | '>' | '>=' | '=' | '!=';

/** The parsed expression. Values are already decoded (quotes and escapes removed, numbers read). */
export type FilterNode =
  | { kind: 'and'; children: FilterNode[] }
  | { kind: 'or'; children: FilterNode[] }
  | { kind: 'not'; child: FilterNode }
  | { kind: 'match'; attribute: string; value: string }
  | { kind: 'compare'; attribute: string; op: ComparisonOperator; value: number }
  | { kind: 'range'; attribute: string; low: number; high: number };

/** Spec section 8: filterExpression is at most 6000 characters. */
export const MAX_EXPRESSION_LENGTH = 6000;
/** Nested parentheses plus NOTs; bounds the parser's and compiler's recursion. */
export const MAX_NESTING_DEPTH = 32;
/** Attribute tests per expression; bounds the SQL and the parameter count. */
export const MAX_TESTS = 100;
/** Longer numerals are refused rather than silently rounded or underflowed to 0. */
export const MAX_NUMBER_LENGTH = 32;

/**
 * The filterable attributes: the search hit's fields (spec 2.4) except objectID, which is only
 * event_id as a string. Types only; the search route binds columns with {@link bindColumns}.
 */
export const FILTERABLE_ATTRIBUTES = Object.freeze({
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
} as const satisfies Record<string, AttributeType>);

export type FilterableAttributeName = keyof typeof FILTERABLE_ATTRIBUTES;

/** The attribute map for {@link compileFilter}, from one trusted column expression per attribute. */
export function bindColumns(columns: Readonly<Record<FilterableAttributeName, string>>): Record<string, FilterAttribute> {
  const out: Record<string, FilterAttribute> = {};
  for (const name of Object.keys(FILTERABLE_ATTRIBUTES) as FilterableAttributeName[]) {
    out[name] = { type: FILTERABLE_ATTRIBUTES[name], column: columns[name] };
  }
  return out;
}

export class FilterSyntaxError extends Error {
  override readonly name = 'FilterSyntaxError';
  constructor(
    message: string,
    /** 0-based offset into the expression (UTF-16 code units); the length when at the end. */
    readonly position: number,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------
// Tokenizer

type TokenKind = 'word' | 'quoted' | '(' | ')' | ':' | 'op' | 'end';

interface Token {
  kind: TokenKind;
  /** Words: as written; quoted: the decoded value; op: the operator; otherwise the punctuation. */
  text: string;
  pos: number;
  end: number;
}

const WHITESPACE = /\s+/uy;
// Letters include accents and non-Latin scripts (venue_city:München); digits only decimal ones.
const WORD = /[\p{L}\p{M}\p{Nd}_.-]+/uy;
const NUMBER = /^-?[0-9]+(?:\.[0-9]+)?$/;
// No `u` flag: case-folding stays ASCII, so no exotic character folds into a keyword.
const KEYWORD = /^(?:and|or|not|to)$/i;

function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < expression.length) {
    WHITESPACE.lastIndex = i;
    if (WHITESPACE.test(expression)) {
      i = WHITESPACE.lastIndex;
      continue;
    }
    const c = expression[i]!;
    if (c === '(' || c === ')' || c === ':') {
      tokens.push({ kind: c, text: c, pos: i, end: i + 1 });
      i += 1;
      continue;
    }
    if (c === '<' || c === '>' || c === '=' || c === '!') {
      const two = expression.slice(i, i + 2);
      const op = two === '<=' || two === '>=' || two === '!=' ? two : c;
      if (op === '!') throw new FilterSyntaxError(`unexpected character "!" at position ${i} (did you mean "!="?)`, i);
      tokens.push({ kind: 'op', text: op, pos: i, end: i + op.length });
      i += op.length;
      continue;
    }
    if (c === '"' || c === "'") {
      const token = readQuoted(expression, i);
      tokens.push(token);
      i = token.end;
      continue;
    }
    WORD.lastIndex = i;
    if (WORD.test(expression)) {
      tokens.push({ kind: 'word', text: expression.slice(i, WORD.lastIndex), pos: i, end: WORD.lastIndex });
      i = WORD.lastIndex;
      continue;
    }
    throw new FilterSyntaxError(`unexpected character ${showChar(expression, i)} at position ${i}`, i);
  }
  tokens.push({ kind: 'end', text: '', pos: expression.length, end: expression.length });
  return tokens;
}

function readQuoted(expression: string, start: number): Token {
  const quote = expression[start]!;
  let value = '';
  let i = start + 1;
  while (i < expression.length) {
    let c = expression[i]!;
    if (c === quote) return { kind: 'quoted', text: value, pos: start, end: i + 1 };
    if (c === '\\') {
      i += 1;
      if (i >= expression.length) break;
      c = expression[i]!;
    }
    // PostgreSQL text cannot hold NUL (the query would fail with a 500), and no catalog name
    // holds other control characters, so they are refused where they are rather than at the DB.
    const code = c.charCodeAt(0);
    if (code < 0x20 || code === 0x7f) {
      throw new FilterSyntaxError(`control character ${showChar(expression, i)} in a quoted value at position ${i}`, i);
    }
    value += c;
    i += 1;
  }
  throw new FilterSyntaxError(`unterminated quoted value: the ${quote} at position ${start} is not closed`, start);
}

function showChar(expression: string, i: number): string {
  return JSON.stringify(String.fromCodePoint(expression.codePointAt(i)!));
}

// ---------------------------------------------------------------------------------------------
// Parser

type TypeOf = (attribute: string) => AttributeType | undefined;

const TYPE_WORDS: Record<AttributeType, string> = {
  string: 'text',
  integer: 'an integer',
  number: 'a number',
  timestamp: 'a timestamp (Unix seconds)',
};

class Parser {
  private index = 0;
  private tests = 0;

  constructor(
    private readonly expression: string,
    private readonly tokens: Token[],
    private readonly typeOf: TypeOf,
  ) {}

  parse(): FilterNode | null {
    if (this.peek().kind === 'end') return null;
    const node = this.parseOr(0);
    const t = this.peek();
    if (t.kind === ')') throw this.error(`unbalanced parentheses: ")" at position ${t.pos} has no matching "("`, t);
    if (t.kind !== 'end') throw this.error(`expected AND, OR or the end of the expression at position ${t.pos}, found ${this.describe(t)}`, t);
    return node;
  }

  private peek(): Token {
    return this.tokens[this.index]!;
  }

  private next(): Token {
    const t = this.tokens[this.index]!;
    // The final 'end' token is never consumed, so peeking past the input stays in bounds.
    if (t.kind !== 'end') this.index += 1;
    return t;
  }

  private isKeyword(t: Token, keyword?: 'AND' | 'OR' | 'NOT' | 'TO'): boolean {
    if (t.kind !== 'word' || !KEYWORD.test(t.text)) return false;
    return keyword === undefined || t.text.toUpperCase() === keyword;
  }

  // Both levels loop instead of recursing, so long AND/OR chains cost no stack.
  private parseOr(depth: number): FilterNode {
    const children = [this.parseAnd(depth)];
    while (this.isKeyword(this.peek(), 'OR')) {
      this.next();
      children.push(this.parseAnd(depth));
    }
    return children.length === 1 ? children[0]! : { kind: 'or', children };
  }

  private parseAnd(depth: number): FilterNode {
    const children = [this.parseUnary(depth)];
    while (this.isKeyword(this.peek(), 'AND')) {
      this.next();
      children.push(this.parseUnary(depth));
    }
    return children.length === 1 ? children[0]! : { kind: 'and', children };
  }

  // The only recursive step. The depth check comes before the recursive call, so no input can
  // nest deeper than MAX_NESTING_DEPTH frames of this cycle (a few hundred JS frames at most).
  private parseUnary(depth: number): FilterNode {
    const t = this.peek();
    if (this.isKeyword(t, 'NOT') || t.kind === '(') {
      if (depth >= MAX_NESTING_DEPTH) {
        throw this.error(`nesting deeper than ${MAX_NESTING_DEPTH} levels (parentheses and NOTs) at position ${t.pos}`, t);
      }
      this.next();
      if (t.kind === 'word') return { kind: 'not', child: this.parseUnary(depth + 1) };
      const inner = this.parseOr(depth + 1);
      const close = this.peek();
      if (close.kind === 'end') throw this.error(`unbalanced parentheses: "(" at position ${t.pos} is not closed`, t);
      if (close.kind !== ')') {
        throw this.error(`expected AND, OR or ")" at position ${close.pos}, found ${this.describe(close)}`, close);
      }
      this.next();
      return inner;
    }
    return this.parseTest();
  }

  private parseTest(): FilterNode {
    const name = this.next();
    if (name.kind !== 'word' || this.isKeyword(name)) {
      throw this.error(`expected an attribute name at position ${name.pos}, found ${this.describe(name)}`, name);
    }
    this.tests += 1;
    if (this.tests > MAX_TESTS) {
      throw this.error(`more than ${MAX_TESTS} attribute tests (test ${this.tests} starts at position ${name.pos})`, name);
    }
    const attribute = name.text;
    const type = this.typeOf(attribute);
    if (type === undefined) throw this.error(`unknown attribute ${JSON.stringify(attribute)} at position ${name.pos}`, name);

    const sep = this.next();
    if (sep.kind === 'op') {
      if (type === 'string') {
        throw this.error(`operator "${sep.text}" needs a numeric attribute; ${attribute} is text (position ${sep.pos})`, sep);
      }
      const value = this.number(this.next(), attribute, type, `"${sep.text}"`);
      return { kind: 'compare', attribute, op: sep.text as ComparisonOperator, value };
    }
    if (sep.kind !== ':') {
      throw this.error(`expected ":" or a comparison operator after ${attribute} at position ${sep.pos}, found ${this.describe(sep)}`, sep);
    }

    const v = this.next();
    if ((v.kind !== 'word' && v.kind !== 'quoted') || this.isKeyword(v)) {
      const hint = this.isKeyword(v) ? ` (${v.text} is a keyword; quote it to use it as a value)` : '';
      throw this.error(`expected a value after ":" at position ${v.pos}, found ${this.describe(v)}${hint}`, v);
    }
    const to = this.peek();
    if (type === 'string') {
      if (this.isKeyword(to, 'TO')) {
        throw this.error(`a range ("TO") needs a numeric attribute; ${attribute} is text (position ${to.pos})`, to);
      }
      return { kind: 'match', attribute, value: v.text };
    }
    const low = this.number(v, attribute, type, '":"');
    if (!this.isKeyword(to, 'TO')) return { kind: 'compare', attribute, op: '=', value: low };
    this.next();
    const high = this.number(this.next(), attribute, type, '"TO"');
    return { kind: 'range', attribute, low, high };
  }

  private number(t: Token, attribute: string, type: AttributeType, after: string): number {
    if (t.kind !== 'word' || !NUMBER.test(t.text)) {
      throw this.error(
        `expected a number after ${after} at position ${t.pos} (${attribute} is ${TYPE_WORDS[type]}), found ${this.describe(t)}`,
        t,
      );
    }
    if (t.text.length > MAX_NUMBER_LENGTH) {
      throw this.error(`number too long at position ${t.pos} (at most ${MAX_NUMBER_LENGTH} characters)`, t);
    }
    if (type !== 'number' && t.text.includes('.')) {
      throw this.error(`${attribute} is ${TYPE_WORDS[type]}; ${t.text} is not a whole number (position ${t.pos})`, t);
    }
    const value = Number(t.text);
    // Beyond 2^53 neither JS nor the ::bigint parameter would hold exactly what was typed.
    if (!Number.isFinite(value) || Math.abs(value) > Number.MAX_SAFE_INTEGER) {
      throw this.error(`number out of range at position ${t.pos} (magnitude at most ${Number.MAX_SAFE_INTEGER})`, t);
    }
    return value === 0 ? 0 : value; // -0 reads as 0
  }

  private describe(t: Token): string {
    if (t.kind === 'end') return 'the end of the expression';
    const raw = this.expression.slice(t.pos, t.end);
    return JSON.stringify(raw.length > 40 ? `${raw.slice(0, 40)}…` : raw);
  }

  private error(message: string, t: Token): FilterSyntaxError {
    return new FilterSyntaxError(message, t.pos);
  }
}

function parseWith(expression: string, typeOf: TypeOf): FilterNode | null {
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    throw new FilterSyntaxError(
      `expression longer than ${MAX_EXPRESSION_LENGTH} characters (${expression.length}); it must end before position ${MAX_EXPRESSION_LENGTH}`,
      MAX_EXPRESSION_LENGTH,
    );
  }
  return new Parser(expression, tokenize(expression), typeOf).parse();
}

/** Parses an expression against attribute types; null for an empty expression. */
export function parseFilter(expression: string, attributes: Readonly<Record<string, AttributeType>>): FilterNode | null {
  // Own properties only: "constructor" or "__proto__" are unknown attributes, not Object's.
  return parseWith(expression, (name) => (Object.hasOwn(attributes, name) ? attributes[name] : undefined));
}

// ---------------------------------------------------------------------------------------------
// Compiler

// Explicit parameter types: PostgreSQL never has to guess from context, and ::bigint keeps a
// value beyond the int4 range (e.g. tickets_sold>3000000000) from failing against an integer
// column (int4 vs int8 comparisons are index-supported); ::numeric compares decimals exactly.
const CAST: Record<AttributeType, string> = { string: 'text', integer: 'bigint', number: 'numeric', timestamp: 'bigint' };
const SQL_OP: Record<ComparisonOperator, string> = { '<': '<', '<=': '<=', '>': '>', '>=': '>=', '=': '=', '!=': '<>' };

/** Parses and compiles an expression; `{sql: 'TRUE', params: []}` when it is empty. */
export function compileFilter(
  expression: string,
  attributes: Readonly<Record<string, FilterAttribute>>,
  firstParam = 1,
): CompiledFilter {
  checkFirstParam(firstParam);
  const node = parseWith(expression, (name) => (Object.hasOwn(attributes, name) ? attributes[name]!.type : undefined));
  return compileFilterNode(node, attributes, firstParam);
}

/** Compiles a parsed expression (from {@link parseFilter} with the same attributes' types). */
export function compileFilterNode(
  node: FilterNode | null,
  attributes: Readonly<Record<string, FilterAttribute>>,
  firstParam = 1,
): CompiledFilter {
  checkFirstParam(firstParam);
  if (node === null) return { sql: 'TRUE', params: [] };
  const params: unknown[] = [];
  const placeholder = (value: unknown, type: AttributeType): string => {
    params.push(value);
    return `$${firstParam + params.length - 1}::${CAST[type]}`;
  };

  // Every result is parenthesised, so callers and parents can combine it without precedence
  // worries. `guarded` is set below a NOT: there each test is made non-NULL with IS TRUE, so a
  // NULL column makes the test false and its negation true. Outside NOT, plain comparisons keep
  // their NULL-as-false meaning in WHERE and stay usable by indexes.
  const compile = (n: FilterNode, guarded: boolean): string => {
    switch (n.kind) {
      case 'and':
      case 'or':
        return `(${n.children.map((c) => compile(c, guarded)).join(n.kind === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${compile(n.child, true)})`;
      default: {
        const attribute = Object.hasOwn(attributes, n.attribute) ? attributes[n.attribute] : undefined;
        if (!attribute) throw new Error(`filter node names attribute ${JSON.stringify(n.attribute)} missing from the attribute map`);
        const { column, type } = attribute;
        let test: string;
        if (n.kind === 'match') {
          // lower() on both sides: one case mapping (PostgreSQL's), and an expression index on
          // lower(column) can serve it.
          test = `lower(${column}) = lower(${placeholder(n.value, type)})`;
        } else if (n.kind === 'compare') {
          test = `${column} ${SQL_OP[n.op]} ${placeholder(n.value, type)}`;
        } else {
          test = `${column} >= ${placeholder(n.low, type)} AND ${column} <= ${placeholder(n.high, type)}`;
        }
        return guarded ? `((${test}) IS TRUE)` : `(${test})`;
      }
    }
  };
  return { sql: compile(node, false), params };
}

function checkFirstParam(firstParam: number): void {
  // A programming error, not client input: it is not a FilterSyntaxError.
  if (!Number.isSafeInteger(firstParam) || firstParam < 1) throw new RangeError(`firstParam must be a positive integer, got ${firstParam}`);
}
