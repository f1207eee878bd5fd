// What the simulated platforms share about an event's inventory before each renders it in its
// own shape: sections grouped by name (a page shows one block per name even when the control API
// set several price levels under it), stock split into resale-style lots, the flags that are set.
import type { Context } from 'koa';
import type { SimSection } from './state.ts';

export function groupByName(sections: readonly SimSection[]): Map<string, SimSection[]> {
  const groups = new Map<string, SimSection[]>();
  for (const section of sections) {
    const group = groups.get(section.name);
    if (group) group.push(section);
    else groups.set(section.name, [section]);
  }
  return groups;
}

/** `stock` tickets as listings of at most `size` each: 9 in lots of 4 is [4, 4, 1]. */
export function lots(stock: number, size: number): number[] {
  const out: number[] = [];
  for (let left = stock; left > 0; left -= size) out.push(Math.min(size, left));
  return out;
}

type Flag = 'restricted_view' | 'accessible' | 'presale';

/** The section's set flags, each under the platform's own word for it. */
export function flagWords(section: SimSection, words: Record<Flag, string>): string[] {
  return (['restricted_view', 'accessible', 'presale'] as const).filter((flag) => section[flag]).map((flag) => words[flag]);
}

/** A query parameter naming the region, or null when the request does not say. */
export function queryRegion(ctx: Context, name = 'region'): string | null {
  const value = ctx.query[name];
  return typeof value === 'string' && value ? value : null;
}
