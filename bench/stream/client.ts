// bench:stream's load generator: one process holding thousands of WebSocket connections over
// raw TCP, with a minimal frame reader (server frames are unmasked) so receiving costs far less
// than sending: the server under test saturates, not this. It counts text frames, samples the
// latency of every Nth one from its `"t":` timestamp, answers pings, and can stall a fraction
// of its connections (read the hello, then never read again). Driven by its parent over IPC.
import net from 'node:net';
import { Histogram, nowMs } from './measure.ts';

export interface ConnectCommand {
  cmd: 'connect';
  port: number;
  /** Request target and extra header lines, one per connection. */
  targets: { path: string; headers: string[] }[];
  stallFraction: number;
  concurrency: number;
}

export type ClientCommand = ConnectCommand | { cmd: 'reset'; sampleEvery: number } | { cmd: 'report' } | { cmd: 'close' };

export interface ClientReport {
  type: 'report';
  frames: number;
  closes: number;
  counts: number[];
  live: number;
  stalled: number;
}

const T_MARK = Buffer.from('"t":');
const PONG_MASK = Buffer.from([0, 0, 0, 0]);

let frames = 0;
let closes = 0;
let sampleEvery = 16;
let hist = new Histogram();
const sockets = new Set<net.Socket>();
let live = 0;
let stalled = 0;

function parseT(buf: Buffer, start: number, end: number): number {
  const at = buf.indexOf(T_MARK, start);
  if (at < 0 || at >= end) return NaN;
  let i = at + T_MARK.length;
  let s = '';
  while (i < end) {
    const c = buf[i]!;
    if ((c >= 48 && c <= 57) || c === 46) s += String.fromCharCode(c);
    else break;
    i++;
  }
  return Number(s);
}

function open(port: number, target: { path: string; headers: string[] }, stall: boolean): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    sockets.add(socket);
    let upgraded = false;
    let helloSeen = false;
    let pending: Buffer | null = null;
    let settled = false;
    const done = (ok: boolean) => {
      if (!settled) {
        settled = true;
        resolve(ok);
      }
    };
    socket.on('error', () => done(false));
    socket.on('close', () => {
      sockets.delete(socket);
      if (helloSeen && !stall) live--;
      done(false);
    });
    socket.on('connect', () => {
      socket.write(
        [
          `GET ${target.path} HTTP/1.1`,
          'Host: 127.0.0.1',
          'Upgrade: websocket',
          'Connection: Upgrade',
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
          'Sec-WebSocket-Version: 13',
          ...target.headers,
          '',
          '',
        ].join('\r\n'),
      );
    });
    const onData = (chunk: Buffer) => {
      const buf = pending ? Buffer.concat([pending, chunk]) : chunk;
      pending = null;
      let off = 0;
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) {
          pending = buf;
          return;
        }
        if (!buf.subarray(0, 12).toString().startsWith('HTTP/1.1 101')) {
          socket.destroy();
          return done(false);
        }
        upgraded = true;
        off = end + 4;
      }
      while (buf.length - off >= 2) {
        const b0 = buf[off]!;
        let len = buf[off + 1]! & 0x7f;
        let hdr = 2;
        if (len === 126) {
          if (buf.length - off < 4) break;
          len = buf.readUInt16BE(off + 2);
          hdr = 4;
        } else if (len === 127) {
          if (buf.length - off < 10) break;
          len = Number(buf.readBigUInt64BE(off + 2));
          hdr = 10;
        }
        if (buf.length - off < hdr + len) break;
        const opcode = b0 & 0x0f;
        const start = off + hdr;
        if (opcode === 1 || opcode === 2) {
          if (!helloSeen) {
            helloSeen = true;
            if (stall) {
              stalled++;
              socket.off('data', onData);
              socket.pause();
              return done(true);
            }
            live++;
            done(true);
          } else if (++frames % sampleEvery === 0) {
            const t = parseT(buf, start, start + len);
            if (t) hist.record(Math.max(0, (nowMs() - t) * 1000));
          }
        } else if (opcode === 8) {
          closes++;
        } else if (opcode === 9) {
          // Pong with the ping's payload (client frames are masked; a zero mask keeps it as is).
          const payload = buf.subarray(start, start + len);
          socket.write(Buffer.concat([Buffer.from([0x8a, 0x80 | payload.length]), PONG_MASK, payload]));
        }
        off = start + len;
      }
      if (off < buf.length) pending = buf.subarray(off);
    };
    socket.on('data', onData);
  });
}

process.on('message', async (m: ClientCommand) => {
  if (m.cmd === 'connect') {
    const started = performance.now();
    let ok = 0;
    let failed = 0;
    let next = 0;
    const worker = async () => {
      while (next < m.targets.length) {
        const i = next++;
        const stall = m.stallFraction > 0 && i % Math.round(1 / m.stallFraction) === 0;
        if (await open(m.port, m.targets[i]!, stall)) ok++;
        else failed++;
      }
    };
    await Promise.all(Array.from({ length: m.concurrency }, worker));
    process.send!({ type: 'connected', ok, failed, ms: Math.round(performance.now() - started) });
  } else if (m.cmd === 'reset') {
    frames = 0;
    closes = 0;
    sampleEvery = m.sampleEvery;
    hist = new Histogram();
  } else if (m.cmd === 'report') {
    process.send!({ type: 'report', frames, closes, counts: hist.counts, live, stalled } satisfies ClientReport);
  } else if (m.cmd === 'close') {
    for (const s of sockets) s.destroy();
    setTimeout(() => process.exit(0), 50);
  }
});
process.send!({ type: 'ready' });
