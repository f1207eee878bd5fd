// The webhook resource (issue 15): what a client sends on create and PATCH and what it gets
// back. The URL's own rules (https, public addresses, Discord's form) depend on the deployment
// (WEBHOOK_ALLOW_PRIVATE_NETWORKS) and are checked by src/webhooks/url-rules.ts after parsing.
import { z } from 'zod';
import { URL_MAX_CHARS, WEBHOOK_KINDS } from '../../webhooks/url-rules.ts';
import { isStorableText } from '../watchlist/schema.ts';

const text = () => z.string().refine(isStorableText, 'must not contain NUL characters or unpaired surrogates');

const url = text()
  .min(1)
  .max(URL_MAX_CHARS)
  .meta({
    description:
      'Where deliveries are POSTed: https, and every address the host resolves to must be public (checked at create, PATCH and each delivery). ' +
      'A `discord` webhook takes Discord\'s execute-webhook URL (https://discord.com/api/webhooks/{id}/{token}).',
  });
const kind = z.enum(WEBHOOK_KINDS).meta({ description: '`standard`: Standard Webhooks 1.0, signed; `discord`: Discord\'s execute-webhook JSON' });
const description = text().max(500).nullable().meta({ description: 'Free text, at most 500 characters' });
const active = z.boolean().meta({ description: 'Whether notifications are delivered; setting it true also clears disabled_reason' });

export const createWebhookSchema = z
  .strictObject({ url, kind, description: description.default(null), active: active.default(true) })
  .meta({ id: 'WebhookCreate' });
export const updateWebhookSchema = z.strictObject({ url, description, active }).partial().meta({ id: 'WebhookUpdate' });

export type CreateWebhook = z.output<typeof createWebhookSchema>;
export type UpdateWebhook = z.output<typeof updateWebhookSchema>;

/** Fields only the server sets: refused in a body with a message saying so. */
export const SERVER_FIELDS = ['id', 'secret', 'disabled_reason', 'created_at', 'updated_at'] as const;

const timestamp = z.iso.datetime();

export const webhookSchema = z
  .object({
    id: z.number().int(),
    url: z.string(),
    kind,
    description: z.string().nullable(),
    active: z.boolean(),
    disabled_reason: z.string().nullable().meta({ description: 'Why the service turned the webhook off (active is then false); null otherwise' }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Webhook' });

const secret = z
  .string()
  .meta({ description: 'Standard Webhooks signing secret, `whsec_` + base64; shown only on create and rotate-secret' });

export const createdWebhookSchema = webhookSchema
  .extend({ secret: secret.nullable().meta({ description: 'The signing secret (shown only here and by rotate-secret); null for discord, whose URL is the secret' }) })
  .meta({ id: 'WebhookCreated' });
export const rotatedSecretSchema = z.object({ secret }).meta({ id: 'WebhookSecret' });

export type Webhook = z.output<typeof webhookSchema>;

export const webhookIdParams = z.object({ id: z.string().regex(/^[1-9][0-9]{0,15}$/).meta({ description: 'Webhook id' }) });
