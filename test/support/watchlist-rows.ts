// A watchlist item written straight to its table, for tests below the API (the monitors' and the
// database functions'): the database names a notification's recipient from this row
// (monitor_append_notifications, db/migrations/036), so a monitor member needs its item.
import type { Db } from '../../db/connection.ts';

export interface ItemRow {
  id: number;
  accountId: number;
  website: string;
  event: string;
  region: string;
}

/** Inserts an item of `accountId` on the target with the columns the API always writes, every ticket type on; returns it. */
export async function insertWatchlistItem(db: Db, item: Omit<ItemRow, 'id'> & { webhookId?: number | null; /** Soft-deleted at this time; live when absent. */ deletedAt?: Date | null }): Promise<ItemRow> {
  const now = new Date();
  const [row] = await db('watchlist_items')
    .insert({
      client_id: item.accountId,
      website: item.website,
      event: item.event,
      region: item.region,
      seat_quantity: 1,
      priority: 1,
      standard_tickets: true,
      resale_tickets: true,
      general_admission_tickets: true,
      platinum_tickets: true,
      no_restricted_view: false,
      no_accessibility: false,
      no_presale: false,
      auto_add_to_watchlist: false,
      task_active: true,
      webhook_setting_id: item.webhookId ?? null,
      created_at: now,
      updated_at: now,
      deleted: item.deletedAt != null,
      deleted_at: item.deletedAt ?? null,
    })
    .returning('id');
  return { id: Number(row.id), accountId: item.accountId, website: item.website, event: item.event, region: item.region };
}
