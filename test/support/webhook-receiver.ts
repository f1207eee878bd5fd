// A webhook receiver on loopback for the delivery tests. It verifies every request with the
// `standardwebhooks` package (the reference implementation, not our own signer) against the
// secrets it is given, records what came, and answers as the test scripts it: a status (with
// headers) per request, or a hang until the sender gives up.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  at: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** For each secret given, whether the reference verifier accepted the request. */
  verified: boolean[];
  /** What it was answered: a status once sent (the sender may have given up by then), 'hang', or null while pending. */
  answered: number | 'hang' | null;
}

export type Answer = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';

export interface Receiver {
  url: string;
  received: Received[];
  /** Secrets to verify with (replaced, not added to). */
  secrets: string[];
  /** What to answer next; shifts one per request, then `fallback`. */
  script: Answer[];
  fallback: Answer;
  /** Connections accepted (a refused send never makes one). */
  connections: number;
  /** Requests being answered now, and the most at once. */
  inFlight: number;
  maxInFlight: number;
  /** Stops listening: connections to its port are refused until up(). */
  down(): Promise<void>;
  /** Listens again, on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(secrets: string[] = []): Promise<Receiver> {
  const r = { received: [] as Received[], secrets, script: [] as Answer[], fallback: { status: 204 } as Answer, connections: 0, inFlight: 0, maxInFlight: 0 } as Receiver;
  const server = http.createServer((req, res) => {
    r.inFlight++;
    r.maxInFlight = Math.max(r.maxInFlight, r.inFlight);
    res.on('close', () => r.inFlight--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const verified = r.secrets.map((s) => {
        try {
          new Webhook(s).verify(body, headers);
          return true;
        } catch {
          return false;
        }
      });
      const received: Received = { at: Date.now(), headers: req.headers, body, verified, answered: null };
      r.received.push(received);
      const answer = r.script.shift() ?? r.fallback;
      if (answer === 'hang') {
        received.answered = 'hang';
        return;
      }
      setTimeout(() => {
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body ?? '');
        received.answered = answer.status;
      }, answer.delayMs ?? 0);
    });
  });
  server.on('connection', () => r.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  r.url = `http://127.0.0.1:${port}/hook`;
  r.down = async () => {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  };
  r.up = () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  r.close = async () => {
    if (server.listening) await r.down();
  };
  return r;
}
