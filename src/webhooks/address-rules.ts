// Which IP addresses a webhook may reach: public unicast only. Pure functions, no I/O: the
// same check runs on a URL's literal host at create, on every address its name resolves to,
// and (at delivery) on the address actually connected to, so DNS rebinding cannot reach inside.
// IPv6 is an allow-list (global unicast 2000::/3 minus its special blocks): anything new or
// odd is refused rather than guessed at. Forms that embed an IPv4 address (mapped, NAT64,
// 6to4) are judged by the address they embed.
import { isIPv4, isIPv6 } from 'node:net';

type Block4 = readonly [base: string, bits: number, what: string];

// IANA IPv4 Special-Purpose Address Registry, plus multicast and the reserved 240/4.
const IPV4_BLOCKS: readonly Block4[] = [
  ['0.0.0.0', 8, 'a "this network" address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a carrier-grade NAT (CGNAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'an IETF protocol address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.31.196.0', 24, 'an AS112 address'],
  ['192.52.193.0', 24, 'an AMT address'],
  ['192.88.99.0', 24, 'a 6to4 relay address'],
  ['192.168.0.0', 16, 'a private address'],
  ['192.175.48.0', 24, 'an AS112 address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

type Block6 = readonly [base: string, bits: number, what: string];

// Special blocks inside 2000::/3 (IANA IPv6 Special-Purpose Address Registry).
const IPV6_GLOBAL_EXCEPTIONS: readonly Block6[] = [
  ['2001::', 23, 'an IETF protocol address (Teredo, benchmarking, ORCHID)'],
  ['2001:db8::', 32, 'a documentation address'],
  ['3fff::', 20, 'a documentation address'],
];

/** A dotted-quad IPv4 address as a 32-bit number, or null. Only the strict form: the URL parser has already normalised `127.1`, `2130706433`, `0x7f.1` and `0177.0.0.1`. */
export function parseIPv4(text: string): number | null {
  if (!isIPv4(text)) return null;
  return text.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

/** An IPv6 address (no brackets, no zone) as a 128-bit number, or null. */
export function parseIPv6(text: string): bigint | null {
  if (!isIPv6(text) || text.includes('%')) return null;
  let body = text;
  const groups: number[] = [];
  // A trailing dotted IPv4 part stands for the last two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(body);
  let tail: number[] = [];
  if (dotted) {
    const v4 = parseIPv4(dotted[1]!);
    if (v4 === null) return null;
    tail = [v4 >>> 16, v4 & 0xffff];
    body = body.slice(0, -dotted[1]!.length);
    if (body.endsWith(':') && !body.endsWith('::')) body = body.slice(0, -1);
  }
  const [head, rest] = body.split('::') as [string, string | undefined];
  const left = head ? head.split(':').map((g) => parseInt(g, 16)) : [];
  const right = rest ? rest.split(':').map((g) => parseInt(g, 16)) : [];
  const missing = 8 - left.length - right.length - tail.length;
  if (rest === undefined && missing !== 0) return null;
  groups.push(...left, ...Array<number>(rest === undefined ? 0 : missing).fill(0), ...right, ...tail);
  if (groups.length !== 8) return null;
  return groups.reduce((n, g) => (n << 16n) | BigInt(g), 0n);
}

function inBlock4(addr: number, base: string, bits: number): boolean {
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return ((addr & mask) >>> 0) === ((parseIPv4(base)! & mask) >>> 0);
}

function inBlock6(addr: bigint, base: string, bits: number): boolean {
  const shift = BigInt(128 - bits);
  return addr >> shift === parseIPv6(base)! >> shift;
}

function v4Text(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

function ipv4Problem(addr: number, shown: string): string | null {
  for (const [base, bits, what] of IPV4_BLOCKS) {
    if (inBlock4(addr, base, bits)) return `${shown} is ${what}`;
  }
  return null;
}

function ipv6Problem(addr: bigint, shown: string): string | null {
  const low32 = Number(addr & 0xffffffffn);
  if (addr >> 32n === 0xffffn) return embedded(low32, shown, 'IPv4-mapped');
  if (inBlock6(addr, '64:ff9b::', 96)) return embedded(low32, shown, 'NAT64');
  if (inBlock6(addr, '2002::', 16)) return embedded(Number((addr >> 80n) & 0xffffffffn), shown, '6to4');
  if (addr === 0n) return `${shown} is the unspecified address`;
  if (addr === 1n) return `${shown} is a loopback address`;
  if (inBlock6(addr, 'fe80::', 10)) return `${shown} is a link-local address`;
  if (inBlock6(addr, 'fc00::', 7)) return `${shown} is a unique local (private) address`;
  if (!inBlock6(addr, '2000::', 3)) return `${shown} is not a global unicast address`;
  for (const [base, bits, what] of IPV6_GLOBAL_EXCEPTIONS) {
    if (inBlock6(addr, base, bits)) return `${shown} is ${what}`;
  }
  return null;
}

function embedded(v4: number, shown: string, form: string): string | null {
  const inner = ipv4Problem(v4, v4Text(v4));
  return inner ? `${shown} is ${form} and embeds ${inner}` : null;
}

/**
 * Why a webhook must not be delivered to this IP address (a literal, IPv4 dotted or IPv6 without
 * brackets), or null when it is a public unicast address. Anything that is not an IP literal is
 * refused too: the caller resolves names first.
 */
export function addressProblem(ip: string): string | null {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const v4 = parseIPv4(bare);
  if (v4 !== null) return ipv4Problem(v4, bare);
  const v6 = parseIPv6(bare);
  if (v6 !== null) return ipv6Problem(v6, bare);
  return `${JSON.stringify(ip.slice(0, 80))} is not an IP address`;
}
