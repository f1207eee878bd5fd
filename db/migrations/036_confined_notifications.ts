// Issue 38, least privilege for the scraper: the scrape worker's role no longer writes
// notifications or webhook deliveries itself. It calls monitor_append_notifications(), which
// runs as the tables' owner and
//   - takes the recipient from the item (watchlist_items.client_id), never from the caller, and
//     writes only for an item whose own platform, event and region the payload names (an entry
//     for an item since pruned or moved to another target is skipped);
//   - accepts only the kinds the monitors write, each with its exact set of fields, typed and
//     bounded, and writes the customer-facing text (`message`) itself;
//   - builds each delivery's signed body from the notification it stored, so no caller chooses
//     a delivery's body or its webhook.
// webhook_deliveries_resume() is the service sweep's one write on deliveries: it hands a served
// account's parked deliveries back to the dispatcher (and expires the too-old ones), with no
// column the caller chooses. What a compromised scraper could still do is report false readings
// for the items it polls (the values inside a notification come from the page, as they must);
// docs/operations.md#database-roles says so.
import type { Knex } from 'knex';

/** The log writers' advisory lock (src/notifications/log.ts LOG_WRITER_LOCK): ids become visible in order. */
const LOG_WRITER_LOCK = 7_204_312;

export async function up(knex: Knex): Promise<void> {
  // JSON text as JSON.stringify writes it (no spaces, keys in the value's order): a delivery's
  // body is the exact bytes signed, and it reads as the TypeScript side always wrote it.
  await knex.raw(`
    CREATE FUNCTION json_compact(v jsonb) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT AS $$
    BEGIN
      CASE jsonb_typeof(v)
        WHEN 'object' THEN
          RETURN '{' || coalesce((SELECT string_agg(to_jsonb(e.key)::text || ':' || json_compact(e.value), ',' ORDER BY e.ord)
                                    FROM jsonb_each(v) WITH ORDINALITY AS e(key, value, ord)), '') || '}';
        WHEN 'array' THEN
          RETURN '[' || coalesce((SELECT string_agg(json_compact(a.value), ',' ORDER BY a.ord)
                                    FROM jsonb_array_elements(v) WITH ORDINALITY AS a(value, ord)), '') || ']';
        ELSE
          RETURN v::text;
      END CASE;
    END $$`);

  // A timestamp field: an ISO-8601 string that PostgreSQL reads as one.
  await knex.raw(`
    CREATE FUNCTION monitor_timestamp_field(v jsonb) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
    BEGIN
      IF jsonb_typeof(v) IS DISTINCT FROM 'string' OR v #>> '{}' !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,6}){0,1}Z$' THEN RETURN false; END IF;
      PERFORM (v #>> '{}')::timestamptz;
      RETURN true;
    EXCEPTION WHEN others THEN
      RETURN false;
    END $$`);

  // A section's figures before or after a change: {stock, min_price, avg_price}, numbers or null.
  await knex.raw(`
    CREATE FUNCTION monitor_figures_field(v jsonb) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
    BEGIN
      IF jsonb_typeof(v) IS DISTINCT FROM 'object' THEN RETURN false; END IF;
      RETURN coalesce((SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(v) AS k) = ARRAY['avg_price', 'min_price', 'stock']
         AND jsonb_typeof(v->'stock') = 'number'
         AND jsonb_typeof(v->'min_price') IN ('number', 'null')
         AND jsonb_typeof(v->'avg_price') IN ('number', 'null'), false);
    END $$`);

  await knex.raw(`
    CREATE FUNCTION monitor_append_notifications(entries jsonb) RETURNS SETOF bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    DECLARE
      e jsonb;
      p jsonb;
      k text;
      fields text[];
      item record;
      new_id bigint;
      ids bigint[] := '{}';
    BEGIN
      IF jsonb_typeof(entries) IS DISTINCT FROM 'array' OR jsonb_array_length(entries) > 10000 THEN
        RAISE EXCEPTION 'monitor_append_notifications: entries must be an array of at most 10000' USING ERRCODE = '22023';
      END IF;
      PERFORM pg_advisory_xact_lock(${LOG_WRITER_LOCK});
      FOR e IN SELECT value FROM jsonb_array_elements(entries) LOOP
        k := e->>'kind';
        p := e->'payload';
        fields := CASE k
          WHEN 'notification' THEN ARRAY['after', 'before', 'change_type', 'currency', 'detected_at', 'event', 'item_id', 'platform', 'region', 'section', 'snapshot_id']
          WHEN 'target_retired' THEN ARRAY['event', 'item_id', 'not_found_since', 'platform', 'reason', 'region', 'retired_at']
          WHEN 'platform_incident' THEN ARRAY['ended_at', 'event', 'incident_id', 'item_id', 'platform', 'region', 'started_at', 'state']
        END;
        IF fields IS NULL THEN
          RAISE EXCEPTION 'monitor_append_notifications: kind % is not one the monitors write', k USING ERRCODE = '22023';
        END IF;
        IF jsonb_typeof(p) IS DISTINCT FROM 'object' OR octet_length(p::text) > 4096 THEN
          RAISE EXCEPTION 'monitor_append_notifications: a payload is an object of at most 4096 bytes' USING ERRCODE = '22023';
        END IF;
        IF (SELECT array_agg(x ORDER BY x) FROM jsonb_object_keys(p) AS x) IS DISTINCT FROM fields THEN
          RAISE EXCEPTION 'monitor_append_notifications: a % payload has exactly the fields %, in at most 4096 bytes', k, fields USING ERRCODE = '22023';
        END IF;
        IF jsonb_typeof(e->'dedupe_key') IS DISTINCT FROM 'string' OR coalesce(length(e->>'dedupe_key') > 200, true) THEN
          RAISE EXCEPTION 'monitor_append_notifications: dedupe_key must be a string of at most 200 characters' USING ERRCODE = '22023';
        END IF;
        -- The recipient is the item's owner; the item is named once and the payload is about it.
        IF jsonb_typeof(p->'item_id') IS DISTINCT FROM 'number' OR (p->>'item_id') !~ '^[0-9]{1,18}$' OR e->'item_id' IS DISTINCT FROM p->'item_id' THEN
          RAISE EXCEPTION 'monitor_append_notifications: item_id must be the same integer in the entry and its payload' USING ERRCODE = '22023';
        END IF;
        SELECT i.id, i.client_id, i.website, i.event, i.region INTO item FROM watchlist_items i WHERE i.id = (p->>'item_id')::bigint;
        -- An item pruned, or edited to watch another target, since the poller read its member
        -- row (the membership relay catches up within moments): the change is not about it any
        -- more. Skipped, not refused, so the other items' notifications of the same poll go on.
        CONTINUE WHEN NOT FOUND
          OR p->'platform' IS DISTINCT FROM to_jsonb(item.website) OR p->'event' IS DISTINCT FROM to_jsonb(item.event) OR p->'region' IS DISTINCT FROM to_jsonb(item.region);
        -- An item never changes account: another one named is a forgery or a defect.
        IF e->'account_id' IS DISTINCT FROM to_jsonb(item.client_id) THEN
          RAISE EXCEPTION 'monitor_append_notifications: item % belongs to another account than %', item.id, e->'account_id' USING ERRCODE = '22023';
        END IF;
        IF k = 'notification' THEN
          IF coalesce(NOT ((p->>'change_type') = ANY (ARRAY['stock_increase', 'price_decrease', 'price_increase']))
             OR jsonb_typeof(p->'section') <> 'string' OR length(p->>'section') > 200
             OR jsonb_typeof(p->'currency') NOT IN ('string', 'null') OR coalesce(length(p->>'currency'), 0) > 8
             OR NOT monitor_figures_field(p->'before') OR NOT monitor_figures_field(p->'after')
             OR jsonb_typeof(p->'snapshot_id') <> 'number' OR NOT monitor_timestamp_field(p->'detected_at'), true) THEN
            RAISE EXCEPTION 'monitor_append_notifications: a notification payload has a field out of its type or bounds' USING ERRCODE = '22023';
          END IF;
        ELSIF k = 'target_retired' THEN
          IF coalesce((p->>'reason') <> 'not_found' OR NOT monitor_timestamp_field(p->'not_found_since') OR NOT monitor_timestamp_field(p->'retired_at'), true) THEN
            RAISE EXCEPTION 'monitor_append_notifications: a target_retired payload has a field out of its type or bounds' USING ERRCODE = '22023';
          END IF;
          p := p || jsonb_build_object('message', format(
            'The platform has answered "not found" for this event since %s, so it is no longer checked. Delete the item, or update it (PATCH) to check the event again.',
            p->>'not_found_since'));
        ELSE
          IF coalesce(NOT ((p->>'state') = ANY (ARRAY['failing', 'recovered'])) OR jsonb_typeof(p->'incident_id') <> 'number'
             OR NOT monitor_timestamp_field(p->'started_at')
             OR ((p->>'state') = 'failing') <> (jsonb_typeof(p->'ended_at') = 'null')
             OR ((p->>'state') = 'recovered' AND NOT monitor_timestamp_field(p->'ended_at'))
             OR NOT EXISTS (SELECT 1 FROM monitor_platform_incidents x WHERE x.id::text = p->>'incident_id' AND x.platform = item.website), true) THEN
            RAISE EXCEPTION 'monitor_append_notifications: a platform_incident payload has a field out of its type or bounds, or names no incident of its platform' USING ERRCODE = '22023';
          END IF;
          p := p || jsonb_build_object('message', CASE p->>'state'
            WHEN 'failing' THEN format('%s is failing for most of the events watched on it (not found or blocked) since %s. Its events go on being checked and none is retired while this lasts; you will be told when it recovers.',
                                       item.website, p->>'started_at')
            ELSE format('%s has recovered (failing from %s to %s). Its events are checked as usual.', item.website, p->>'started_at', p->>'ended_at')
          END);
        END IF;
        INSERT INTO notifications (account_id, item_id, kind, dedupe_key, payload)
        VALUES (item.client_id, item.id, k, e->>'dedupe_key', p)
        ON CONFLICT (dedupe_key) DO NOTHING
        RETURNING id INTO new_id;
        IF new_id IS NOT NULL THEN ids := ids || new_id; END IF;
      END LOOP;
      IF cardinality(ids) = 0 THEN RETURN; END IF;
      PERFORM pg_notify('notifications', (SELECT max(x) FROM unnest(ids) AS x)::text);
      -- Standard Webhooks' {type, timestamp, data}, where data is exactly the stream's message
      -- for the row ({type, id, ...payload}, src/notifications/log.ts streamMessage).
      INSERT INTO webhook_deliveries (webhook_id, account_id, notification_id, type, message_id, body)
      SELECT w.id, n.account_id, n.id, n.kind,
             'msg_' || translate(rtrim(encode(uuid_send(gen_random_uuid()), 'base64'), '='), '+/', '-_'),
             '{"type":' || to_jsonb(n.kind)::text
               || ',"timestamp":' || to_jsonb(to_char(n.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text
               || ',"data":{"type":' || to_jsonb(n.kind)::text || ',"id":' || n.id || ',' || substr(json_compact(n.payload), 2) || '}'
        FROM notifications n
        JOIN watchlist_items i ON i.id = n.item_id
        JOIN webhooks w ON w.id = i.webhook_setting_id AND w.account_id = n.account_id
       WHERE n.id = ANY(ids) AND w.active AND NOT w.deleted AND NOT i.deleted
       ORDER BY n.id;
      IF FOUND THEN PERFORM pg_notify('webhook_deliveries', ''); END IF;
      RETURN QUERY SELECT x FROM unnest(ids) AS x ORDER BY x;
    END $$`);

  // Parked deliveries older than the retry schedule's span fail as expired: those of `accounts`
  // (or of any account when null), at most `max_rows` (no bound when null). The conditions are
  // read again on each row as it is updated, so a delivery handed back at the same moment is
  // never failed after it. Runs as its caller (the gateway's housekeeping, or the resume below).
  await knex.raw(`
    CREATE FUNCTION webhook_deliveries_expire_parked(accounts bigint[], expire_after_ms bigint, max_rows integer) RETURNS integer
    LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
    DECLARE n integer;
    BEGIN
      UPDATE webhook_deliveries d
         SET state = 'failed', failure_reason = 'expired: its account was not served for longer than the retry schedule', parked_at = NULL, updated_at = statement_timestamp()
       WHERE d.id IN (SELECT x.id FROM webhook_deliveries x
                       WHERE x.parked_at IS NOT NULL AND x.state = 'pending' AND x.created_at < now() - make_interval(secs => expire_after_ms / 1000.0)
                         AND (accounts IS NULL OR x.account_id = ANY(accounts))
                       LIMIT max_rows)
         AND d.parked_at IS NOT NULL AND d.state = 'pending' AND d.created_at < now() - make_interval(secs => expire_after_ms / 1000.0);
      GET DIAGNOSTICS n = ROW_COUNT;
      RETURN n;
    END $$`);

  await knex.raw(`
    CREATE FUNCTION webhook_deliveries_resume(accounts bigint[], expire_after_ms bigint) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    DECLARE n integer;
    BEGIN
      PERFORM webhook_deliveries_expire_parked(accounts, expire_after_ms, NULL);
      UPDATE webhook_deliveries SET parked_at = NULL, dispatched = false, claimed_until = NULL, updated_at = statement_timestamp()
       WHERE account_id = ANY(accounts) AND parked_at IS NOT NULL AND state = 'pending';
      GET DIAGNOSTICS n = ROW_COUNT;
      IF n > 0 THEN PERFORM pg_notify('webhook_deliveries', ''); END IF;
      RETURN n;
    END $$`);

  // A function is anyone's to call unless revoked: these are the owner's, and the scrape
  // worker's role is granted what db/scraper-grants.ts lists.
  for (const fn of [
    'monitor_append_notifications(jsonb)',
    'webhook_deliveries_expire_parked(bigint[], bigint, integer)',
    'webhook_deliveries_resume(bigint[], bigint)',
  ]) {
    await knex.raw(`REVOKE ALL ON FUNCTION ${fn} FROM PUBLIC`);
  }
}
