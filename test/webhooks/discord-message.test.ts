// Discord's limits hold for any notification and any roles (issue 15): content at most 2000
// characters with only whole mentions, which allowed_mentions lists exactly; at most 25 fields,
// each name 256 and value 1024; title 256; the embed 6000 in all.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DISCORD_LIMITS, discordMessage, roleIds } from '../../src/webhooks/discord-message.ts';

const long = fc.string({ maxLength: 8000 });

describe('discordMessage', () => {
  it('keeps within Discord\'s limits and mentions exactly the allowed roles', () => {
    fc.assert(
      fc.property(
        fc.record({ event: long, section: long, platform: long, change_type: long, currency: fc.string({ maxLength: 50 }) }),
        fc.option(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })),
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

  it('reads role ids from role_id and the usual roles_json shapes, ignoring the rest', () => {
    expect(roleIds({ role_id: 5, roles_json: { roles: ['6', 7, 'x', 5] } })).toEqual(['5', '6', '7']);
    expect(roleIds({ role_id: null, roles_json: { role_ids: [8] } })).toEqual(['8']);
    expect(roleIds({ role_id: null, roles_json: [{ id: '9' }, null, '@everyone'] })).toEqual(['9']);
    expect(roleIds({ role_id: null, roles_json: 'nothing' })).toEqual([]);
  });
});
