// The known browsers' JA4 list (src/simulator/tls/known-fingerprints.ts): each published value
// that comes with its ClientHello's lists is recomputed here from those lists, so the list holds
// what its sources say; and the SNI form of a fingerprint.
import { describe, expect, it } from 'vitest';
import { ja4Of } from '../../src/simulator/tls/client-hello.ts';
import { addKnownFingerprint, knownFingerprint, knownFingerprints, withSni } from '../../src/simulator/tls/known-fingerprints.ts';

const hex = (s: string) => s.split(',').map((h) => parseInt(h, 16));
const CHROME_CIPHERS = hex('1301,1302,1303,c02b,c02f,c02c,c030,cca9,cca8,c013,c014,009c,009d,002f,0035');
const CHROME_SIGALGS = hex('0403,0804,0401,0503,0805,0501,0806,0601');
const tls13 = (ciphers: number[], extensions: number[], signatureAlgorithms: number[]) => ({
  tlsVersion: 0x0304,
  sniPresent: true,
  ciphers,
  extensions,
  alpnFirstBytes: Buffer.from('h2'),
  signatureAlgorithms,
});

describe('known fingerprints', () => {
  it("recompute from their sources' ClientHello lists", () => {
    const chrome = (extra: string) => ja4Of(tls13(CHROME_CIPHERS, [0x0000, 0x0010, ...hex(`0005,000a,000b,000d,0012,0017,001b,0023,002b,002d,0033,${extra},ff01`)], CHROME_SIGALGS));
    // FoxIO's 'Chromium Browser': ALPS 0x4469 and ECH GREASE 0xfe0d; with a pre-shared key 0x0029.
    expect(chrome('4469,fe0d')).toBe('t13d1516h2_8daaf6152771_02713d6af862');
    expect(ja4Of(tls13(CHROME_CIPHERS, [0x0000, 0x0010, ...hex('0005,000a,000b,000d,0012,0017,001b,0023,0029,002b,002d,0033,4469,fe0d,ff01')], CHROME_SIGALGS))).toBe(
      't13d1517h2_8daaf6152771_b0da82dd1658',
    );
    // browserleaks' Chrome 143: ALPS moved to 0x44cd.
    expect(chrome('44cd,fe0d')).toBe('t13d1516h2_8daaf6152771_d8a2da3f94cd');
    // curl-impersonate's Firefox 120.0.1 and Safari 17.0 signatures (in the order recorded).
    const firefox120 = tls13(
      [4865, 4867, 4866, 49195, 49199, 52393, 52392, 49196, 49200, 49162, 49161, 49171, 49172, 156, 157, 47, 53],
      [0, 23, 65281, 10, 11, 35, 16, 5, 34, 51, 43, 13, 45, 28, 65037],
      [1027, 1283, 1539, 2052, 2053, 2054, 1025, 1281, 1537, 515, 513],
    );
    expect(ja4Of(firefox120)).toBe('t13d1715h2_5b57614c22b0_5c2c66f702b0');
    const safari17 = tls13(
      [4865, 4866, 4867, 49196, 49195, 52393, 49200, 49199, 52392, 49162, 49161, 49172, 49171, 157, 156, 53, 47, 49160, 49170, 10],
      [0, 23, 65281, 10, 11, 16, 5, 13, 18, 51, 45, 43, 27, 21],
      [1027, 2052, 1025, 1283, 515, 2053, 2053, 1281, 2054, 1537, 513],
    );
    expect(ja4Of(safari17)).toBe('t13d2014h2_a09f3c656075_14788d8d241b');
    for (const ja4 of ['t13d1516h2_8daaf6152771_02713d6af862', 't13d1516h2_8daaf6152771_d8a2da3f94cd']) expect(knownFingerprint('chrome', ja4)).toBe(true);
    expect(knownFingerprint('firefox', 't13d1715h2_5b57614c22b0_5c2c66f702b0')).toBe(true);
    expect(knownFingerprint('safari', 't13d2014h2_a09f3c656075_14788d8d241b')).toBe(true);
    expect(knownFingerprint('firefox', 't13d1516h2_8daaf6152771_02713d6af862')).toBe(false);
    for (const entry of [...knownFingerprints('chrome'), ...knownFingerprints('firefox'), ...knownFingerprints('safari')]) expect(entry.source.length).toBeGreaterThan(20);
  });

  it("compares a fingerprint without SNI as the same client's with SNI", () => {
    expect(withSni('t13i1516h2_8daaf6152771_cb7bf5808d99')).toBe('t13d1517h2_8daaf6152771_cb7bf5808d99');
    expect(withSni('t13d1517h2_8daaf6152771_cb7bf5808d99')).toBe('t13d1517h2_8daaf6152771_cb7bf5808d99');
    expect(knownFingerprint('chrome', 't13i1516h2_8daaf6152771_cb7bf5808d99')).toBe(true);
    expect(knownFingerprint('chrome', 't13i1515h2_8daaf6152771_afc95f72a295')).toBe(false);
  });

  it('takes a new fingerprint with its source, and refuses what is not a JA4', () => {
    expect(knownFingerprint('safari', 't13i2013h2_a09f3c656075_000000000000')).toBe(false);
    addKnownFingerprint('safari', 't13i2013h2_a09f3c656075_000000000000', 'a test');
    expect(knownFingerprint('safari', 't13d2014h2_a09f3c656075_000000000000')).toBe(true);
    expect(knownFingerprints('safari').at(-1)).toEqual({ ja4: 't13d2014h2_a09f3c656075_000000000000', source: 'a test' });
    expect(() => addKnownFingerprint('chrome', 'nonsense', 'x')).toThrow(/not a JA4/);
  });
});
