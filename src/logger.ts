// Structured logging (pino). Secrets are redacted at the logger so no call site can leak one.
// JSON lines, except on a terminal: there each line is printed readable (pino-pretty). Redaction
// happens before either is written, so both show `[redacted]`, never the secret.
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

export const REDACTED_PATHS = [
  'req.headers.apikey',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.apikey',
  'apikey',
  'key',
  'password',
  'connectionString',
];

/**
 * Where a logger writes when the caller names nowhere: stdout, readable when it is a terminal
 * (a person reads it), JSON lines otherwise (a pipe, a file or a collector parses them).
 */
function stdoutDestination(): pino.DestinationStream | undefined {
  if (!process.stdout.isTTY) return undefined; // pino's own stdout writer, JSON lines
  return pretty({
    // Synchronous like pino's default: lines logged just before process.exit() are not lost.
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    // Every line carries it; on a terminal it is noise.
    ignore: 'pid,hostname,service',
  });
}

export function createLogger(level: string, destination: pino.DestinationStream | undefined = stdoutDestination()): Logger {
  return pino(
    {
      level,
      base: { service: 'ticket-market' },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
