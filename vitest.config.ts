import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'clients/typescript/test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Three on two cores: the suite waits more than it computes (a full run with two left the CPU
    // idle 40 % of the time: retry schedules, polls, Temporal timers; one file, the webhook outage,
    // holds its fork 250 s for 2 minutes of outage). docs/testing.md "Where the time goes".
    poolOptions: { forks: { maxForks: 3, minForks: 1 } },
  },
});
