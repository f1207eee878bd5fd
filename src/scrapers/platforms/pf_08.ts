// pf_08 adapter. PLACEHOLDER: not built yet.
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter } from '../types.ts';

export function createPf08(_deps: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_08',
    scrape: async () => {
      throw new ScrapeFailure('unsupported', 'pf_08 is not built yet');
    },
  };
}
