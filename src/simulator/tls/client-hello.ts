// Reads a TLS ClientHello from the first bytes of a connection and computes its JA4 fingerprint
// (FoxIO's spec, technical_details/JA4.md), the way a bot wall reads a client before it answers.
// The bytes come from an untrusted peer: every length is checked against what is left, nothing
// here throws, and anything that is not a well-formed ClientHello is answered `not-hello`. A hello
// may arrive in several TCP chunks and, rarely, several TLS records; the caller keeps appending
// bytes and asking again while the answer is `need-more`, up to MAX_HELLO_BYTES.
import { createHash } from 'node:crypto';
import type { ClientHelloFacts } from './wire-facts.ts';

/** Bytes buffered at most before a connection that has not sent a whole ClientHello is refused. */
export const MAX_HELLO_BYTES = 64 * 1024;

export type HelloParse =
  | { kind: 'need-more' }
  | { kind: 'not-hello'; reason: string }
  /** `length`: the bytes of the records that carried the hello (the rest is later traffic). */
  | { kind: 'hello'; facts: ClientHelloFacts; length: number };

const RECORD_HANDSHAKE = 0x16;
const HANDSHAKE_CLIENT_HELLO = 1;
/** RFC 8446 5.1: a record's fragment is at most 2^14 bytes (+ 256 tolerated for old stacks). */
const MAX_RECORD_LENGTH = 16384 + 256;

const EXT_SERVER_NAME = 0x0000;
const EXT_SIGNATURE_ALGORITHMS = 0x000d;
const EXT_ALPN = 0x0010;
const EXT_SUPPORTED_VERSIONS = 0x002b;

/** RFC 8701: GREASE values are 0x?a?a with both bytes equal; JA4 ignores them everywhere. */
export function isGrease(value: number): boolean {
  return (value & 0x0f0f) === 0x0a0a && value >> 8 === (value & 0xff);
}

/**
 * Parses the ClientHello at the start of `data` (TLS records as received). Never throws.
 */
export function parseClientHello(data: Uint8Array): HelloParse {
  try {
    return parse(data);
  } catch (error) {
    // Every read is bounds-checked; this is a last guard so a parser bug cannot crash a server.
    return { kind: 'not-hello', reason: `parser error: ${(error as Error).message}` };
  }
}

function parse(data: Uint8Array): HelloParse {
  // Gather the handshake message from as many handshake records as it spans.
  const fragments: Uint8Array[] = [];
  let gathered = 0;
  let offset = 0;
  let needed: number | null = null;
  while (needed === null || gathered < needed) {
    if (data.length < offset + 5) return { kind: 'need-more' };
    if (data[offset] !== RECORD_HANDSHAKE) return { kind: 'not-hello', reason: 'not a handshake record' };
    if (data[offset + 1] !== 0x03 || data[offset + 2]! > 0x04) return { kind: 'not-hello', reason: 'not a TLS record version' };
    const recordLength = (data[offset + 3]! << 8) | data[offset + 4]!;
    if (recordLength === 0 || recordLength > MAX_RECORD_LENGTH) return { kind: 'not-hello', reason: 'bad record length' };
    if (offset + 5 + recordLength > MAX_HELLO_BYTES) return { kind: 'not-hello', reason: 'hello too large' };
    if (data.length < offset + 5 + recordLength) return { kind: 'need-more' };
    fragments.push(data.subarray(offset + 5, offset + 5 + recordLength));
    gathered += recordLength;
    offset += 5 + recordLength;
    if (needed === null) {
      const head = concat(fragments, gathered);
      if (head.length < 4) continue;
      if (head[0] !== HANDSHAKE_CLIENT_HELLO) return { kind: 'not-hello', reason: 'not a ClientHello' };
      needed = 4 + ((head[1]! << 16) | (head[2]! << 8) | head[3]!);
      if (needed > MAX_HELLO_BYTES) return { kind: 'not-hello', reason: 'hello too large' };
    }
  }
  const message = concat(fragments, gathered).subarray(4, needed);
  const facts = readHelloBody(new Reader(message));
  if (typeof facts === 'string') return { kind: 'not-hello', reason: facts };
  return { kind: 'hello', facts, length: offset };
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** A bounds-checked cursor: every read answers null past the end instead of throwing. */
class Reader {
  constructor(
    private readonly bytes: Uint8Array,
    private at = 0,
  ) {}
  get left(): number {
    return this.bytes.length - this.at;
  }
  u8(): number | null {
    if (this.left < 1) return null;
    return this.bytes[this.at++]!;
  }
  u16(): number | null {
    if (this.left < 2) return null;
    const v = (this.bytes[this.at]! << 8) | this.bytes[this.at + 1]!;
    this.at += 2;
    return v;
  }
  take(n: number): Reader | null {
    if (n < 0 || this.left < n) return null;
    const sub = new Reader(this.bytes.subarray(this.at, this.at + n));
    this.at += n;
    return sub;
  }
  rest(): Uint8Array {
    const out = this.bytes.subarray(this.at);
    this.at = this.bytes.length;
    return out;
  }
}

interface RawHello {
  legacyVersion: number;
  ciphers: number[];
  extensions: number[];
  alpn: string[];
  alpnFirstBytes: Uint8Array | null;
  sni: string | null;
  supportedVersions: number[] | null;
  signatureAlgorithms: number[];
}

/** The ClientHello body (RFC 8446 4.1.2), or why it is not one. */
function readHelloBody(r: Reader): ClientHelloFacts | string {
  const legacyVersion = r.u16();
  if (legacyVersion === null || legacyVersion >> 8 !== 0x03) return 'bad legacy version';
  if (!r.take(32)) return 'truncated random';
  const sessionIdLength = r.u8();
  if (sessionIdLength === null || sessionIdLength > 32 || !r.take(sessionIdLength)) return 'bad session id';
  const cipherBytes = r.u16();
  if (cipherBytes === null || cipherBytes % 2 !== 0 || cipherBytes === 0) return 'bad cipher suites length';
  const cipherReader = r.take(cipherBytes);
  if (!cipherReader) return 'truncated cipher suites';
  const allCiphers: number[] = [];
  while (cipherReader.left > 0) allCiphers.push(cipherReader.u16()!);
  const compressionLength = r.u8();
  if (compressionLength === null || compressionLength === 0 || !r.take(compressionLength)) return 'bad compression methods';
  const hello: RawHello = {
    legacyVersion,
    ciphers: allCiphers.filter((c) => !isGrease(c)),
    extensions: [],
    alpn: [],
    alpnFirstBytes: null,
    sni: null,
    supportedVersions: null,
    signatureAlgorithms: [],
  };
  // A hello without extensions is legal (TLS 1.2 and older).
  if (r.left > 0) {
    const extensionsLength = r.u16();
    if (extensionsLength === null) return 'truncated extensions length';
    const extReader = r.take(extensionsLength);
    if (!extReader) return 'truncated extensions';
    if (r.left !== 0) return 'bytes after extensions';
    const seen = new Set<number>();
    while (extReader.left > 0) {
      const type = extReader.u16();
      const length = extReader.u16();
      if (type === null || length === null) return 'truncated extension header';
      const body = extReader.take(length);
      if (!body) return 'truncated extension';
      // RFC 8446 4.2: one extension of a type at most.
      if (seen.has(type)) return 'duplicate extension';
      seen.add(type);
      if (isGrease(type)) continue;
      hello.extensions.push(type);
      const problem = readExtension(type, body, hello);
      if (problem) return problem;
    }
  }
  return toFacts(hello);
}

function readExtension(type: number, body: Reader, hello: RawHello): string | null {
  switch (type) {
    case EXT_SERVER_NAME: {
      if (body.left === 0) return null; // a server's empty echo; a client's is odd but harmless
      const listLength = body.u16();
      const list = listLength === null ? null : body.take(listLength);
      if (!list) return 'bad server_name';
      while (list.left > 0) {
        const nameType = list.u8();
        const nameLength = list.u16();
        const name = nameLength === null ? null : list.take(nameLength);
        if (nameType === null || !name) return 'bad server_name entry';
        if (nameType === 0 && hello.sni === null) hello.sni = Buffer.from(name.rest()).toString('latin1');
      }
      return null;
    }
    case EXT_ALPN: {
      const listLength = body.u16();
      const list = listLength === null ? null : body.take(listLength);
      if (!list) return 'bad alpn';
      while (list.left > 0) {
        const length = list.u8();
        const proto = length === null ? null : list.take(length);
        if (!proto) return 'bad alpn entry';
        const bytes = proto.rest();
        if (hello.alpnFirstBytes === null) hello.alpnFirstBytes = bytes;
        hello.alpn.push(Buffer.from(bytes).toString('latin1'));
      }
      return null;
    }
    case EXT_SUPPORTED_VERSIONS: {
      const listLength = body.u8();
      const list = listLength === null ? null : body.take(listLength);
      if (!list || listLength! % 2 !== 0) return 'bad supported_versions';
      hello.supportedVersions = [];
      while (list.left > 0) hello.supportedVersions.push(list.u16()!);
      return null;
    }
    case EXT_SIGNATURE_ALGORITHMS: {
      const listLength = body.u16();
      const list = listLength === null ? null : body.take(listLength);
      if (!list || listLength! % 2 !== 0) return 'bad signature_algorithms';
      while (list.left > 0) {
        const alg = list.u16()!;
        if (!isGrease(alg)) hello.signatureAlgorithms.push(alg);
      }
      return null;
    }
    default:
      return null;
  }
}

const VERSION_CODES: Record<number, string> = {
  0x0304: '13',
  0x0303: '12',
  0x0302: '11',
  0x0301: '10',
  0x0300: 's3',
  0x0002: 's2',
  0xfeff: 'd1',
  0xfefd: 'd2',
  0xfefc: 'd3',
};

function toFacts(hello: RawHello): ClientHelloFacts {
  const versions = (hello.supportedVersions ?? [hello.legacyVersion]).filter((v) => !isGrease(v));
  const version = versions.length > 0 ? Math.max(...versions) : hello.legacyVersion;
  const facts: Omit<ClientHelloFacts, 'ja4'> = {
    ciphers: hello.ciphers,
    extensions: hello.extensions,
    alpn: hello.alpn,
    sni: hello.sni,
    signatureAlgorithms: hello.signatureAlgorithms,
    tlsVersion: version,
  };
  return { ...facts, ja4: ja4Of({ ...facts, alpnFirstBytes: hello.alpnFirstBytes, sniPresent: hello.extensions.includes(EXT_SERVER_NAME) }) };
}

export interface Ja4Input {
  /** Highest TLS version offered (supported_versions, else the legacy version). */
  tlsVersion: number;
  /** Whether the server_name extension is present (JA4 looks at the extension, not its value). */
  sniPresent: boolean;
  ciphers: number[];
  extensions: number[];
  /** The first ALPN value's bytes, null when there is none. */
  alpnFirstBytes: Uint8Array | null;
  signatureAlgorithms: number[];
}

const hex4 = (v: number) => v.toString(16).padStart(4, '0');
const two = (n: number) => String(Math.min(n, 99)).padStart(2, '0');
const sha12 = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 12);

/** JA4 = a_b_c (FoxIO, technical_details/JA4.md); GREASE values are expected removed already. */
export function ja4Of(input: Ja4Input): string {
  const a = `t${VERSION_CODES[input.tlsVersion] ?? '00'}${input.sniPresent ? 'd' : 'i'}${two(input.ciphers.length)}${two(input.extensions.length)}${alpnChars(input.alpnFirstBytes)}`;
  const b = input.ciphers.length === 0 ? '000000000000' : sha12([...input.ciphers].sort((x, y) => x - y).map(hex4).join(','));
  const sortedExtensions = input.extensions.filter((e) => e !== EXT_SERVER_NAME && e !== EXT_ALPN).sort((x, y) => x - y);
  let c = '000000000000';
  if (sortedExtensions.length > 0) {
    const extensions = sortedExtensions.map(hex4).join(',');
    c = sha12(input.signatureAlgorithms.length > 0 ? `${extensions}_${input.signatureAlgorithms.map(hex4).join(',')}` : extensions);
  }
  return `${a}_${b}_${c}`;
}

const isAlphanumeric = (byte: number) => (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);

/** First and last character of the first ALPN value; its hex's first and last when either byte is not alphanumeric. */
function alpnChars(bytes: Uint8Array | null): string {
  if (!bytes || bytes.length === 0) return '00';
  const first = bytes[0]!;
  const last = bytes[bytes.length - 1]!;
  if (isAlphanumeric(first) && isAlphanumeric(last)) return String.fromCharCode(first) + String.fromCharCode(last);
  const hex = Buffer.from(bytes).toString('hex');
  return hex[0]! + hex[hex.length - 1]!;
}
