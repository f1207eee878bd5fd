// pf_11 adapter. PLACEHOLDER: not built yet.
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter } from '../types.ts';

export function createPf11(_deps: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_11',
    scrape: async () => {
      throw new ScrapeFailure('unsupported', 'pf_11 is not built yet');
    },
  };
}
