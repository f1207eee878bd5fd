// The Discord execute-webhook message for a delivery: `content` mentions the item's roles
// (role_id and the ids found in roles_json, read by role-ids.ts), `allowed_mentions` permits
// exactly those roles and nothing else (no @everyone, no users), and one embed gives the event,
// platform, section, before and after (price, stock) and the change type; a retired event
// (`target_retired`) one embed with the event, since when it was not found and what to do; a
// platform incident (`platform_incident`) one embed saying it is failing, or has recovered.
// Discord's length limits are enforced by truncation, so a long section or event name never
// turns a delivery into a 400.
import type { DeliveryBody } from './outbox.ts';
import { MAX_MENTIONED_ROLES, roleIds, type ItemRoles } from './role-ids.ts';

// https://discord.com/developers/docs/resources/message#embed-object-embed-limits
export const DISCORD_LIMITS = { content: 2000, title: 256, description: 4096, fieldName: 256, fieldValue: 1024, fields: 25, embedTotal: 6000, roles: MAX_MENTIONED_ROLES };

function cut(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : chars.slice(0, max - 1).join('') + '…';
}

function side(v: unknown, currency: unknown): string {
  const o = (v ?? {}) as Record<string, unknown>;
  const money = (x: unknown) => (x === null || x === undefined ? 'none' : `${x}${currency ? ` ${String(currency)}` : ''}`);
  return `stock ${o.stock ?? 0}, min price ${money(o.min_price)}, avg price ${money(o.avg_price)}`;
}

export function discordMessage(body: DeliveryBody, item: ItemRoles | null): Record<string, unknown> {
  // Only whole mentions that fit, with room left for the text after them.
  const roles: string[] = [];
  let mentions = '';
  for (const id of item ? roleIds(item) : []) {
    const next = mentions ? `${mentions} <@&${id}>` : `<@&${id}>`;
    if (next.length > DISCORD_LIMITS.content - 200) break;
    roles.push(id);
    mentions = next;
  }
  if (body.type === 'ping') {
    return { content: 'Webhook test: this channel receives the ticket alerts of its watchlist items.', allowed_mentions: { parse: [] } };
  }
  const d = body.data;
  if (body.type === 'target_retired') return retiredMessage(body, mentions, roles);
  if (body.type === 'platform_incident') return incidentMessage(body, mentions, roles);
  const fields: [string, unknown][] = [
    ['Event', d.event],
    ['Platform', d.platform],
    ['Region', d.region],
    ['Section', d.section],
    ['Change', d.change_type],
    ['Before', side(d.before, d.currency)],
    ['After', side(d.after, d.currency)],
  ];
  const embed = {
    title: cut(`Ticket alert: ${String(d.change_type ?? 'change')}`, DISCORD_LIMITS.title),
    description: cut(`${String(d.platform ?? '')} · ${String(d.section ?? '')}`, DISCORD_LIMITS.description),
    timestamp: body.timestamp,
    fields: fields
      .filter(([, v]) => v !== undefined && v !== null && v !== '')
      .slice(0, DISCORD_LIMITS.fields)
      .map(([name, value]) => ({ name: cut(name, DISCORD_LIMITS.fieldName), value: cut(String(value), 200), inline: name !== 'Event' })),
    footer: { text: `notification ${String(d.id)}` },
  };
  // Each field value is cut to 200, the description to 4096: the total stays under 6000 only
  // if the description is bounded by what is left.
  const used = embed.title.length + embed.footer.text.length + embed.fields.reduce((n, f) => n + f.name.length + f.value.length, 0);
  embed.description = cut(embed.description, Math.max(1, Math.min(DISCORD_LIMITS.description, DISCORD_LIMITS.embedTotal - used - 1)));
  const content = cut(mentions ? `${mentions} ${String(d.change_type ?? '')} on ${String(d.section ?? '')}` : `${String(d.change_type ?? '')} on ${String(d.section ?? '')}`, DISCORD_LIMITS.content);
  return { content, embeds: [embed], allowed_mentions: { parse: [], roles } };
}

/** A message about an item's event or platform rather than a change: a title, its sentence, a few fields. */
function notice(body: DeliveryBody, mentions: string, roles: string[], n: { title: string; fields: [string, unknown][]; text: string }): Record<string, unknown> {
  const d = body.data;
  const embed = {
    title: cut(n.title, DISCORD_LIMITS.title),
    description: cut(String(d.message ?? ''), 1000),
    timestamp: body.timestamp,
    fields: n.fields
      .filter(([, v]) => v !== undefined && v !== null && v !== '')
      .map(([name, value]) => ({ name, value: cut(String(value), 200), inline: name !== 'Event' })),
    footer: { text: `notification ${String(d.id)}` },
  };
  return { content: cut(mentions ? `${mentions} ${n.text}` : n.text, DISCORD_LIMITS.content), embeds: [embed], allowed_mentions: { parse: [], roles } };
}

/** A retired event (src/monitors/target-status.ts): no before and after, the reason and what to do. */
function retiredMessage(body: DeliveryBody, mentions: string, roles: string[]): Record<string, unknown> {
  const d = body.data;
  return notice(body, mentions, roles, {
    title: 'Event no longer checked: not found',
    fields: [
      ['Event', d.event],
      ['Platform', d.platform],
      ['Region', d.region],
      ['Not found since', d.not_found_since],
    ],
    text: `event not found on ${String(d.platform ?? '')}: no longer checked`,
  });
}

/** A platform incident (src/monitors/platform-incidents.ts): failing or recovered, since when, what it means. */
function incidentMessage(body: DeliveryBody, mentions: string, roles: string[]): Record<string, unknown> {
  const d = body.data;
  const platform = String(d.platform ?? '');
  const failing = d.state === 'failing';
  return notice(body, mentions, roles, {
    title: failing ? `Platform failing: ${platform}` : `Platform recovered: ${platform}`,
    fields: [
      ['Event', d.event],
      ['Platform', d.platform],
      ['Region', d.region],
      ['Failing since', d.started_at],
      ['Recovered at', d.ended_at],
    ],
    text: failing ? `${platform} is failing: alerts may pause` : `${platform} has recovered`,
  });
}

/** Discord's 429 body carries `retry_after` in seconds (fractional). */
export function discordRetryAfterMs(text: string): number | null {
  try {
    const v = (JSON.parse(text) as { retry_after?: unknown }).retry_after;
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.ceil(v * 1000) : null;
  } catch {
    return null;
  }
}
