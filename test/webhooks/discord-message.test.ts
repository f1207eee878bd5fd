// Discord's limits hold for any notification and any roles (issue 15): content at most 2000
// characters with only whole mentions, which allowed_mentions lists exactly; at most 25 fields,
// each name 256 and value 1024; title 256; the embed 6000 in all. Role ids (issue 24) are
// mentioned digit for digit, 20-digit snowflakes included, and never from an inexact number.
// A retired event's message (issue 25) keeps within the same limits.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DISCORD_LIMITS, discordMessage } from '../../src/webhooks/discord-message.ts';
import { roleIds, rolesJsonProblem } from '../../src/webhooks/role-ids.ts';

const long = fc.string({ maxLength: 8000 });

describe('discordMessage', () => {
  it('keeps within Discord\'s limits and mentions exactly the allowed roles', () => {
    fc.assert(
      fc.property(
        fc.record({ event: long, section: long, platform: long, change_type: long, currency: fc.string({ maxLength: 50 }) }),
        fc.option(fc.oneof(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.bigInt({ min: 10n ** 16n, max: 10n ** 20n - 1n }).map(String))),
        fc.array(fc.oneof(fc.bigInt({ min: 1n, max: 10n ** 19n }).map(String), fc.integer({ min: 1 }), fc.string()), { maxLength: 150 }),
        (data, roleId, roles) => {
          const m = discordMessage(
            { type: 'notification', timestamp: new Date().toISOString(), data: { type: 'notification', id: 1, ...data, before: { stock: 1 }, after: { stock: 2 } } },
            { role_id: roleId, roles_json: roles },
          ) as { content: string; embeds: { title: string; description: string; fields: { name: string; value: string }[]; footer: { text: string } }[]; allowed_mentions: { parse: string[]; roles: string[] } };
          expect([...m.content].length).toBeLessThanOrEqual(DISCORD_LIMITS.content);
          const e = m.embeds[0]!;
          expect([...e.title].length).toBeLessThanOrEqual(DISCORD_LIMITS.title);
          expect(e.fields.length).toBeLessThanOrEqual(DISCORD_LIMITS.fields);
          for (const f of e.fields) {
            expect([...f.name].length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldName);
            expect([...f.value].length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldValue);
          }
          const total = [e.title, e.description, e.footer.text, ...e.fields.flatMap((f) => [f.name, f.value])].reduce((n, t) => n + [...t].length, 0);
          expect(total).toBeLessThanOrEqual(DISCORD_LIMITS.embedTotal);
          const mentioned = [...m.content.matchAll(/<@&(\d+)>/g)].map((x) => x[1]);
          expect(mentioned).toEqual(m.allowed_mentions.roles);
          expect(m.allowed_mentions.parse).toEqual([]);
          expect(m.allowed_mentions.roles.length).toBeLessThanOrEqual(DISCORD_LIMITS.roles);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a retired event (issue 25) keeps within the limits too, and says what happened', () => {
    fc.assert(
      fc.property(fc.record({ event: long, platform: long, region: long, message: long, not_found_since: long }), fc.array(fc.bigInt({ min: 1n, max: 10n ** 19n }).map(String), { maxLength: 150 }), (data, roles) => {
        const m = discordMessage({ type: 'target_retired', timestamp: new Date().toISOString(), data: { type: 'target_retired', id: 1, ...data } }, { role_id: null, roles_json: roles }) as {
          content: string;
          embeds: { title: string; description: string; fields: { name: string; value: string }[]; footer: { text: string } }[];
          allowed_mentions: { parse: string[]; roles: string[] };
        };
        expect([...m.content].length).toBeLessThanOrEqual(DISCORD_LIMITS.content);
        const e = m.embeds[0]!;
        expect(e.title).toMatch(/not found/);
        const total = [e.title, e.description, e.footer.text, ...e.fields.flatMap((f) => [f.name, f.value])].reduce((n, t) => n + [...t].length, 0);
        expect(total).toBeLessThanOrEqual(DISCORD_LIMITS.embedTotal);
        for (const f of e.fields) expect([...f.value].length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldValue);
        expect([...m.content.matchAll(/<@&(\d+)>/g)].map((x) => x[1])).toEqual(m.allowed_mentions.roles);
      }),
      { numRuns: 100 },
    );
  });

  it('a platform incident (issue 38), failing or recovered, keeps within the limits and says which', () => {
    fc.assert(
      fc.property(
        fc.record({ event: long, platform: long, region: long, message: long, started_at: long, ended_at: fc.option(long, { nil: null }), state: fc.constantFrom('failing', 'recovered') }),
        fc.array(fc.bigInt({ min: 1n, max: 10n ** 19n }).map(String), { maxLength: 150 }),
        (data, roles) => {
          const m = discordMessage({ type: 'platform_incident', timestamp: new Date().toISOString(), data: { type: 'platform_incident', id: 1, ...data } }, { role_id: null, roles_json: roles }) as {
            content: string;
            embeds: { title: string; description: string; fields: { name: string; value: string }[]; footer: { text: string } }[];
            allowed_mentions: { parse: string[]; roles: string[] };
          };
          expect([...m.content].length).toBeLessThanOrEqual(DISCORD_LIMITS.content);
          const e = m.embeds[0]!;
          expect(e.title).toMatch(data.state === 'failing' ? /^Platform failing: / : /^Platform recovered: /);
          expect([...e.title].length).toBeLessThanOrEqual(DISCORD_LIMITS.title);
          expect(m.content).toMatch(data.state === 'failing' ? /is failing/ : /has recovered/);
          const total = [e.title, e.description, e.footer.text, ...e.fields.flatMap((f) => [f.name, f.value])].reduce((n, t) => n + [...t].length, 0);
          expect(total).toBeLessThanOrEqual(DISCORD_LIMITS.embedTotal);
          expect([...m.content.matchAll(/<@&(\d+)>/g)].map((x) => x[1])).toEqual(m.allowed_mentions.roles);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('reads role ids from role_id and the usual roles_json shapes, ignoring the rest', () => {
    expect(roleIds({ role_id: 5, roles_json: { roles: ['6', 7, 'x', 5] } })).toEqual(['5', '6', '7']);
    expect(roleIds({ role_id: null, roles_json: { role_ids: [8] } })).toEqual(['8']);
    expect(roleIds({ role_id: null, roles_json: [{ id: '9' }, null, '@everyone'] })).toEqual(['9']);
    expect(roleIds({ role_id: null, roles_json: 'nothing' })).toEqual([]);
  });

  // Issue 24: Discord role ids are 17-20 digit snowflakes, past what a JS number holds exactly.
  it('mentions a snowflake role_id exactly, as text, and allows exactly it', () => {
    const body = { type: 'notification' as const, timestamp: new Date().toISOString(), data: { type: 'notification', id: 1, section: 'Floor', change_type: 'stock_increase' } };
    const m = discordMessage(body, { role_id: '112233445566778899', roles_json: null }) as { content: string; allowed_mentions: unknown };
    expect(m.content).toBe('<@&112233445566778899> stock_increase on Floor');
    expect(m.allowed_mentions).toEqual({ parse: [], roles: ['112233445566778899'] });
    // An integer role_id (what the API returns for one sent as an integer) is mentioned as its digits.
    expect(roleIds({ role_id: 9_007_199_254_740_991, roles_json: null })).toEqual(['9007199254740991']);
  });

  it('mentions any 17-20 digit role id from role_id or roles_json digit for digit', () => {
    const snowflake = fc.bigInt({ min: 10n ** 16n, max: 10n ** 20n - 1n }).map(String);
    fc.assert(
      fc.property(snowflake, snowflake, fc.constantFrom('array', 'roles', 'role_ids', 'objects'), (id, other, shape) => {
        const list = shape === 'objects' ? [{ id: other }] : [other];
        const roles_json = shape === 'array' || shape === 'objects' ? list : { [shape]: list };
        const ids = roleIds({ role_id: id, roles_json });
        expect(ids).toEqual(id === other ? [id] : [id, other]);
      }),
    );
  });

  it('never mentions a role id that reached it as an inexact number', () => {
    // 112233445566778899 parsed as a JSON number is 112233445566778900: another role.
    expect(roleIds({ role_id: null, roles_json: [JSON.parse('112233445566778899')] })).toEqual([]);
  });
});

describe('rolesJsonProblem', () => {
  it('refuses a role id given as a number past 2^53 - 1 where role ids are read, and nothing else', () => {
    const big = JSON.parse('112233445566778899') as number;
    for (const v of [[big], { roles: [big] }, { role_ids: [1, big] }, [{ id: big }]]) expect(rolesJsonProblem(v), JSON.stringify(v)).toMatch(/as strings/);
    for (const v of [['112233445566778899'], { roles: [Number.MAX_SAFE_INTEGER] }, { other: [big] }, { roles: { nested: [big] } }, big, [1.5], null]) {
      expect(rolesJsonProblem(v), JSON.stringify(v)).toBeNull();
    }
  });
});
