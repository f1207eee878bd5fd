// Deterministic randomness for the catalog seed. Every entity (artist 17, event 40213, ...) draws
// from its own stream, derived from the run's seed and the entity's kind and index, so what an
// event looks like does not depend on batch sizes, on how many writers run at once, or on which
// other entities were generated first.

/** sfc32: small, fast, and good enough for synthetic data (passes PractRand to 2^40 bytes). */
export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(...keys: number[]) {
    // splitmix32 over the keys fills the state, then a few rounds decorrelate close keys.
    let h = 0x9e3779b9;
    const mix = (k: number) => {
      h = Math.imul(h ^ (k >>> 0), 0x85ebca6b) + 0x6b43a9b5;
      h ^= h >>> 13;
      h = Math.imul(h, 0xc2b2ae35);
      h ^= h >>> 16;
      return h >>> 0;
    };
    for (const k of keys) {
      // Keys may exceed 32 bits (event ids): fold the high part in separately.
      mix(k % 0x1_0000_0000);
      mix(Math.floor(k / 0x1_0000_0000));
    }
    this.a = mix(1);
    this.b = mix(2);
    this.c = mix(3);
    this.d = mix(4);
    for (let i = 0; i < 12; i++) this.next();
  }

  /** A float in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** Picks by weight; `weights` runs parallel to `items`. */
  weighted<T>(items: readonly T[], weights: readonly number[]): T {
    let total = 0;
    for (const w of weights) total += w;
    let x = this.next() * total;
    for (let i = 0; i < items.length; i++) {
      x -= weights[i]!;
      if (x < 0) return items[i]!;
    }
    return items[items.length - 1]!;
  }

  /** Standard normal (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Log-normal with the given median and shape: prices, capacities, audiences. */
  logNormal(median: number, sigma: number): number {
    return median * Math.exp(sigma * this.normal());
  }

  /** Poisson count; normal approximation above 30 keeps it O(1). */
  poisson(lambda: number): number {
    if (lambda <= 0) return 0;
    if (lambda > 30) return Math.max(0, Math.round(lambda + Math.sqrt(lambda) * this.normal()));
    const limit = Math.exp(-lambda);
    let k = 0;
    let p = this.next();
    while (p > limit) {
      k += 1;
      p *= this.next();
    }
    return k;
  }

  /**
   * A rank in [0, n) skewed towards 0: density ∝ x^(1/power - 1). With power 1.5, the most popular
   * of 25,000 artists gets about 0.1% of all events (a long tour), the median one a handful.
   */
  skewedIndex(n: number, power = 1.5): number {
    return Math.min(n - 1, Math.floor(n * Math.pow(this.next(), power)));
  }
}

/** Stream ids, so two kinds of entity with the same index never share a stream. */
export const STREAM = {
  venue: 1,
  artist: 2,
  event: 3,
  eventStats: 4,
  marketplaceB: 5,
  social: 6,
} as const;
