import { defineConfig } from 'vitest/config';
import LongFirstSequencer from './test/support/long-first-sequencer.ts';

/**
 * The files that run a real Chromium (pf_01's pages and clearances, the browser's own checks, the
 * docs page). They count clearances issued and pages loaded against limits of a few seconds,
 * which hold alone but not beside the rest of a full run: on this two-core machine a full run
 * holds a load average of 8-10, and CI of 2026-11-29 failed 8 of them there (a clearance's make
 * aborted at its 8 s limit, then made again). So they run after the others, one at a time, on a
 * calm machine (docs/testing.md "Two projects"). A file that starts a browser belongs here.
 */
const BROWSER_FILES = [
  'test/scrapers/pf_01.test.ts',
  'test/scrapers/pf_01-sessions.test.ts',
  'test/scrapers/pf_01-not-found.test.ts',
  'test/scrapers/proxied-fetchers.test.ts',
  'test/scrapers/blocked.test.ts',
  'test/scrapers/browser-ca.test.ts',
  'test/scrapers/browser-identity.test.ts',
  'test/scrapers/browser-pages.test.ts',
  'test/scrapers/browser-profiles.test.ts',
  'test/scrapers/browser-reports.test.ts',
  'test/scrapers/browser-user.test.ts',
  'test/scrapers/every-platform-walled.test.ts',
  'test/scrapers/every-platform-proxied.test.ts',
  'test/monitors/pf_01-sessions.test.ts',
  'test/apis/live-availability/egress-failures.test.ts',
  'test/apis/live-availability/scrape.test.ts',
  'test/simulator/pf_01-protection.test.ts',
  'test/simulator/walls-front.test.ts',
  'test/simulator/walls-measure.test.ts',
  'test/simulator/tls-front.test.ts',
  'test/gateway/docs-page.test.ts',
  'clients/typescript/test/browser.test.ts',
];

const ALL_FILES = ['test/**/*.test.ts', 'clients/typescript/test/**/*.test.ts'];

/** What both projects share (a project does not inherit the root's test options unless told to, and the root's globalSetup must run once). */
const shared = {
  // A hang guard, not a speed check (speed is the benches'): cases that take 20-22 s alone (the
  // admin CLI's error cases, npm start's stops) came within a few seconds of 30 s in a full run.
  testTimeout: 90_000,
  hookTimeout: 60_000,
  pool: 'forks' as const,
};

export default defineConfig({
  test: {
    // Once for the run, at the root: PostgreSQL, the Temporal server, stripe-mock, the workflow
    // bundle, provided to both projects.
    globalSetup: ['test/support/global-setup.ts'],
    // Three on two cores: the suite waits more than it computes (a full run with two left the CPU
    // idle 40 % of the time: retry schedules, polls, Temporal timers; one file, the webhook outage,
    // holds its fork 250 s for 2 minutes of outage). docs/testing.md "Where the time goes".
    poolOptions: { forks: { maxForks: 3, minForks: 1 } },
    // The longest files first, so none starts late and runs alone at the end.
    sequence: { sequencer: LongFirstSequencer },
    projects: [
      { test: { ...shared, name: 'service', include: ALL_FILES, exclude: ['**/node_modules/**', ...BROWSER_FILES] } },
      // singleFork: vitest runs these after every other file of the run, one after the other.
      { test: { ...shared, name: 'browser', include: BROWSER_FILES, poolOptions: { forks: { singleFork: true } } } },
    ],
  },
});
