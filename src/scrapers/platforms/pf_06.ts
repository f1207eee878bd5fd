// pf_06 adapter. PLACEHOLDER: not built yet.
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter } from '../types.ts';

export function createPf06(_deps: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_06',
    scrape: async () => {
      throw new ScrapeFailure('unsupported', 'pf_06 is not built yet');
    },
  };
}
