// Proxies that fail in each way a fetcher can meet (issue 36), all on loopback, each with its own
// user name and password so a test can look for them in what a customer is told:
// - `refusing`: a proxy-chain proxy configured with the wrong password, which answers 407;
// - `dead`: a reserved port nobody listens on (src/runtime/ports.ts), so connecting is refused;
// - `tls`: an https:// proxy whose server answers plain text, so the TLS handshake fails;
// - `silent`: a server that accepts and never answers, so every request runs out of time.
import net from 'node:net';
import { releasePort, reservePort } from '../../src/runtime/ports.ts';
import { startLoopbackProxies } from './loopback-proxies.ts';

export interface FailingProxy {
  /** The URL to configure in SCRAPE_PROXY_URLS, credentials included. */
  url: string;
  /** scheme://host:port, as logs name it. */
  label: string;
  host: string;
  port: number;
  user: string;
  password: string;
  /** Connections its server accepted (the dead one has none). */
  connections(): number;
}

export interface FailingProxies {
  refusing: FailingProxy;
  dead: FailingProxy;
  tls: FailingProxy;
  silent: FailingProxy;
  all(): FailingProxy[];
  close(): Promise<void>;
}

function proxy(scheme: 'http' | 'https', port: number, user: string, password: string, connections: () => number): FailingProxy {
  return { url: `${scheme}://${user}:${password}@127.0.0.1:${port}`, label: `${scheme}://127.0.0.1:${port}`, host: '127.0.0.1', port, user, password, connections };
}

/** A TCP server on loopback that hands each connection to `onSocket` and counts them. */
async function tcpServer(onSocket: (socket: net.Socket) => void): Promise<{ server: net.Server; port: number; count: () => number; sockets: Set<net.Socket> }> {
  let count = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    count++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as net.AddressInfo).port, count: () => count, sockets };
}

export async function startFailingProxies(): Promise<FailingProxies> {
  const chain = await startLoopbackProxies(1, { credentials: { username: 'egress-user-407', password: 'right-pw-Kq7w' } });
  const chainPort = chain.proxies[0]!.port;
  const deadPort = await reservePort();
  // Plain HTTP where a TLS server hello is expected: the client's handshake fails at once.
  const plain = await tcpServer((socket) => socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n'));
  const hang = await tcpServer(() => {});
  const proxies: FailingProxies = {
    refusing: proxy('http', chainPort, 'egress-user-407', 'wrong-pw-Zt4v', () => chain.proxies[0]!.stats().http + chain.proxies[0]!.stats().connect),
    dead: proxy('http', deadPort, 'dead-user-81', 'dead-pw-Mx2q', () => 0),
    tls: proxy('https', plain.port, 'tls-user-29', 'tls-pw-Hb5n', plain.count),
    silent: proxy('http', hang.port, 'hang-user-63', 'hang-pw-Rc8d', hang.count),
    all: () => [proxies.refusing, proxies.dead, proxies.tls, proxies.silent],
    close: async () => {
      for (const s of [...plain.sockets, ...hang.sockets]) s.destroy();
      await Promise.all([chain.close(), new Promise((r) => plain.server.close(r)), new Promise((r) => hang.server.close(r))]);
      releasePort(deadPort);
    },
  };
  return proxies;
}

/** Every string by which a text could name `p`: what a customer must never be told. */
export function marksOf(p: FailingProxy): string[] {
  return [p.label, `${p.host}:${p.port}`, p.host, String(p.port), p.user, p.password];
}
