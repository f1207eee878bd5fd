// pf_05 adapter. PLACEHOLDER: not built yet.
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter } from '../types.ts';

export function createPf05(_deps: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_05',
    scrape: async () => {
      throw new ScrapeFailure('unsupported', 'pf_05 is not built yet');
    },
  };
}
