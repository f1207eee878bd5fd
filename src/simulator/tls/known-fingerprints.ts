// The JA4 fingerprints of real browsers, per browser family, that the simulator's walls accept
// for a user agent of that family (issue 37: "the known fingerprints are real browsers': taken
// from the installed Chromium at test time, plus a documented list"). Every entry says where it
// comes from. Chrome, Chromium, Edge and Opera share one TLS stack (BoringSSL), so one family.
//
// A browser sends the server_name extension for a host name and none for an IP literal (RFC 6066
// 3), so the same browser shows `t13d1517h2_…` to https://localhost and `t13i1516h2_…` to
// https://127.0.0.1; the rest is equal (JA4's c part leaves SNI out). The list holds the SNI
// form and a fingerprint is compared in that form: an `i` fingerprint counts one extension more.
//
// Kept up to date by test/simulator/tls-front.test.ts: it measures the installed Chromium through
// the simulator's front and fails, naming the new value, when it is not listed here (a Chromium
// upgrade that changed its ClientHello). Add the measured value with its source then.

export type BrowserFamily = 'chrome' | 'firefox' | 'safari';
export const BROWSER_FAMILIES: readonly BrowserFamily[] = ['chrome', 'firefox', 'safari'];

export interface KnownFingerprint {
  ja4: string;
  /** Where the value comes from: a measurement on this machine or a published capture. */
  source: string;
}

const KNOWN: Record<BrowserFamily, KnownFingerprint[]> = {
  chrome: [
    {
      ja4: 't13d1517h2_8daaf6152771_cb7bf5808d99',
      source:
        "Chromium 156.0.8078.108 (Debian 12's /usr/bin/chromium, headless, the scrapers' flags), measured through the simulator's front " +
        'on 2026-11-29: extensions include 0xca34 and ALPS 0x44cd, signature algorithms start with ML-DSA 0x0904-0x0906',
    },
    {
      ja4: 't13d1516h2_8daaf6152771_02713d6af862',
      source: "FoxIO ja4 README 'Examples' and ja4plus-mapping.csv, 'Chromium Browser' (TCP): ALPS 0x4469 and ECH GREASE 0xfe0d",
    },
    {
      ja4: 't13d1517h2_8daaf6152771_b0da82dd1658',
      source: "FoxIO ja4 README and ja4plus-mapping.csv, 'Chromium Browser' (pre-shared key: a resumed session adds 0x0029)",
    },
    { ja4: 't13d1517h2_8daaf6152771_b1ff8ab2d16f', source: "FoxIO ja4 README and ja4plus-mapping.csv, 'Chromium Browser' (no key)" },
    {
      ja4: 't13d1516h2_8daaf6152771_e5627efa2ab1',
      source: "FoxIO JA4 spec's worked example and its test captures latest.pcapng / browsers-x509.pcapng (Chrome and Edge with the padding extension 0x0015)",
    },
    {
      ja4: 't13d1516h2_8daaf6152771_d8a2da3f94cd',
      source: 'Chrome 143 (Android) as reported by browserleaks.com, JA4_r quoted in service0427/v2_cp_app tls.md: ALPS 0x44cd and ECH 0xfe0d',
    },
  ],
  firefox: [
    {
      ja4: 't13d1715h2_5b57614c22b0_3d5424432f57',
      source: "Firefox 105: the ClientHello of FoxIO ja4's test capture tls12.pcap, bytes quoted in nfdump (src/lib/decode/ja4.c)",
    },
    {
      ja4: 't13d1715h2_5b57614c22b0_5c2c66f702b0',
      source: 'Firefox 120.0.1 (Linux): the ClientHello recorded in curl-impersonate tests/signatures/firefox_120.0.1_linux.yaml (ECH 0xfe0d, no padding)',
    },
  ],
  safari: [
    {
      ja4: 't13d2014h2_a09f3c656075_14788d8d241b',
      source: 'Safari 17.0 (macOS): the ClientHello recorded in curl-impersonate tests/signatures/safari_17.0_macOS.yaml',
    },
    {
      ja4: 't13d2613h2_2802a3db6c62_845d286b0d67',
      source: 'Safari 15.3 (macOS 11.6.4): the ClientHello recorded in curl-impersonate tests/signatures/safari.yaml',
    },
  ],
};

/** The fingerprints listed for a family (a copy). */
export function knownFingerprints(family: BrowserFamily): KnownFingerprint[] {
  return KNOWN[family].map((entry) => ({ ...entry }));
}

/** Whether `ja4` is a real browser's of `family` (SNI or not: see the header). */
export function knownFingerprint(family: BrowserFamily, ja4: string): boolean {
  const wanted = withSni(ja4);
  return KNOWN[family].some((entry) => withSni(entry.ja4) === wanted);
}

/** Adds a fingerprint to a family's list (e.g. the installed Chromium's, measured at start), with its source. */
export function addKnownFingerprint(family: BrowserFamily, ja4: string, source: string): void {
  if (!/^[tqd][0-9a-z]{2}[di]\d{4}[0-9a-zA-Z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$/.test(ja4)) throw new Error(`not a JA4 fingerprint: ${ja4}`);
  if (knownFingerprint(family, ja4)) return;
  KNOWN[family].push({ ja4: withSni(ja4), source });
}

/** The fingerprint as the same client would show it to a host name: 'd', one extension more when it was 'i'. */
export function withSni(ja4: string): string {
  if (ja4[3] !== 'i') return ja4;
  const extensions = Number(ja4.slice(6, 8));
  if (!Number.isInteger(extensions)) return ja4;
  return `${ja4.slice(0, 3)}d${ja4.slice(4, 6)}${String(Math.min(extensions + 1, 99)).padStart(2, '0')}${ja4.slice(8)}`;
}
