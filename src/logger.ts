// Structured logging (pino). Secrets are redacted at the logger so no call site can leak one.
import { pino, type Logger } from 'pino';

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

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
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
