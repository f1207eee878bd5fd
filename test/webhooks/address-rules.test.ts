// The webhook address rule (issue 15, "Safe"), on the pure functions only: no name is resolved
// and no connection is made, so non-loopback addresses can be checked without sending them a
// packet. Every spelling the WHATWG URL parser accepts for an inside address is refused.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addressProblem, parseIPv6 } from '../../src/webhooks/address-rules.ts';
import { hostProblem, urlProblem } from '../../src/webhooks/url-rules.ts';

const strict = { allowPrivateNetworks: false };
const octet = fc.integer({ min: 0, max: 255 });

/** An IPv4 address inside base/bits, as a 32-bit number. */
function inside(base: [number, number, number, number], bits: number): fc.Arbitrary<number> {
  const start = ((base[0] << 24) | (base[1] << 16) | (base[2] << 8) | base[3]) >>> 0;
  return fc.integer({ min: 0, max: 2 ** (32 - bits) - 1 }).map((n) => start + n);
}

// Blocks named in the issue (private, loopback, link-local, CGNAT) and the other special ones.
const INSIDE = fc.oneof(
  inside([127, 0, 0, 0], 8),
  inside([10, 0, 0, 0], 8),
  inside([172, 16, 0, 0], 12),
  inside([192, 168, 0, 0], 16),
  inside([169, 254, 0, 0], 16),
  inside([100, 64, 0, 0], 10),
  inside([0, 0, 0, 0], 8),
  inside([224, 0, 0, 0], 4),
  inside([240, 0, 0, 0], 4),
  inside([198, 18, 0, 0], 15),
);

const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
/** The spellings of one IPv4 address that URL parsers take: dotted, decimal, hex, octal, short. */
function spellings(n: number): string[] {
  const [a, b, c, d] = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
  return [
    dotted(n),
    String(n),
    `0x${n.toString(16)}`,
    `0${n.toString(8)}`,
    [a, b, c, d].map((x) => `0${x.toString(8)}`).join('.'),
    [a, b, c, d].map((x) => `0x${x.toString(16)}`).join('.'),
    `${a}.${(b << 16) | (c << 8) | d}`,
    `${a}.${b}.${(c << 8) | d}`,
    `[::ffff:${dotted(n)}]`,
    `[::ffff:${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}]`,
    `[64:ff9b::${dotted(n)}]`,
    `[2002:${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}::1]`,
  ];
}

/** A public IPv4 address (outside every special block). */
const PUBLIC_V4 = fc
  .tuple(fc.integer({ min: 1, max: 223 }), octet, octet, octet)
  .map(([a, b, c, d]) => ((a << 24) | (b << 16) | (c << 8) | d) >>> 0)
  .filter((n) => addressProblem(dotted(n)) === null);

describe('addressProblem', () => {
  it('refuses every address of the inside blocks', () => {
    fc.assert(
      fc.property(INSIDE, (n) => {
        expect(addressProblem(dotted(n))).not.toBeNull();
      }),
      { numRuns: 2000 },
    );
  });

  it('names the block it refuses', () => {
    expect(addressProblem('127.0.0.1')).toMatch(/loopback/);
    expect(addressProblem('10.1.2.3')).toMatch(/private/);
    expect(addressProblem('172.31.255.255')).toMatch(/private/);
    expect(addressProblem('192.168.1.1')).toMatch(/private/);
    expect(addressProblem('169.254.169.254')).toMatch(/link-local/);
    expect(addressProblem('100.64.0.1')).toMatch(/CGNAT/);
    expect(addressProblem('100.127.255.255')).toMatch(/CGNAT/);
    expect(addressProblem('0.0.0.0')).not.toBeNull();
    expect(addressProblem('255.255.255.255')).not.toBeNull();
    expect(addressProblem('::1')).toMatch(/loopback/);
    expect(addressProblem('::')).toMatch(/unspecified/);
    expect(addressProblem('fe80::1')).toMatch(/link-local/);
    expect(addressProblem('fd00::1')).toMatch(/private/);
    expect(addressProblem('ff02::1')).not.toBeNull();
    expect(addressProblem('::ffff:127.0.0.1')).toMatch(/IPv4-mapped.*loopback/);
    expect(addressProblem('::ffff:7f00:1')).toMatch(/IPv4-mapped.*loopback/);
    expect(addressProblem('::ffff:a9fe:a9fe')).toMatch(/link-local/);
    expect(addressProblem('64:ff9b::10.0.0.1')).toMatch(/NAT64.*private/);
    expect(addressProblem('2002:7f00:1::')).toMatch(/6to4.*loopback/);
    expect(addressProblem('2001:db8::1')).toMatch(/documentation/);
    expect(addressProblem('2001::1')).not.toBeNull(); // Teredo
    expect(addressProblem('::127.0.0.1')).not.toBeNull(); // IPv4-compatible (deprecated)
    expect(addressProblem('fe80::1%eth0')).not.toBeNull();
    expect(addressProblem('localhost')).toMatch(/not an IP address/);
  });

  it('accepts public addresses, IPv4 and IPv6, and the public ones embedded in mapped forms', () => {
    fc.assert(
      fc.property(PUBLIC_V4, (n) => {
        expect(addressProblem(dotted(n))).toBeNull();
        expect(addressProblem(`::ffff:${dotted(n)}`)).toBeNull();
      }),
      { numRuns: 1000 },
    );
    for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '100.128.0.1', '172.32.0.1', '192.169.0.1']) {
      expect(addressProblem(ip), ip).toBeNull();
    }
  });

  it('refuses every IPv6 address outside global unicast 2000::/3', () => {
    const group = fc.integer({ min: 0, max: 0xffff });
    const v6 = fc.tuple(fc.array(group, { minLength: 8, maxLength: 8 })).map(([g]) => g.map((x) => x.toString(16)).join(':'));
    fc.assert(
      fc.property(v6, (ip) => {
        const n = parseIPv6(ip)!;
        const global = n >> 125n === 1n;
        if (!global) expect(addressProblem(ip), ip).not.toBeNull();
      }),
      { numRuns: 2000 },
    );
  });

  it('parses IPv6 the way the URL parser prints it', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }), (groups) => {
        const full = groups.map((x) => x.toString(16)).join(':');
        const printed = new URL(`https://[${full}]/`).hostname.slice(1, -1);
        expect(parseIPv6(printed)).toBe(parseIPv6(full));
        expect(parseIPv6(full)).toBe(groups.reduce((n, g) => (n << 16n) | BigInt(g), 0n));
      }),
    );
  });
});

describe('urlProblem (no name resolved, no connection made)', () => {
  it('refuses every spelling of an inside IPv4 address as a URL host', () => {
    fc.assert(
      fc.property(INSIDE, fc.option(fc.integer({ min: 1, max: 65535 })), (n, port) => {
        for (const host of spellings(n)) {
          const url = `https://${host}${port ? `:${port}` : ''}/hook`;
          expect(urlProblem(url, 'standard', strict), url).not.toBeNull();
        }
      }),
      { numRuns: 500 },
    );
  });

  it('accepts the same spellings of a public address (the embedding forms judged by what they embed)', () => {
    fc.assert(
      fc.property(PUBLIC_V4, (n) => {
        for (const host of spellings(n)) expect(urlProblem(`https://${host}/hook`, 'standard', strict), host).toBeNull();
      }),
      { numRuns: 300 },
    );
  });

  it('refuses the loopback forms the end-to-end tests use', () => {
    for (const host of ['127.0.0.1', '127.1', '2130706433', '0x7f000001', '0177.0.0.1', '[::1]', '[::ffff:127.0.0.1]', 'localhost', 'LOCALHOST.', 'x.localhost', 'intranet']) {
      expect(urlProblem(`https://${host}/`, 'standard', strict), host).not.toBeNull();
    }
  });

  it('takes https only, without credentials or fragment; http too when private networks are allowed', () => {
    expect(urlProblem('http://hooks.example.com/', 'standard', strict)).toMatch(/https/);
    expect(urlProblem('ftp://hooks.example.com/', 'standard', strict)).toMatch(/https/);
    expect(urlProblem('https://u:p@hooks.example.com/', 'standard', strict)).toMatch(/password/);
    expect(urlProblem('https://hooks.example.com/#x', 'standard', strict)).toMatch(/fragment/);
    expect(urlProblem('hooks.example.com/x', 'standard', strict)).toMatch(/absolute/);
    expect(urlProblem('https://hooks.example.com/x?y=1', 'standard', strict)).toBeNull();
    expect(urlProblem(`https://hooks.example.com/${'a'.repeat(2100)}`, 'standard', strict)).toMatch(/2048/);
    const open = { allowPrivateNetworks: true };
    expect(urlProblem('http://127.0.0.1:9/hook', 'standard', open)).toBeNull();
    expect(urlProblem('https://[::1]:9/hook', 'discord', open)).toBeNull();
    expect(urlProblem('ftp://127.0.0.1/', 'standard', open)).toMatch(/http/);
  });

  it('takes only Discord execute-webhook URLs for discord webhooks', () => {
    expect(urlProblem('https://discord.com/api/webhooks/123456/abc-DEF_9', 'discord', strict)).toBeNull();
    expect(urlProblem('https://discordapp.com/api/v10/webhooks/1/t', 'discord', strict)).toBeNull();
    expect(urlProblem('https://hooks.example.com/api/webhooks/1/t', 'discord', strict)).toMatch(/Discord/);
    expect(urlProblem('https://discord.com/api/users/1', 'discord', strict)).toMatch(/Discord/);
  });
});

describe('hostProblem with an injected resolver (no DNS query is sent)', () => {
  const fake = (answers: Record<string, string[]>) => async (host: string) => {
    const a = answers[host];
    if (!a) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return a.map((address) => ({ address }));
  };

  it('refuses a name when any address it resolves to is inside', async () => {
    const lookup = fake({ 'a.example': ['93.184.216.34'], 'b.example': ['93.184.216.34', '127.0.0.1'], 'c.example': ['::ffff:10.0.0.1'] });
    expect(await hostProblem(new URL('https://a.example/'), strict, lookup)).toBeNull();
    expect(await hostProblem(new URL('https://b.example/'), strict, lookup)).toMatch(/127\.0\.0\.1.*loopback/);
    expect(await hostProblem(new URL('https://c.example/'), strict, lookup)).toMatch(/private/);
    expect(await hostProblem(new URL('https://nowhere.example/'), strict, lookup)).toMatch(/does not resolve/);
  });

  it('resolves nothing when private networks are allowed', async () => {
    const lookup = async () => {
      throw new Error('must not be called');
    };
    expect(await hostProblem(new URL('https://anything.example/'), { allowPrivateNetworks: true }, lookup)).toBeNull();
  });
});
