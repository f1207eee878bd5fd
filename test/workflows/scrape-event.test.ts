// scrapeEvent on the real Temporal server with the real scrapers against the simulator:
// retries then success, non-retryable not-found, the request limit, shared runs for identical
// requests, and the ops path that lists and retries failed runs.
import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { scrapeWorkflowId, ScrapeRunError } from '../../src/apis/live-availability/scrape-runs.ts';
import { listFailedScrapes, retryScrape } from '../../src/ops/failed-scrapes.ts';
import { parseEventRef, type EventRef } from '../../src/platform/event-ref.ts';
import { runTs } from '../support/harness.ts';
import { temporalAddress } from '../support/temporal.ts';
import { hits, putEvent, section, useScrapeStack } from '../support/scrape-stack.ts';

// The request limit, in place of 60 s: long enough that the runs that must succeed (retries and
// their back-off, a slow page, a 2.4 MB seat map) do so inside it on a loaded machine too.
const stack = useScrapeStack({ timeoutMs: 9_000 });

/** A pf_03 event nobody else uses. */
function pf03(): { url: string; ref: EventRef } {
  const url = `https://pf03.example/e/wf-${randomUUID().slice(0, 8)}`;
  const parsed = parseEventRef('pf_03', url, 'fr');
  if (!parsed.ok) throw new Error(parsed.message);
  return { url, ref: parsed.ref };
}

describe('scrapeEvent workflow', () => {
  it('retries transient failures with backoff, then succeeds', async () => {
    const { url, ref } = pf03();
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [section('Stalls', 80, 3)], failures: 2 });
    const result = await stack.runner.run(ref);
    expect(result).toMatchObject({ success: true, total_stock: 3, platform: 'pf_03', event_id: url, region: 'fr' });
    // Each attempt fetches the page once: two failures, then the answer.
    expect(await hits(stack.sim, 'pf_03', url)).toBe(3);
  });

  it('fails at once, without retries, when the event is not found', async () => {
    const { url, ref } = pf03();
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [], behaviour: 'not_found' });
    await expect(stack.runner.run(ref)).rejects.toMatchObject({ kind: 'not_found' });
    expect(await hits(stack.sim, 'pf_03', url)).toBe(1);
  });

  it('gives up on a platform that keeps failing after its retries, as a failure (not a time-out)', async () => {
    const { url, ref } = pf03();
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [], behaviour: 'error' });
    const err = await stack.runner.run(ref).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScrapeRunError);
    expect(err).toMatchObject({ kind: 'failed' });
    expect(await hits(stack.sim, 'pf_03', url)).toBe(4);
  });

  it('bounds the whole request: a page that hangs ends as a time-out within the limit', async () => {
    const { url, ref } = pf03();
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [], behaviour: 'hang' });
    const started = Date.now();
    await expect(stack.runner.run(ref)).rejects.toMatchObject({ kind: 'timeout' });
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(stack.timeoutMs - 200);
    // The activity gives up at the deadline itself: no waiting on Temporal's own time-out, which
    // arrived up to 3 s late on a loaded machine (then the gateway's grace, limit + 3 s, answered
    // instead). The limit and 50 ms on a quiet machine; the bound leaves room for a loaded one,
    // just under the grace (as in scrape-budget.test.ts), since that answer comes at 3 s or later.
    expect(took).toBeLessThan(stack.timeoutMs + 2_900);
    expect(await hits(stack.sim, 'pf_03', url)).toBe(1);
  });

  it('lets one attempt use all the time left: a page slower than a third of the limit is answered', async () => {
    const { url, ref } = pf03();
    // 4 s: past a third of the 9 s limit (3 s), with 5 s left for the run around it.
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [section('Stalls', 80, 3)], behaviour: 'slow', delay_ms: 4_000 });
    await expect(stack.runner.run(ref)).resolves.toMatchObject({ success: true, total_stock: 3 });
    expect(await hits(stack.sim, 'pf_03', url)).toBe(1);
  });

  it('shares one run between identical concurrent requests, whatever the spelling of the event id', async () => {
    const { url, ref } = pf03();
    // Slow enough that every request has reached the server while the first run is still going.
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [section('Balcony', 45.5, 2)], behaviour: 'slow', delay_ms: 3_000 });
    const spellings = [url, `${url}/`, url, `${url}/`, url];
    const refs = spellings.map((s) => {
      const p = parseEventRef('pf_03', s, 'FR');
      if (!p.ok) throw new Error(p.message);
      return p.ref;
    });
    const results = await Promise.all(refs.map((r) => stack.runner.run(r)));
    expect(await hits(stack.sim, 'pf_03', url)).toBe(1);
    expect(new Set(results.map((r) => r.scrape_timestamp)).size).toBe(1);
    expect(results.map((r) => r.event_id)).toEqual(spellings);
    // Once the run is over, the next request scrapes afresh.
    await stack.runner.run(ref);
    expect(await hits(stack.sim, 'pf_03', url)).toBe(2);
  });

  it('runs through the task queue when the runner has no local workers, and shares runs across both paths', async () => {
    const { url, ref } = pf03();
    // A page slow enough that the first run is surely still going when the second request comes.
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [section('Pit', 99, 5)], behaviour: 'slow', delay_ms: 3_000 });
    // Which client starts each run, and whether the server took it eagerly, read off the real
    // clients' start calls (the calls themselves go through).
    const viaQueue = vi.spyOn(stack.client.workflow, 'start');
    const viaLocal = vi.spyOn(stack.localWorkers.workflow, 'start');
    stack.runner.startOnLocalWorkers(null);
    try {
      // One request through the queue, then (while its run is still going) one started eagerly:
      // the second joins the first's run whichever way it was started.
      const queued = stack.runner.run(ref);
      await new Promise((r) => setTimeout(r, 150));
      stack.runner.startOnLocalWorkers(stack.localWorkers);
      const eager = stack.runner.run(ref);
      const [a, b] = await Promise.all([queued, eager]);
      expect(a).toMatchObject({ success: true, total_stock: 5 });
      expect(b.scrape_timestamp).toBe(a.scrape_timestamp);
      expect(await hits(stack.sim, 'pf_03', url)).toBe(1);

      expect(viaQueue).toHaveBeenCalledTimes(1);
      expect(viaQueue.mock.calls[0]![1]).toMatchObject({ requestEagerStart: false });
      expect(viaLocal).toHaveBeenCalledTimes(1);
      expect(viaLocal.mock.calls[0]![1]).toMatchObject({ requestEagerStart: true });
      // The second start met the running run: it joined it rather than starting one.
      const joined = await viaLocal.mock.results[0]!.value;
      expect(joined.firstExecutionRunId).toBe((await viaQueue.mock.results[0]!.value).firstExecutionRunId);

      // A new run started with the local workers set is taken eagerly by the server.
      const fresh = pf03();
      await putEvent(stack.sim, 'pf_03', fresh.url, { region: 'fr', sections: [section('Pit', 10, 1)] });
      await stack.runner.run(fresh.ref);
      expect((await viaLocal.mock.results[1]!.value).eagerlyStarted).toBe(true);
    } finally {
      stack.runner.startOnLocalWorkers(stack.localWorkers);
      viaQueue.mockRestore();
      viaLocal.mockRestore();
    }
  });

  it('delivers a seat map past the 2 MB Temporal payload limit (gzip codec)', async () => {
    // 20 sections of 1,000 seats: 2.4 MB of JSON, 59 KB gzipped.
    const url = `https://www.pf02.example/uk/event/big-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_02', url, { region: 'uk', sections: Array.from({ length: 20 }, (_, i) => section(`S${i}`, 50 + i, 1_000)) });
    const parsed = parseEventRef('pf_02', url, 'uk');
    if (!parsed.ok) throw new Error(parsed.message);
    const result = await stack.runner.run(parsed.ref);
    expect(JSON.stringify(result).length).toBeGreaterThan(2 * 1024 * 1024);
    expect(result.total_stock).toBe(20_000);
  });

  it('lists a failed run for ops and retries it once the platform is back', async () => {
    const { url, ref } = pf03();
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [section('Pit', 150, 5)], behaviour: 'malformed' });
    await expect(stack.runner.run(ref)).rejects.toMatchObject({ kind: 'failed' });
    const id = scrapeWorkflowId(ref);

    const since = new Date(Date.now() - 60_000);
    let failed = await listFailedScrapes(stack.client, since);
    for (let i = 0; i < 20 && !failed.some((f) => f.workflow_id === id); i++) {
      await new Promise((r) => setTimeout(r, 250)); // visibility is eventually consistent
      failed = await listFailedScrapes(stack.client, since);
    }
    expect(failed.find((f) => f.workflow_id === id)).toMatchObject({ status: 'FAILED', failure_type: 'malformed', platform: 'pf_03', event_id: url, region: 'fr' });
    // What the client was told, and for operators what happened (the scrape failure's own message).
    expect(failed.find((f) => f.workflow_id === id)).toMatchObject({ message: expect.stringMatching(/^pf_03/), reason: expect.stringMatching(/^pf_03: /) });

    // The ops CLI prints the same list as JSON.
    const cli = await runTs('src/ops/cli.ts', ['scrapes:failed', '--since', '10m'], { ...process.env, TEMPORAL_ADDRESS: temporalAddress(), LOG_LEVEL: 'silent' });
    expect(cli.code, cli.stderr).toBe(0);
    expect((JSON.parse(cli.stdout) as { workflow_id: string }[]).map((f) => f.workflow_id)).toContain(id);

    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [section('Pit', 150, 5)] });
    // Retried through the CLI, as an operator would, on the failed run's own task queue.
    const retried = await runTs('src/ops/cli.ts', ['scrapes:retry', id], { ...process.env, TEMPORAL_ADDRESS: temporalAddress(), LOG_LEVEL: 'silent' });
    expect(retried.code, retried.stderr).toBe(0);
    expect(JSON.parse(retried.stdout)).toMatchObject({ workflow_id: id, outcome: 'succeeded', total_stock: 5 });
    // A run that fails again is reported as such, not thrown.
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [], behaviour: 'not_found' });
    await expect(stack.runner.run(ref)).rejects.toMatchObject({ kind: 'not_found' });
    expect(await retryScrape(stack.client, id)).toMatchObject({ workflow_id: id, outcome: 'failed', detail: expect.stringContaining('not_found') });
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [section('Pit', 150, 5)] });
    expect(await retryScrape(stack.client, id)).toMatchObject({ outcome: 'succeeded' });
    expect((await listFailedScrapes(stack.client, since)).map((f) => f.workflow_id)).not.toContain(id);
  });

  it('ops CLI: usage errors exit 2, an unreachable server exits 1 with a message', async () => {
    const usage = await runTs('src/ops/cli.ts', ['scrapes:nope'], { ...process.env, TEMPORAL_ADDRESS: temporalAddress() });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('unknown command');
    const down = await runTs('src/ops/cli.ts', ['scrapes:failed'], { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('no Temporal server answers at 127.0.0.1:1');
  });
});
