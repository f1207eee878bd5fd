// Issue 40: a batch of stream upgrades is admitted in one round trip. stream_admit() counts each
// upgrade in its key's rate-limit window (an upgrade is one request, spec 5.6) and takes the
// connection slots of those within their limit: what the node sent as a gateway_admit group and
// then five statements (BEGIN, the accounts' locks, the count, the insert, COMMIT). In a
// reconnect storm each of those round trips waited about a turn of the node's busy event loop
// (6 ms measured), and gateway_admit's per-request plpgsql call cost PostgreSQL 70 µs an
// upgrade on 2 cores that the clients and the node already fill. Called alone, it is one
// transaction.
//
// Rate windows: one upsert per (subject, window) of the batch, in subject order, adding that
// subject's upgrades at once; each upgrade gets its own hit number, in the order given, from the
// total the upsert returns. Allowed exactly when that number is within the limit, as gateway_admit.
//
// Slots: each statement of a VOLATILE plpgsql function takes its own snapshot under READ
// COMMITTED, so the count, a statement after the accounts' locks, sees every slot committed
// before they were granted. The locks are the keys and the ascending order the node used before,
// so nodes of the previous release still exclude these. Every stream_admit takes its row locks
// (subjects, sorted) before its advisory locks (accounts, sorted): two batches cannot deadlock.
// A gateway's admission group can (its rows in arrival order): PostgreSQL aborts one and it is
// sent again. Upgrades are decided in the order given against running counts: the key's cap
// first, then the account's; an upgrade over its rate limit or not asking for a slot takes none.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
CREATE FUNCTION stream_admit(
  p_node text, p_ids uuid[], p_subjects text[], p_windows timestamptz[], p_rate_limits integer[],
  p_want_slot boolean[], p_keys text[], p_accounts bigint[], p_key_caps integer[], p_account_caps integer[],
  p_stale_seconds double precision)
RETURNS TABLE (ord integer, hits integer, scope text, cap integer, open integer)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  n integer := coalesce(cardinality(p_ids), 0);
  counted text[];
  counted_after integer[];
  counted_added integer[];
  hit integer[] := array_fill(0, ARRAY[n]);
  slot boolean[] := array_fill(false, ARRAY[n]);
  key_names text[];
  key_open integer[];
  account_ids bigint[];
  account_open integer[];
  out_scope text[] := array_fill(NULL::text, ARRAY[n]);
  out_cap integer[] := array_fill(NULL::integer, ARRAY[n]);
  out_open integer[] := array_fill(NULL::integer, ARRAY[n]);
  seen integer[];
  admitted integer[] := '{}';
  s integer;
  k integer;
  a integer;
BEGIN
  IF n = 0 THEN RETURN; END IF;
  -- 1. Rate windows, one row per (subject, window), locked in sorted order.
  WITH added AS (
    SELECT u.subject, u.window_start, count(*)::integer AS n
      FROM unnest(p_subjects, p_windows) AS u(subject, window_start)
     GROUP BY 1, 2 ORDER BY 1, 2),
  upserted AS (
    INSERT INTO rate_limit_windows AS w (subject, window_start, hits)
    SELECT d.subject, d.window_start, d.n FROM added d ORDER BY d.subject, d.window_start
    ON CONFLICT (subject, window_start) DO UPDATE SET hits = w.hits + EXCLUDED.hits
    RETURNING w.subject, w.window_start, w.hits)
  SELECT array_agg(x.subject || '|' || x.window_start::text), array_agg(x.hits), array_agg(d.n)
    INTO counted, counted_after, counted_added
    FROM upserted x JOIN added d ON d.subject = x.subject AND d.window_start = x.window_start;
  seen := array_fill(0, ARRAY[cardinality(counted)]);
  FOR i IN 1 .. n LOOP
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
    SELECT coalesce(array_agg(c.account_id::text || '|' || c.key_id), '{}'), coalesce(array_agg(c.n), '{}')
      INTO key_names, key_open
      FROM (SELECT sc.account_id, sc.key_id, count(*)::integer AS n
              FROM stream_connections sc JOIN stream_nodes sn ON sn.node_id = sc.node_id
             WHERE sc.account_id = ANY(p_accounts) AND sn.seen_at > now() - make_interval(secs => p_stale_seconds)
             GROUP BY 1, 2) c;
    SELECT coalesce(array_agg(t.account_id), '{}'), coalesce(array_agg(t.n), '{}')
      INTO account_ids, account_open
      FROM (SELECT split_part(u.name, '|', 1)::bigint AS account_id, sum(u.n)::integer AS n
              FROM unnest(key_names, key_open) AS u(name, n) GROUP BY 1) t;
    FOR i IN 1 .. n LOOP
      CONTINUE WHEN NOT slot[i];
      k := array_position(key_names, p_accounts[i]::text || '|' || p_keys[i]);
      IF k IS NULL THEN
        key_names := key_names || (p_accounts[i]::text || '|' || p_keys[i]);
        key_open := key_open || 0;
        k := cardinality(key_names);
      END IF;
      a := array_position(account_ids, p_accounts[i]);
      IF a IS NULL THEN
        account_ids := account_ids || p_accounts[i];
        account_open := account_open || 0;
        a := cardinality(account_ids);
      END IF;
      IF key_open[k] >= p_key_caps[i] THEN
        out_scope[i] := 'key'; out_cap[i] := p_key_caps[i]; out_open[i] := key_open[k];
      ELSIF account_open[a] >= p_account_caps[i] THEN
        out_scope[i] := 'account'; out_cap[i] := p_account_caps[i]; out_open[i] := account_open[a];
      ELSE
        key_open[k] := key_open[k] + 1;
        account_open[a] := account_open[a] + 1;
        admitted := admitted || i;
      END IF;
    END LOOP;
    INSERT INTO stream_connections (id, node_id, key_id, account_id)
    SELECT p_ids[j], p_node, p_keys[j], p_accounts[j] FROM unnest(admitted) AS j;
  END IF;

  RETURN QUERY SELECT u.i::integer, u.h, u.s, u.c, u.o
    FROM unnest(hit, out_scope, out_cap, out_open) WITH ORDINALITY AS u(h, s, c, o, i);
END
$fn$`);
  // Anyone's to call unless revoked (036's rule): the service's own role owns it; the scrape
  // worker's role has no business with the stream.
  await knex.raw('REVOKE ALL ON FUNCTION stream_admit(text, uuid[], text[], timestamptz[], integer[], boolean[], text[], bigint[], integer[], integer[], double precision) FROM PUBLIC');
}
