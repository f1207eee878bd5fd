// A SOCKS5 proxy on loopback for tests (RFC 1928, with RFC 1929's user name and password): CONNECT
// only, to loopback targets only, counting the tunnels it opened. proxy-chain, the tests' HTTP
// proxy, does not speak SOCKS; the scrapers' HTTP client does (issue 37).
import net from 'node:net';

export interface Socks5Proxy {
  /** socks5://user:password@127.0.0.1:port */
  url: string;
  port: number;
  /** Tunnels opened (authenticated CONNECTs). */
  tunnels(): number;
  close(): Promise<void>;
}

/** Reads exactly `n` bytes from `socket`, or rejects when it ends first. */
function readBytes(socket: net.Socket, n: number, buffered: { data: Buffer }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tryRead = () => {
      if (buffered.data.length >= n) {
        const out = buffered.data.subarray(0, n);
        buffered.data = buffered.data.subarray(n);
        socket.off('data', onData);
        socket.off('close', onClose);
        resolve(out);
      }
    };
    const onData = (chunk: Buffer) => {
      buffered.data = Buffer.concat([buffered.data, chunk]);
      tryRead();
    };
    const onClose = () => reject(new Error('closed'));
    socket.on('data', onData);
    socket.once('close', onClose);
    tryRead();
  });
}

export async function startSocks5Proxy(credentials: { username: string; password: string }): Promise<Socks5Proxy> {
  let tunnels = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    const buffered = { data: Buffer.alloc(0) };
    void (async () => {
      const [version, methods] = await readBytes(client, 2, buffered);
      if (version !== 5) return client.destroy();
      const offered = await readBytes(client, methods!, buffered);
      if (!offered.includes(2)) return void client.end(Buffer.from([5, 0xff]));
      client.write(Buffer.from([5, 2]));
      const [, userLength] = await readBytes(client, 2, buffered);
      const user = (await readBytes(client, userLength!, buffered)).toString();
      const [passLength] = await readBytes(client, 1, buffered);
      const pass = (await readBytes(client, passLength!, buffered)).toString();
      if (user !== credentials.username || pass !== credentials.password) return void client.end(Buffer.from([1, 1]));
      client.write(Buffer.from([1, 0]));
      const [, command, , type] = await readBytes(client, 4, buffered);
      let host: string;
      if (type === 1) host = [...(await readBytes(client, 4, buffered))].join('.');
      else if (type === 3) host = (await readBytes(client, (await readBytes(client, 1, buffered))[0]!, buffered)).toString();
      else return client.destroy();
      const port = (await readBytes(client, 2, buffered)).readUInt16BE(0);
      if (command !== 1 || !['127.0.0.1', 'localhost'].includes(host)) return void client.end(Buffer.from([5, 2, 0, 1, 0, 0, 0, 0, 0, 0]));
      const upstream = net.connect(port, host, () => {
        tunnels++;
        client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]));
        if (buffered.data.length > 0) upstream.write(buffered.data);
        client.pipe(upstream).pipe(client);
      });
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      upstream.on('error', () => client.destroy());
    })().catch(() => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `socks5://${credentials.username}:${credentials.password}@127.0.0.1:${port}`,
    port,
    tunnels: () => tunnels,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
