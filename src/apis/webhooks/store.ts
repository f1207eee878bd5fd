// Webhook persistence, scoped to the account. URLs and signing secrets are sealed before they
// reach the database and opened only to answer the owner (URL) or to sign (secret). Deleting
// goes through the watchlist store so the items naming the webhook are cleared in the same
// transaction (docs/webhooks.md).
import type { Knex } from 'knex';
import type { Db } from '../../../db/connection.ts';
import type { SecretBox } from '../../webhooks/secret-box.ts';
import { newSigningSecret, ROTATION_OVERLAP_HOURS } from '../../webhooks/signing-secret.ts';
import { WatchlistStore } from '../watchlist/store.ts';
import type { CreateWebhook, UpdateWebhook, Webhook } from './schema.ts';

/** Most live webhooks one account may hold. */
export const WEBHOOKS_MAX_PER_ACCOUNT = 50;
const WRITE_TIME = 'statement_timestamp()';

type Row = Record<string, unknown>;

export class TooManyWebhooksError extends Error {}

export class WebhookStore {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  private render(r: Row): Webhook {
    const accountId = Number(r.account_id);
    return {
      id: Number(r.id),
      url: this.box.open(r.url_sealed as string, accountId),
      kind: r.kind as Webhook['kind'],
      description: r.description as string | null,
      active: r.active as boolean,
      disabled_reason: r.disabled_reason as string | null,
      created_at: (r.created_at as Date).toISOString(),
      updated_at: (r.updated_at as Date).toISOString(),
    };
  }

  private live(q: Db | Knex.Transaction, accountId: number, id: number) {
    return q('webhooks').where({ id: String(id), account_id: accountId, deleted: false });
  }

  async list(accountId: number): Promise<Webhook[]> {
    const rows = await this.db('webhooks').where({ account_id: accountId, deleted: false }).orderBy('id');
    return rows.map((r: Row) => this.render(r));
  }

  async get(accountId: number, id: number): Promise<Webhook | null> {
    const row = await this.live(this.db, accountId, id).first();
    return row ? this.render(row) : null;
  }

  async create(accountId: number, fields: CreateWebhook): Promise<{ webhook: Webhook; secret: string | null }> {
    return this.db.transaction(async (trx) => {
      // The account row serialises creates of one account, so the count below cannot be raced past.
      await trx('accounts').where({ id: accountId }).forUpdate().first('id');
      const live = await trx('webhooks').where({ account_id: accountId, deleted: false }).count('* as n').first();
      if (Number(live?.n) >= WEBHOOKS_MAX_PER_ACCOUNT) throw new TooManyWebhooksError(`an account may hold at most ${WEBHOOKS_MAX_PER_ACCOUNT} webhooks`);
      const secret = fields.kind === 'standard' ? newSigningSecret() : null;
      const [row] = await trx('webhooks')
        .insert({
          account_id: accountId,
          kind: fields.kind,
          url_sealed: this.box.seal(fields.url, accountId),
          description: fields.description,
          active: fields.active,
          secret_sealed: secret === null ? null : this.box.seal(secret, accountId),
          created_at: trx.raw(WRITE_TIME),
          updated_at: trx.raw(WRITE_TIME),
        })
        .returning('*');
      return { webhook: this.render(row), secret };
    });
  }

  /** Applies a partial update; null when the account has no such webhook. */
  async update(accountId: number, id: number, patch: UpdateWebhook): Promise<Webhook | null> {
    if (Object.keys(patch).length === 0) return this.get(accountId, id);
    const columns: Row = { updated_at: this.db.raw(WRITE_TIME) };
    if (patch.url !== undefined) columns.url_sealed = this.box.seal(patch.url, accountId);
    if (patch.description !== undefined) columns.description = patch.description;
    if (patch.active !== undefined) columns.active = patch.active;
    // Turning a webhook back on is how its owner acknowledges why it was turned off.
    if (patch.active === true) {
      columns.disabled_reason = null;
      // A fresh start: the 5-day clock counts from the next failure.
      columns.failing_since = null;
    }
    const [row] = await this.live(this.db, accountId, id).update(columns).returning('*');
    return row ? this.render(row) : null;
  }

  /**
   * A new signing secret; the one it replaces keeps signing for ROTATION_OVERLAP_HOURS (a secret
   * older than that is dropped). Null: no such webhook; 'no_secret': a discord webhook.
   */
  async rotateSecret(accountId: number, id: number): Promise<string | null | 'no_secret'> {
    return this.db.transaction(async (trx) => {
      const row = await this.live(trx, accountId, id).forUpdate().first('kind', 'secret_sealed');
      if (!row) return null;
      if (row.kind !== 'standard') return 'no_secret';
      const secret = newSigningSecret();
      await this.live(trx, accountId, id).update({
        secret_sealed: this.box.seal(secret, accountId),
        previous_secret_sealed: row.secret_sealed,
        previous_secret_expires_at: trx.raw(`${WRITE_TIME} + interval '${ROTATION_OVERLAP_HOURS} hours'`),
        updated_at: trx.raw(WRITE_TIME),
      });
      return secret;
    });
  }

  /** Soft-deletes the webhook and clears webhook_setting_id on the items naming it. */
  async delete(accountId: number, id: number): Promise<boolean> {
    return new WatchlistStore(this.db).detachWebhook(accountId, id, async (trx) => {
      const n = await this.live(trx, accountId, id).update({ deleted: true, active: false, deleted_at: trx.raw(WRITE_TIME), updated_at: trx.raw(WRITE_TIME) });
      return n > 0;
    });
  }
}
