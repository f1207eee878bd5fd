// PLACEHOLDER: the warm browser pool (crawlee PlaywrightCrawler / browser-pool + Debian chromium). Not built yet.
import type { BrowserSession } from './types.ts';

export interface BrowserPagesOptions {
  /** Pages open at once. */
  pages: number;
  chromiumPath: string;
  /** Upper bound of one page visit. */
  timeoutMs: number;
}

export interface BrowserPages extends BrowserSession {
  /** Launches the browser now instead of at the first page. */
  warm(): Promise<void>;
  close(): Promise<void>;
}

export function createBrowserPages(_options: BrowserPagesOptions): BrowserPages {
  return {
    withPage: async () => {
      throw new Error('browser-pages not built yet');
    },
    warm: async () => {},
    close: async () => {},
  };
}
