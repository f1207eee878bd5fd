// The ClientHello parser and JA4 (src/simulator/tls/client-hello.ts) against published vectors:
// a real Firefox 105 ClientHello's bytes with its JA4, the worked example of FoxIO's JA4 spec, and
// hellos built from FoxIO's own test outputs; and bad bytes, which must never throw.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isGrease, ja4Of, MAX_HELLO_BYTES, parseClientHello } from '../../src/simulator/tls/client-hello.ts';

// A Firefox 105 ClientHello to contile.services.mozilla.com, as captured in FoxIO's
// python/test/testdata tls12.pcap and quoted byte for byte in nfdump (phaag/nfdump,
// src/lib/decode/ja4.c) with its JA4 `t13d1715h2_5b57614c22b0_3d5424432f57`. Its padding
// extension (0x0015, 122 zero bytes) is appended below.
const FIREFOX_105_HEX = `
1603010200010001fc0303ecb2691addb2bf6c599c7aaae23de5f42561cc04eb41029acc6fc050a16ac1d22046f8617b
580ac9358e2aa44e306d52466bcc989c87c8ca64309f5faf50ba7b4d0022130113031302c02bc02fcca9cca8c02cc030
c00ac009c013c014009c009d002f00350100019100000021001f00001c636f6e74696c652e73657276696365732e6d6f
7a696c6c612e636f6d00170000ff01000100000a000e000c001d00170018001901000101000b00020100002300000010
000e000c02683208687474702f312e310005000501000000000022000a000804030503060302030033006b0069001d00
208909858fbeb6ed2f1248ba5b9e2978bead0e840110192c61daed0096798b184400170041044d183d91f5eed35791fa
982464e3b0214aaa5f5d1b78616d9b9fbebc22d11f535b2f94c686143136aa795e6e5a875d6c08064ad5b76d44caad76
6e2483012748002b00050403040303000d0018001604030503060308040805080604010501060102030201002d000201
01001c000240010015007a`;
const FIREFOX_105 = Buffer.concat([Buffer.from(FIREFOX_105_HEX.replace(/\s/g, ''), 'hex'), Buffer.alloc(122)]);

interface HelloSpec {
  ciphers: number[];
  /** Extensions in order; bodies for the ones JA4 reads are made from the fields below. */
  extensions: number[];
  sni?: string;
  alpn?: string[];
  versions?: number[];
  sigalgs?: number[];
  legacyVersion?: number;
}

const u16 = (v: number) => Buffer.from([v >> 8, v & 0xff]);
const withU16Length = (b: Buffer) => Buffer.concat([u16(b.length), b]);

/** A ClientHello's records, built from a spec (as a client would write it), in records of at most `recordSize` bytes. */
function buildHello(spec: HelloSpec, recordSize = 16384): Buffer {
  const extBodies = spec.extensions.map((type) => {
    let body = Buffer.alloc(0);
    if (type === 0x0000 && spec.sni !== undefined) {
      const name = Buffer.from(spec.sni, 'latin1');
      body = withU16Length(Buffer.concat([Buffer.from([0]), withU16Length(name)]));
    } else if (type === 0x0010) {
      body = withU16Length(Buffer.concat((spec.alpn ?? []).map((p) => Buffer.concat([Buffer.from([p.length]), Buffer.from(p, 'latin1')]))));
    } else if (type === 0x002b) {
      const list = Buffer.concat((spec.versions ?? []).map(u16));
      body = Buffer.concat([Buffer.from([list.length]), list]);
    } else if (type === 0x000d) {
      body = withU16Length(Buffer.concat((spec.sigalgs ?? []).map(u16)));
    }
    return Buffer.concat([u16(type), withU16Length(body)]);
  });
  const hello = Buffer.concat([
    u16(spec.legacyVersion ?? 0x0303),
    Buffer.alloc(32, 7),
    Buffer.from([0]),
    withU16Length(Buffer.concat(spec.ciphers.map(u16))),
    Buffer.from([1, 0]),
    withU16Length(Buffer.concat(extBodies)),
  ]);
  const handshake = Buffer.concat([Buffer.from([1, hello.length >> 16, (hello.length >> 8) & 0xff, hello.length & 0xff]), hello]);
  const records: Buffer[] = [];
  for (let at = 0; at < handshake.length; at += recordSize) {
    const fragment = handshake.subarray(at, at + recordSize);
    records.push(Buffer.concat([Buffer.from([0x16, 0x03, 0x01]), u16(fragment.length), fragment]));
  }
  return Buffer.concat(records);
}

const hexList = (s: string) => s.split(',').map((h) => parseInt(h, 16));

// FoxIO ja4, python/test/testdata/latest.pcapng.json, stream 1 (Chrome): JA4_ro's lists, in order.
const CHROME_STREAM_1: HelloSpec = {
  ciphers: [0x0a0a, ...hexList('1301,1302,1303,c02b,c02f,c02c,c030,cca9,cca8,c013,c014,009c,009d,002f,0035')],
  extensions: [0x1a1a, ...hexList('0023,ff01,0000,001b,0012,4469,002d,002b,000d,0010,0033,000a,0005,0017,000b,0015'), 0x2a2a],
  sni: 'pdx-col.eum-appdynamics.com',
  alpn: ['h2', 'http/1.1'],
  versions: [0x3a3a, 0x0304, 0x0303],
  sigalgs: hexList('0403,0804,0401,0503,0805,0501,0806,0601'),
};
// The same file, stream 3: TLS 1.2, no ALPN, no supported_versions.
const TLS12_STREAM_3: HelloSpec = {
  ciphers: hexList('c02c,c02b,c030,c02f,c024,c023,c028,c027,c00a,c009,c014,c013,009d,009c,003d,003c,0035,002f,000a'),
  extensions: hexList('0000,0005,000a,000b,000d,0023,0017,ff01'),
  sni: 'discovery.cem.cloud.us',
  sigalgs: hexList('0804,0805,0806,0401,0501,0201,0403,0503,0203,0202,0601,0603'),
};

describe('parseClientHello', () => {
  it('gives a real Firefox 105 hello the JA4 nfdump and FoxIO publish for it', () => {
    expect(FIREFOX_105.length).toBe(517);
    const parsed = parseClientHello(FIREFOX_105);
    expect(parsed.kind).toBe('hello');
    if (parsed.kind !== 'hello') return;
    expect(parsed.facts.ja4).toBe('t13d1715h2_5b57614c22b0_3d5424432f57');
    expect(parsed.length).toBe(517);
    expect(parsed.facts.sni).toBe('contile.services.mozilla.com');
    expect(parsed.facts.alpn).toEqual(['h2', 'http/1.1']);
    expect(parsed.facts.tlsVersion).toBe(0x0304);
    expect(parsed.facts.ciphers.length).toBe(17);
    expect(parsed.facts.extensions.slice(0, 3)).toEqual([0x0000, 0x0017, 0xff01]);
  });

  it('gives hellos built from FoxIO test outputs their published JA4, GREASE ignored', () => {
    const chrome = parseClientHello(buildHello(CHROME_STREAM_1));
    expect(chrome.kind === 'hello' && chrome.facts.ja4).toBe('t13d1516h2_8daaf6152771_e5627efa2ab1');
    const tls12 = parseClientHello(buildHello(TLS12_STREAM_3));
    expect(tls12.kind === 'hello' && tls12.facts.ja4).toBe('t12d190800_d83cc789557e_7af1ed941c26');
  });

  it('computes the worked example of the JA4 spec, with and without signature algorithms', () => {
    const input = {
      tlsVersion: 0x0304,
      sniPresent: true,
      ciphers: hexList('1301,1302,1303,c02b,c02f,c02c,c030,cca9,cca8,c013,c014,009c,009d,002f,0035'),
      extensions: hexList('001b,0000,0033,0010,4469,0017,002d,000d,0005,0023,0012,002b,ff01,000b,000a,0015'),
      alpnFirstBytes: Buffer.from('h2'),
      signatureAlgorithms: hexList('0403,0804,0401,0503,0805,0501,0806,0601'),
    };
    expect(ja4Of(input)).toBe('t13d1516h2_8daaf6152771_e5627efa2ab1');
    expect(ja4Of({ ...input, signatureAlgorithms: [] }).split('_')[2]).toBe('6d807ffa2a79');
    expect(ja4Of({ ...input, sniPresent: false, alpnFirstBytes: null })).toBe('t13i151600_8daaf6152771_e5627efa2ab1');
    expect(ja4Of({ ...input, ciphers: [], extensions: [0x0000] })).toMatch(/_000000000000_000000000000$/);
    expect(ja4Of({ ...input, alpnFirstBytes: Buffer.from('http/1.1') }).slice(8, 10)).toBe('h1');
    // The spec's examples for a first or last byte that is not alphanumeric.
    expect(ja4Of({ ...input, alpnFirstBytes: Buffer.from([0xab, 0xcd]) }).slice(8, 10)).toBe('ad');
    expect(ja4Of({ ...input, alpnFirstBytes: Buffer.from([0x30, 0xab, 0xcd, 0x31]) }).slice(8, 10)).toBe('01');
    expect(ja4Of({ ...input, alpnFirstBytes: Buffer.from('x') }).slice(8, 10)).toBe('xx');
  });

  it('reads a hello in any chunking, and one that spans several TLS records', () => {
    for (const bytes of [FIREFOX_105, buildHello(CHROME_STREAM_1, 100), buildHello(CHROME_STREAM_1, 1)]) {
      for (let end = 0; end < bytes.length; end += 1) expect(parseClientHello(bytes.subarray(0, end)).kind).toBe('need-more');
      const whole = parseClientHello(Buffer.concat([bytes, Buffer.from('later traffic')]));
      expect(whole.kind).toBe('hello');
      expect(whole.kind === 'hello' && whole.length).toBe(bytes.length);
    }
    const split = parseClientHello(buildHello(CHROME_STREAM_1, 100));
    expect(split.kind === 'hello' && split.facts.ja4).toBe('t13d1516h2_8daaf6152771_e5627efa2ab1');
  });

  it('answers not-hello for what is not one', () => {
    expect(parseClientHello(Buffer.from('GET / HTTP/1.1\r\n\r\n')).kind).toBe('not-hello');
    // A ServerHello (type 2) in a handshake record.
    expect(parseClientHello(Buffer.from('16030100040200000000', 'hex')).kind).toBe('not-hello');
    // A record that claims more than TLS allows.
    expect(parseClientHello(Buffer.from('1603017fff', 'hex')).kind).toBe('not-hello');
    // A handshake that claims more than MAX_HELLO_BYTES.
    expect(parseClientHello(Buffer.from('160301000401ffffff', 'hex')).kind).toBe('not-hello');
    // A cipher list whose length runs past the hello.
    const bad = Buffer.from(FIREFOX_105);
    bad.writeUInt16BE(0xfffe, 5 + 4 + 2 + 32 + 1 + 32);
    expect(parseClientHello(bad).kind).toBe('not-hello');
  });

  it('never throws, on any bytes, and on any corruption or truncation of a real hello', () => {
    const kinds = new Set(['need-more', 'not-hello', 'hello']);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => {
        expect(kinds.has(parseClientHello(bytes).kind)).toBe(true);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (tail) => {
        expect(kinds.has(parseClientHello(Buffer.concat([Buffer.from('1603010200010001fc', 'hex'), tail])).kind)).toBe(true);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(FIREFOX_105.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
        fc.nat(FIREFOX_105.length),
        (flips, cut) => {
          const bytes = Buffer.from(FIREFOX_105.subarray(0, cut));
          for (const [at, value] of flips) if (at < bytes.length) bytes[at] = value;
          const parsed = parseClientHello(bytes);
          expect(kinds.has(parsed.kind)).toBe(true);
          if (parsed.kind === 'hello') expect(parsed.facts.ja4).toMatch(/^t[0-9a-z]{2}[di]\d{4}[0-9a-zA-Z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$/);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('knows GREASE', () => {
    expect([0x0a0a, 0x1a1a, 0xfafa].every(isGrease)).toBe(true);
    expect([0x0a1a, 0x1301, 0x0000, 0xaaaa & 0x0fff].some(isGrease)).toBe(false);
    expect(MAX_HELLO_BYTES).toBeGreaterThan(16384);
  });
});
