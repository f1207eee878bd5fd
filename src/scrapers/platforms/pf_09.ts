// pf_09 adapter. PLACEHOLDER: not built yet.
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter } from '../types.ts';

export function createPf09(_deps: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_09',
    scrape: async () => {
      throw new ScrapeFailure('unsupported', 'pf_09 is not built yet');
    },
  };
}
