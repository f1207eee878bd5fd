// Sends the Temporal SDK's own logs (TypeScript side and the Rust core, forwarded) to our pino
// logger instead of raw stderr, and takes signal handling away from the SDK so the process that
// embeds a worker decides its own shutdown order. The SDK's Runtime is a process-wide singleton.
import type { LogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/common';
import { Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import type { Logger } from '../src/logger.ts';

export type Log = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

const ORDER: Record<LogLevel, number> = { TRACE: 0, DEBUG: 1, INFO: 2, WARN: 3, ERROR: 4 };
/** How long a kind of internal warning must be quiet before it is logged at warn again. */
const REPEAT_QUIET_MS = 30_000;

/**
 * Adapts pino to the SDK's Logger. Messages from workflow and activity code (workflow.log,
 * Context.log) pass at their own level; the SDK's internals (worker lifecycle, bundling, core)
 * are chatty at INFO, so only their warnings and errors get through.
 */
export class PinoSdkLogger implements SdkLogger {
  /** When each kind of internal warning was last seen (see `repeats`). */
  private readonly lastSeen = new Map<string, number>();

  constructor(
    private readonly target: Log,
    private readonly internalsFrom: LogLevel = 'WARN',
  ) {}

  log(level: LogLevel, message: string, meta: LogMetadata = {}): void {
    const component = typeof meta.sdkComponent === 'string' ? meta.sdkComponent : 'sdk';
    const fromUserCode = component === 'workflow' || component === 'activity' || component === 'nexus';
    if (!fromUserCode && ORDER[level] < ORDER[this.internalsFrom]) return;
    const fields = { ...meta, source: 'temporal-sdk', sdkComponent: component };
    if (level === 'WARN' && !fromUserCode && this.repeats(meta, message)) this.target.debug(fields, message);
    else if (level === 'ERROR') this.target.error(fields, message);
    else if (level === 'WARN') this.target.warn(fields, message);
    else if (level === 'INFO') this.target.info(fields, message);
    else this.target.debug(fields, message);
  }
  /**
   * True for an internal warning of a kind seen less than REPEAT_QUIET_MS ago. While the server is
   * away, the core warns "gRPC call poll_workflow_task_queue retried 6 times" for every poller many
   * times a second (60 lines in an 8 s outage); the first of a run of them says what is wrong, the
   * rest go to debug until the kind has been quiet for a while (the outage is over).
   */
  private repeats(meta: LogMetadata, message: string): boolean {
    const key = `${String(meta.target ?? '')} ${message.replace(/\d+/g, '#')}`;
    const now = Date.now();
    const last = this.lastSeen.get(key);
    if (this.lastSeen.size > 1_000) this.lastSeen.clear();
    this.lastSeen.set(key, now);
    return last !== undefined && now - last < REPEAT_QUIET_MS;
  }

  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

let installed = false;

/**
 * Installs the SDK Runtime with our logger, once per process: the first caller's logger wins.
 * Must run before anything creates the Runtime implicitly (a Worker, a NativeConnection,
 * @temporalio/testing's server); if something already did, its default logging stays and we say so.
 */
export function installSdkLogging(log: Log): void {
  if (installed) return;
  installed = true;
  try {
    Runtime.install({
      logger: new PinoSdkLogger(log),
      // The SDK would otherwise shut workers down on SIGINT/SIGTERM by itself, racing the
      // embedding process's own ordered shutdown (gateway first, database last).
      shutdownSignals: [],
      telemetryOptions: {
        logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }) },
      },
    });
  } catch (err) {
    log.warn({ err }, 'Temporal SDK runtime was created before its logging could be installed; SDK logs go to stderr');
  }
}
