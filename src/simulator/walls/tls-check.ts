// The wall's TLS check: the ClientHello must be one the browser that the user agent claims really
// sends. JA4 (the fingerprint sim-tls computes from the raw ClientHello, ../tls/) is what the
// vendors match on; which JA4s are a family's is injected, so the simulator's own list of real
// browsers' fingerprints (../tls/known-fingerprints.ts, taken from the installed Chromium) is
// wired in one place and tests can give a table of their own.
import type { WireFacts } from '../tls/wire-facts.ts';
import type { BrowserClaim, BrowserFamily } from './browser-claim.ts';

/** Is `ja4` a fingerprint that a real browser of `family` sends? */
export type KnownFingerprint = (family: BrowserFamily, ja4: string) => boolean;

/** Why the request fails the check, or null when it passes. */
export function checkTls(wire: WireFacts, claim: BrowserClaim | null, known: KnownFingerprint): string | null {
  if (!wire.hello) return 'no ClientHello: the request did not come over TLS';
  if (!claim) return 'the user agent names no browser';
  let isKnown: boolean;
  try {
    isKnown = known(claim.family, wire.hello.ja4);
  } catch {
    // A broken list refuses rather than crashes the wall; the refusal is counted like any other.
    isKnown = false;
  }
  return isKnown ? null : `the ClientHello (JA4 ${wire.hello.ja4.slice(0, 64)}) is no ${claim.family}'s`;
}
