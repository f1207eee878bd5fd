// Loopback proxies for tests and benchmarks (issue 27): `proxy-chain` (Apify's proxy server)
// instances listening on 127.0.0.1, each sending its outgoing connections from its own loopback
// address (127.0.0.2, 127.0.0.3, ...), so the simulator sees as many clients as there are proxies
// and can limit and ban them apart. Each asks for credentials when given some, as paid proxies do,
// and forwards to loopback targets only: nothing leaves this machine through them.
import { Server } from 'proxy-chain';

export interface LoopbackProxy {
  /** The proxy URL to configure, credentials included. */
  url: string;
  /** The address its outgoing connections come from. */
  address: string;
  port: number;
  /** Requests it forwarded (absolute-URI) and tunnels it opened (CONNECT). */
  stats(): { http: number; connect: number };
}

export interface LoopbackProxies {
  proxies: LoopbackProxy[];
  /** SCRAPE_PROXY_URLS for all of them (one list for every platform). */
  setting: string;
  close(): Promise<void>;
}

/** The outgoing address of proxy `i` (0-based): 127.0.0.2 onward, 250 per /24. */
export function loopbackAddress(i: number): string {
  return `127.0.${Math.floor(i / 250)}.${(i % 250) + 2}`;
}

export async function startLoopbackProxies(count: number, opts: { credentials?: { username: string; password: string } } = {}): Promise<LoopbackProxies> {
  const proxies: { server: Server; proxy: LoopbackProxy }[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const address = loopbackAddress(i);
      const creds = opts.credentials;
      const server = new Server({
        port: 0,
        host: '127.0.0.1',
        verbose: false,
        prepareRequestFunction: ({ username, password, hostname }) => {
          if (creds && (username !== creds.username || password !== creds.password)) return { requestAuthentication: true };
          if (!/^127\./.test(hostname) && hostname !== 'localhost') return { failMsg: 'this test proxy forwards to loopback only' };
          return { localAddress: address };
        },
      });
      // A client that goes away mid-request is expected in tests (aborts, time-outs).
      server.on('requestFailed', () => {});
      await server.listen();
      const auth = creds ? `${encodeURIComponent(creds.username)}:${encodeURIComponent(creds.password)}@` : '';
      proxies.push({
        server,
        proxy: {
          url: `http://${auth}127.0.0.1:${server.port}`,
          address,
          port: server.port,
          stats: () => ({ http: server.stats.httpRequestCount, connect: server.stats.connectRequestCount }),
        },
      });
    }
  } catch (err) {
    await Promise.all(proxies.map((p) => p.server.close(true)));
    throw err;
  }
  return {
    proxies: proxies.map((p) => p.proxy),
    setting: proxies.map((p) => p.proxy.url).join(','),
    close: async () => {
      await Promise.all(proxies.map((p) => p.server.close(true)));
    },
  };
}
