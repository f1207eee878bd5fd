// Standard Webhooks signing secrets: `whsec_` + base64 of random bytes, and which of a
// webhook's secrets sign right now (after a rotation, the old one for 24 hours as well, so a
// receiver can switch over without losing a message).
import { randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
/** Standard Webhooks asks for 24 to 64 bytes. */
const SECRET_BYTES = 32;
export const ROTATION_OVERLAP_HOURS = 24;

export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}
