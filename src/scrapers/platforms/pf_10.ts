// pf_10 adapter. PLACEHOLDER: not built yet.
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter } from '../types.ts';

export function createPf10(_deps: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_10',
    scrape: async () => {
      throw new ScrapeFailure('unsupported', 'pf_10 is not built yet');
    },
  };
}
