// Wire facts and headers of the clients the walls tests play: what the simulator's front would
// record for a real Chromium, impit's Chrome profile, Node's https, curl and the like. The
// Chromium and impit figures are the ones walls-measure.test.ts measures on this machine; the
// JA4s are issue 37's.
import type { WireFacts } from '../../src/simulator/tls/wire-facts.ts';
import type { KnownFingerprint } from '../../src/simulator/walls/tls-check.ts';

export const JA4 = {
  chromium: 't13d1517h2_8daaf6152771_b6f405a00624',
  impitChrome: 't13d1516h2_8daaf6152771_02713d6af862',
  firefox: 't13d1715h2_5b57614c22b0_3cbfd9057e0d',
  node: 't13d591000_a33745022dd6_1f22a2ca17c4',
  curl: 't13d3112h2_e8f1e7e78f70_375a1cb6c4ab',
} as const;

/** The tests' list of known fingerprints (the real one is ../tls/known-fingerprints.ts). */
const KNOWN: Record<string, readonly string[]> = { chrome: [JA4.chromium, JA4.impitChrome], firefox: [JA4.firefox], safari: [] };
export const knownInTests: KnownFingerprint = (family, ja4) => KNOWN[family]?.includes(ja4) ?? false;

export const CHROME_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36';
export const HEADLESS_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/142.0.0.0 Safari/537.36';
export const FIREFOX_UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';
export const CURL_UA = 'curl/8.14.1';

/** Chrome's navigation headers in Chrome's order (measured: real Chromium 156 and impit's Chrome profile). */
export function chromeHeaders(userAgent = CHROME_UA, major = '142'): [string, string][] {
  return [
    ['sec-ch-ua', `"Chromium";v="${major}", "Google Chrome";v="${major}", "Not_A Brand";v="99"`],
    ['sec-ch-ua-mobile', '?0'],
    ['sec-ch-ua-platform', '"Linux"'],
    ['upgrade-insecure-requests', '1'],
    ['user-agent', userAgent],
    ['accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8'],
    ['sec-fetch-site', 'none'],
    ['sec-fetch-mode', 'navigate'],
    ['sec-fetch-user', '?1'],
    ['sec-fetch-dest', 'document'],
    ['accept-encoding', 'gzip, deflate, br, zstd'],
    ['accept-language', 'en-US,en;q=0.9'],
    ['priority', 'u=0, i'],
  ];
}

export function firefoxHeaders(): [string, string][] {
  return [
    ['user-agent', FIREFOX_UA],
    ['accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'],
    ['accept-language', 'en-US,en;q=0.5'],
    ['accept-encoding', 'gzip, deflate, br, zstd'],
    ['upgrade-insecure-requests', '1'],
    ['sec-fetch-dest', 'document'],
    ['sec-fetch-mode', 'navigate'],
    ['sec-fetch-site', 'none'],
    ['sec-fetch-user', '?1'],
    ['priority', 'u=0, i'],
  ];
}

export const CHROME_H2 = { headerTableSize: 65536, enablePush: false, initialWindowSize: 6291456, maxHeaderListSize: 262144 };

/** A real Chromium's facts for a request with `headers`. */
export function chromeWire(headers: [string, string][] = chromeHeaders(), ja4: string = JA4.chromium): WireFacts {
  return {
    scheme: 'https',
    hello: { ja4, ciphers: [], extensions: [], alpn: ['h2', 'http/1.1'], sni: 'localhost', signatureAlgorithms: [], tlsVersion: 0x0304 },
    httpVersion: '2.0',
    h2Settings: { ...CHROME_H2 },
    pseudoHeaderOrder: [':method', ':authority', ':scheme', ':path'],
    headerOrder: headers.map(([name]) => name),
  };
}

export function firefoxWire(headers: [string, string][] = firefoxHeaders()): WireFacts {
  return {
    scheme: 'https',
    hello: { ja4: JA4.firefox, ciphers: [], extensions: [], alpn: ['h2', 'http/1.1'], sni: 'localhost', signatureAlgorithms: [], tlsVersion: 0x0304 },
    httpVersion: '2.0',
    h2Settings: { headerTableSize: 65536, initialWindowSize: 131072, maxFrameSize: 16384 },
    pseudoHeaderOrder: [':method', ':path', ':authority', ':scheme'],
    headerOrder: headers.map(([name]) => name),
  };
}

/** Node's https: 59 cipher suites, no ALPN, HTTP/1.1. */
export function nodeWire(headerOrder: string[] = ['host', 'connection']): WireFacts {
  return { scheme: 'https', hello: { ja4: JA4.node, ciphers: [], extensions: [], alpn: [], sni: null, signatureAlgorithms: [], tlsVersion: 0x0304 }, httpVersion: '1.1', h2Settings: null, pseudoHeaderOrder: [], headerOrder };
}

export function curlWire(headerOrder: string[] = ['host', 'user-agent', 'accept']): WireFacts {
  return { scheme: 'https', hello: { ja4: JA4.curl, ciphers: [], extensions: [], alpn: ['h2', 'http/1.1'], sni: 'localhost', signatureAlgorithms: [], tlsVersion: 0x0304 }, httpVersion: '2.0', h2Settings: { maxConcurrentStreams: 100, initialWindowSize: 10485760, enablePush: false }, pseudoHeaderOrder: [':method', ':path', ':scheme', ':authority'], headerOrder };
}

export function headerRecord(headers: [string, string][]): Record<string, string> {
  return Object.fromEntries(headers);
}
