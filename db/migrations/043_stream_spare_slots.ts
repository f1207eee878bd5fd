// Issue 40: reconnect storms. An upgrade decided after an await completes outside uWS's own
// handler, where this uWS build can only send its 101 uncorked (src/stream/upgrade-anchor.ts):
// ~22 writes per upgrade, and 12,000 connects took 2.2-2.4x as long as `ws` without caps. An
// upgrade decided inside the handler is corked by uWS itself, but the handler cannot wait for
// the database. So while a key's upgrades come in a burst, its node takes slots ahead ("spare"
// slots) in the batch that admits one of them, and the next upgrades of that key on that node
// are admitted synchronously against them (src/stream/connection-slots.ts says when and how many).
//
// A spare slot is a stream_connections row like any other, counted against the key's and the
// account's caps by every node, so the caps stay exact: a node admits only against rows it holds.
// It also reserves its upgrade's hit in the key's rate-limit window (hits are counted when the
// spare is taken, and given back when it goes unused), so the limit stays exact too; spares take
// at most half the hits left in the window, so near its limit the key's other requests keep the
// rest while a burst holds them.
//
// A spare another node holds could make an upgrade be refused while fewer connections are open
// than the cap: when a cap is full and spare rows are among those counted, the refusal says
// `wait`, and the node asks again shortly rather than refusing; spares are used or given back within
// a second (connection-slots.ts). The flag is cleared once the node has used the slot.
//
// This is stream_admit (migration 037) with two more arguments: p_counted (an upgrade asked again
// after a `wait`, its hit counted already) and p_spares (slots to take ahead for the upgrade's key
// once it is admitted), and three more columns: wait, spares (their ids) and spare_hit (the first
// one's hit in the window). 037's signature stays for nodes of the previous release; they count spare
// rows as connections, and refuse rather than wait: never more than the cap.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE stream_connections ADD COLUMN spare boolean NOT NULL DEFAULT false');
  await knex.raw(`
CREATE FUNCTION stream_admit(
  p_node text, p_ids uuid[], p_subjects text[], p_windows timestamptz[], p_rate_limits integer[],
  p_want_slot boolean[], p_keys text[], p_accounts bigint[], p_key_caps integer[], p_account_caps integer[],
  p_stale_seconds double precision, p_counted boolean[], p_spares integer[])
RETURNS TABLE (ord integer, hits integer, scope text, cap integer, open integer, wait boolean, spares uuid[], spare_hit integer)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  n integer := coalesce(cardinality(p_ids), 0);
  counted text[];
  counted_subjects text[];
  counted_windows timestamptz[];
  counted_after integer[];
  counted_added integer[];
  hit integer[] := array_fill(0, ARRAY[n]);
  slot boolean[] := array_fill(false, ARRAY[n]);
  key_names text[];
  key_open integer[];
  key_spare integer[];
  account_ids bigint[];
  account_open integer[];
  account_spare integer[];
  out_scope text[] := array_fill(NULL::text, ARRAY[n]);
  out_cap integer[] := array_fill(NULL::integer, ARRAY[n]);
  out_open integer[] := array_fill(NULL::integer, ARRAY[n]);
  out_wait boolean[] := array_fill(false, ARRAY[n]);
  out_spare_hit integer[] := array_fill(NULL::integer, ARRAY[n]);
  spare_lists text[] := array_fill(NULL::text, ARRAY[n]);
  seen integer[];
  reserved integer[];
  admitted integer[] := '{}';
  spare_ids uuid[] := '{}';
  spare_of integer[] := '{}';
  s integer;
  k integer;
  a integer;
  take integer;
  ids uuid[];
BEGIN
  IF n = 0 THEN RETURN; END IF;
  -- 1. Rate windows, one row per (subject, window), locked in sorted order; an upgrade asked
  -- again after a wait was counted the first time.
  WITH added AS (
    SELECT u.subject, u.window_start, count(*)::integer AS n
      FROM unnest(p_subjects, p_windows, p_counted) AS u(subject, window_start, again)
     WHERE NOT u.again
     GROUP BY 1, 2 ORDER BY 1, 2),
  upserted AS (
    INSERT INTO rate_limit_windows AS w (subject, window_start, hits)
    SELECT d.subject, d.window_start, d.n FROM added d ORDER BY d.subject, d.window_start
    ON CONFLICT (subject, window_start) DO UPDATE SET hits = w.hits + EXCLUDED.hits
    RETURNING w.subject, w.window_start, w.hits)
  SELECT coalesce(array_agg(x.subject || '|' || x.window_start::text), '{}'), coalesce(array_agg(x.subject), '{}'),
         coalesce(array_agg(x.window_start), '{}'), coalesce(array_agg(x.hits), '{}'), coalesce(array_agg(d.n), '{}')
    INTO counted, counted_subjects, counted_windows, counted_after, counted_added
    FROM upserted x JOIN added d ON d.subject = x.subject AND d.window_start = x.window_start;
  seen := array_fill(0, ARRAY[cardinality(counted)]);
  reserved := array_fill(0, ARRAY[cardinality(counted)]);
  FOR i IN 1 .. n LOOP
    IF p_counted[i] THEN
      slot[i] := p_want_slot[i];
      CONTINUE;
    END IF;
    s := array_position(counted, p_subjects[i] || '|' || p_windows[i]::text);
    seen[s] := seen[s] + 1;
    hit[i] := counted_after[s] - counted_added[s] + seen[s];
    slot[i] := hit[i] <= p_rate_limits[i] AND p_want_slot[i];
  END LOOP;

  -- 2. Slots, for the upgrades within their limit that ask for one.
  IF true = ANY(slot) THEN
    -- The ORDER BY keeps the subquery from being flattened, so the locks are taken in its order.
    PERFORM pg_advisory_xact_lock(hashtext('stream-connections'), hashtext(l.a::text))
       FROM (SELECT DISTINCT u.a FROM unnest(p_accounts, slot) AS u(a, wanted) WHERE u.wanted ORDER BY u.a) l;
    SELECT coalesce(array_agg(c.account_id::text || '|' || c.key_id), '{}'), coalesce(array_agg(c.n), '{}'), coalesce(array_agg(c.spare), '{}')
      INTO key_names, key_open, key_spare
      FROM (SELECT sc.account_id, sc.key_id, count(*)::integer AS n, count(*) FILTER (WHERE sc.spare)::integer AS spare
              FROM stream_connections sc JOIN stream_nodes sn ON sn.node_id = sc.node_id
             WHERE sc.account_id = ANY(p_accounts) AND sn.seen_at > now() - make_interval(secs => p_stale_seconds)
             GROUP BY 1, 2) c;
    SELECT coalesce(array_agg(t.account_id), '{}'), coalesce(array_agg(t.n), '{}'), coalesce(array_agg(t.spare), '{}')
      INTO account_ids, account_open, account_spare
      FROM (SELECT split_part(u.name, '|', 1)::bigint AS account_id, sum(u.n)::integer AS n, sum(u.spare)::integer AS spare
              FROM unnest(key_names, key_open, key_spare) AS u(name, n, spare) GROUP BY 1) t;
    FOR i IN 1 .. n LOOP
      CONTINUE WHEN NOT slot[i];
      k := array_position(key_names, p_accounts[i]::text || '|' || p_keys[i]);
      IF k IS NULL THEN
        key_names := key_names || (p_accounts[i]::text || '|' || p_keys[i]);
        key_open := key_open || 0;
        key_spare := key_spare || 0;
        k := cardinality(key_names);
      END IF;
      a := array_position(account_ids, p_accounts[i]);
      IF a IS NULL THEN
        account_ids := account_ids || p_accounts[i];
        account_open := account_open || 0;
        account_spare := account_spare || 0;
        a := cardinality(account_ids);
      END IF;
      IF key_open[k] >= p_key_caps[i] THEN
        out_scope[i] := 'key'; out_cap[i] := p_key_caps[i]; out_open[i] := key_open[k]; out_wait[i] := key_spare[k] > 0;
      ELSIF account_open[a] >= p_account_caps[i] THEN
        out_scope[i] := 'account'; out_cap[i] := p_account_caps[i]; out_open[i] := account_open[a]; out_wait[i] := account_spare[a] > 0;
      ELSE
        key_open[k] := key_open[k] + 1;
        account_open[a] := account_open[a] + 1;
        admitted := admitted || i;
        -- Slots ahead, after the upgrade's own: within both caps, and at most half the hits left
        -- in the key's window (each reserves its hit now: near the limit, the key's other requests
        -- keep the rest). Not for an upgrade asked again: its window's row is not locked.
        IF NOT p_counted[i] AND p_spares[i] > 0 THEN
          s := array_position(counted, p_subjects[i] || '|' || p_windows[i]::text);
          take := least(p_spares[i], p_key_caps[i] - key_open[k], p_account_caps[i] - account_open[a],
                        (p_rate_limits[i] - (counted_after[s] + reserved[s])) / 2);
          IF take > 0 THEN
            SELECT array_agg(gen_random_uuid()) INTO ids FROM generate_series(1, take);
            spare_lists[i] := array_to_string(ids, ',');
            out_spare_hit[i] := counted_after[s] + reserved[s] + 1;
            reserved[s] := reserved[s] + take;
            key_open[k] := key_open[k] + take;
            account_open[a] := account_open[a] + take;
            key_spare[k] := key_spare[k] + take;
            account_spare[a] := account_spare[a] + take;
            spare_ids := spare_ids || ids;
            spare_of := spare_of || array_fill(i, ARRAY[take]);
          END IF;
        END IF;
      END IF;
    END LOOP;
    INSERT INTO stream_connections (id, node_id, key_id, account_id)
    SELECT p_ids[j], p_node, p_keys[j], p_accounts[j] FROM unnest(admitted) AS j;
    INSERT INTO stream_connections (id, node_id, key_id, account_id, spare)
    SELECT u.id, p_node, p_keys[u.i], p_accounts[u.i], true FROM unnest(spare_ids, spare_of) AS u(id, i);
    -- The spares' hits, on the rows locked above (in step 1).
    UPDATE rate_limit_windows w SET hits = w.hits + r.n
      FROM unnest(counted_subjects, counted_windows, reserved) AS r(subject, window_start, n)
     WHERE r.n > 0 AND w.subject = r.subject AND w.window_start = r.window_start;
  END IF;

  RETURN QUERY SELECT u.i::integer, u.h, u.s, u.c, u.o, u.w, string_to_array(u.l, ',')::uuid[], u.f
    FROM unnest(hit, out_scope, out_cap, out_open, out_wait, spare_lists, out_spare_hit) WITH ORDINALITY AS u(h, s, c, o, w, l, f, i);
END
$fn$`);
  await knex.raw(`REVOKE ALL ON FUNCTION stream_admit(text, uuid[], text[], timestamptz[], integer[], boolean[], text[], bigint[], integer[], integer[], double precision, boolean[], integer[]) FROM PUBLIC`);
}
