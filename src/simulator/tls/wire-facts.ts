// What the simulator saw of a request on the wire, below HTTP's own fields: the TLS ClientHello
// (and its JA4 fingerprint), the HTTP version, HTTP/2's SETTINGS and pseudo-header order, and the
// order of the header names as sent. Real bot walls judge a client by these before they read a
// URL; the simulator's walls (../walls/) read them from `ctx.state.wire`, which the simulator's
// front (./front.ts) sets on every request, plaintext ones included.
import type { Context } from 'koa';

export interface ClientHelloFacts {
  /** The full JA4 fingerprint, e.g. `t13d1516h2_8daaf6152771_02713d6af862`. */
  ja4: string;
  /** Cipher suites in the order sent, GREASE values left out. */
  ciphers: number[];
  /** Extension types in the order sent, GREASE values left out. */
  extensions: number[];
  /** ALPN protocols offered, in order (e.g. ['h2', 'http/1.1']); [] when none. */
  alpn: string[];
  /** The server name asked for (SNI), or null. */
  sni: string | null;
  /** Signature algorithms in the order sent, GREASE values left out (JA4's c part hashes them). */
  signatureAlgorithms: number[];
  /** Highest TLS version offered (supported_versions, else the hello's legacy version): 0x0304 for TLS 1.3. */
  tlsVersion: number;
}

export interface WireFacts {
  /** 'https' when the request came over TLS, else 'http' (plaintext: no ClientHello). */
  scheme: 'http' | 'https';
  /** The connection's ClientHello; null over plaintext. */
  hello: ClientHelloFacts | null;
  /** '2.0' or '1.1' (or '1.0'). */
  httpVersion: string;
  /**
   * The HTTP/2 SETTINGS the client sent, by Node's names (headerTableSize, enablePush,
   * initialWindowSize, maxHeaderListSize, maxConcurrentStreams, maxFrameSize, ...), only those
   * the client set; null over HTTP/1.x.
   */
  h2Settings: Record<string, number | boolean> | null;
  /** Pseudo-header names in the order received (':method', ':authority', ...); [] over HTTP/1.x. */
  pseudoHeaderOrder: string[];
  /** Regular header names in the order received, lower-case, duplicates kept. */
  headerOrder: string[];
}

/** The request's wire facts (set by the simulator's front on every request). */
export function wireFacts(ctx: Context): WireFacts {
  const facts = (ctx.state as { wire?: WireFacts }).wire;
  if (!facts) throw new Error('wire facts missing: the simulator front did not see this request');
  return facts;
}
