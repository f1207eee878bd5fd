// deploy/nginx.conf keeps keys and clients' query values out of its access log and lets no
// client choose its own address (issue 25). Read from the file as nginx would take it: every
// log_format names neither the query string nor the referer, every access_log line uses one of
// them, and both proxied locations pass X-Forwarded-For as nginx's own view of the client.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/harness.ts';

const conf = readFileSync(`${PROJECT_ROOT}deploy/nginx.conf`, 'utf8')
  .split('\n')
  .map((l) => l.replace(/#.*$/, ''))
  .join('\n');

/** Directives with their arguments, however they are wrapped over lines. */
function directives(name: string): string[] {
  return [...conf.matchAll(new RegExp(`(?:^|[;{}\\s])${name}\\s+([^;]*);`, 'g'))].map((m) => m[1]!.replace(/\s+/g, ' ').trim());
}

describe('deploy/nginx.conf', () => {
  it('logs no query string and no referer: the stream path carries keys as ?apikey=', () => {
    const formats = directives('log_format');
    expect(formats.length).toBeGreaterThan(0);
    for (const f of formats) {
      for (const variable of ['$request ', '$request"', '$request_uri', '$args', '$query_string', '$arg_', '$is_args', '$http_referer']) expect(f).not.toContain(variable);
      expect(f).toContain('$uri');
    }
    const names = formats.map((f) => f.split(' ')[0]);
    const logs = directives('access_log');
    expect(logs.length).toBeGreaterThan(0);
    // nginx's default "combined" format logs $request (with the query): every access log names ours.
    for (const l of logs) expect(l === 'off' || names.includes(l.split(' ')[1]!)).toBe(true);
  });

  it('passes X-Forwarded-For as the address nginx took for the client, believing it only from listed proxies', () => {
    const forwarded = directives('proxy_set_header').filter((h) => h.startsWith('X-Forwarded-For'));
    expect(forwarded.length).toBe(2);
    for (const h of forwarded) expect(h).toBe('X-Forwarded-For $remote_addr');
    expect(directives('real_ip_header')).toEqual(['X-Forwarded-For']);
    // Only listed addresses are believed; as shipped, only a local proxy.
    expect(directives('set_real_ip_from')).toEqual(['127.0.0.1']);
  });
});
