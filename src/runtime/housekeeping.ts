// Periodic upkeep, in every gateway process: releases the credit reservations a crash orphaned,
// then runs every retention rule (src/retention/rules.ts), each batch by batch within its own
// time budget so that one table's backlog cannot hold up the others, and drains over ticks.
//
// One tick at a time: the next tick is scheduled when the previous one has ended, so a slow tick
// (a backlog, a slow database) delays the next instead of running beside it. Gateways running
// side by side may tick together; a rule's advisory lock keeps them off the same table.
import type { Services } from '../gateway/request-state.ts';
import { pruneTable, type RetentionRule } from '../retention/rule.ts';
import { retentionRules } from '../retention/rules.ts';

export interface HousekeepingOptions {
  /** Time from the end of one tick to the start of the next. */
  everyMs?: number;
  /** The rules to run (default: every rule of src/retention/rules.ts for the configuration). */
  rules?: readonly RetentionRule[];
  /** How long one rule may go on removing rows in one tick before the next rule's turn. */
  ruleBudgetMs?: number;
}

const EVERY_MS = 60_000;
const RULE_BUDGET_MS = 5_000;

/** Starts the housekeeping (a first tick at once); the returned function stops it and waits for a tick in progress. */
export function startHousekeeping(services: Pick<Services, 'billing' | 'config' | 'db' | 'log'>, opts: HousekeepingOptions = {}): () => Promise<void> {
  const { billing, config, db, log } = services;
  const rules = opts.rules ?? retentionRules(config);
  const everyMs = opts.everyMs ?? EVERY_MS;
  const ruleBudgetMs = opts.ruleBudgetMs ?? RULE_BUDGET_MS;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;

  const releaseOrphans = async () => {
    try {
      const released = await billing.releaseOrphans(config.RESERVATION_TIMEOUT_MS);
      if (released) log.warn({ released }, 'released orphaned credit reservations');
    } catch (err) {
      log.warn({ err }, 'housekeeping: releasing orphaned credit reservations failed; will retry');
    }
  };

  const prune = async () => {
    const started = Date.now();
    const deleted: Record<string, number> = {};
    const ended: Record<string, number> = {};
    const unfinished: string[] = [];
    for (const rule of rules) {
      if (stopped) break;
      try {
        const r = await pruneTable(db, rule, { deadline: Date.now() + ruleBudgetMs, stopped: () => stopped });
        if (r.deleted > 0) deleted[r.table] = (deleted[r.table] ?? 0) + r.deleted;
        if (r.ended > 0) ended[r.table] = (ended[r.table] ?? 0) + r.ended;
        if (!r.done && !r.busy && !stopped) unfinished.push(r.table);
      } catch (err) {
        log.warn({ err, table: rule.table }, 'retention: pruning failed; will retry at the next tick');
      }
    }
    if (Object.keys(deleted).length > 0 || Object.keys(ended).length > 0 || unfinished.length > 0) {
      // `unfinished`: tables with more to remove than one budget allows; the next tick goes on.
      // `ended`: rows ended rather than removed (parked webhook deliveries failed as expired), only when there are some.
      log.info({ deleted, ...(Object.keys(ended).length > 0 ? { ended } : {}), unfinished, ms: Date.now() - started }, 'retention: pruned rows past their retention');
    }
  };

  const tick = () => {
    timer = null;
    running = (async () => {
      await releaseOrphans();
      await prune();
    })().finally(() => {
      running = null;
      if (!stopped) {
        timer = setTimeout(tick, everyMs);
        timer.unref();
      }
    });
  };
  tick();

  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await running;
  };
}
