// pf_07 adapter. PLACEHOLDER: not built yet.
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter } from '../types.ts';

export function createPf07(_deps: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_07',
    scrape: async () => {
      throw new ScrapeFailure('unsupported', 'pf_07 is not built yet');
    },
  };
}
