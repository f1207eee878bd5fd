// Discord role ids as the watchlist carries them, for the mentions of a Discord delivery: the
// item's `role_id`, then the ids found in `roles_json`. Role ids are snowflakes (unsigned 64-bit,
// 17-20 digits), and a JSON number holds an integer exactly only up to 2^53 - 1, so ids travel
// as strings and are never turned into a number here: a digit lost on the way would mention
// another role, or none.

/** A role id sent as a string in `role_id`: a snowflake written out, 17-20 digits, no leading zero. */
export const ROLE_ID_TEXT = /^[1-9][0-9]{16,19}$/;

/** What may be mentioned as `<@&id>`: a positive integer of at most 20 digits, as text. */
const MENTIONABLE = /^[1-9][0-9]{0,19}$/;

/** Discord's bound on `allowed_mentions.roles`. */
export const MAX_MENTIONED_ROLES = 100;

export interface ItemRoles {
  /** As stored (text) or as the API returns it (an integer up to 2^53 - 1, or a 17-20 digit string). */
  role_id: number | string | null;
  roles_json: unknown;
}

/**
 * The values of `roles_json` (opaque in the spec) read as role ids: its elements when it is an
 * array, else those of the array under `roles` or `role_ids` of an object; an element that is an
 * object stands for its `id`. Anything else in roles_json is not looked at.
 */
export function roleIdCandidates(rolesJson: unknown): unknown[] {
  const r = rolesJson;
  const list = Array.isArray(r) ? r : r && typeof r === 'object' ? ((r as Record<string, unknown>).roles ?? (r as Record<string, unknown>).role_ids) : null;
  if (!Array.isArray(list)) return [];
  return list.map((v: unknown) => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>).id : v));
}

/**
 * Why `rolesJson` cannot carry its role ids exactly, or null: a role id given as a JSON number
 * past 2^53 - 1 was already rounded when the body was parsed (112233445566778899 arrives as
 * 112233445566778900), so it would be stored changed and mention no role. Sent as a string, it
 * is kept digit for digit.
 */
export function rolesJsonProblem(rolesJson: unknown): string | null {
  for (const v of roleIdCandidates(rolesJson)) {
    if (typeof v === 'number' && Number.isInteger(v) && v > Number.MAX_SAFE_INTEGER) {
      return `role ids above ${Number.MAX_SAFE_INTEGER} lose digits as JSON numbers; send them as strings (e.g. "112233445566778899")`;
    }
  }
  return null;
}

/** A role id as mention text, or null when `v` is not one (numbers only where they are exact). */
function roleIdText(v: unknown): string | null {
  const s = typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : typeof v === 'string' ? v.trim() : '';
  return MENTIONABLE.test(s) ? s : null;
}

/** Role ids to mention: role_id, then those of roles_json; deduplicated, at most 100. */
export function roleIds(item: ItemRoles): string[] {
  const out: string[] = [];
  for (const v of [item.role_id, ...roleIdCandidates(item.roles_json)]) {
    const id = v === null ? null : roleIdText(v);
    if (id !== null && !out.includes(id)) out.push(id);
  }
  return out.slice(0, MAX_MENTIONED_ROLES);
}
