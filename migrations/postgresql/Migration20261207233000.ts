import { Migration } from '@mikro-orm/migrations';

/**
 * NOTE: hand-written (the snapshot does not see functions or triggers). The database places every
 * inserted audit event in the hash chain itself (docs/audit.md, 'Events the service did not
 * append'): a row that comes without a chain_position (written by the previous release during a
 * rolling upgrade, or by hand) gets the next position, the head's hash as its previous_hash and
 * its own hash, under the same advisory lock the service's append takes. The hash is the
 * service's: the same canonical text, built here in SQL, so that `audit verify` checks these rows
 * as it checks its own. Rows that come with a position (the service's own appends) are stored as
 * sent. Everything it needs is written out here: a migration never imports the service's code.
 */

/** The key of the chain's advisory lock ('audit' in ASCII), the one the service's append takes. */
const AUDIT_CHAIN_LOCK_KEY = 1635083369;

/** A text's UTF-16 code units: object keys sort by them, as JavaScript compares strings. */
const UTF16_UNITS = `create function "audit_utf16_units"(s text) returns int[] language plpgsql immutable as $$
declare
  units int[] := '{}';
  c int;
begin
  for i in 1 .. coalesce(length(s), 0) loop
    c := ascii(substr(s, i, 1));
    if c < 65536 then
      units := units || c;
    else
      units := units || (55296 + ((c - 65536) >> 10)) || (56320 + ((c - 65536) & 1023));
    end if;
  end loop;
  return units;
end $$;`;

/**
 * A JSON number as JavaScript writes it: the shortest digits that give back the same double
 * (float8's output with extra_float_digits = 1), laid out by Number.prototype.toString's rules
 * (plain from 1e-7 up to 1e21, otherwise 1.5e-7, 1e+21).
 */
const JSON_NUMBER = `create function "audit_json_number"(n numeric) returns text language plpgsql immutable set extra_float_digits = 1 as $$
declare
  t text := (n::float8)::text;
  negative boolean := left(t, 1) = '-';
  mantissa text;
  exponent int := 0;
  point int;
  digits text;
  k int;
  e int;
  written text;
begin
  if negative then t := substr(t, 2); end if;
  if position('e' in t) > 0 then
    mantissa := split_part(t, 'e', 1);
    exponent := split_part(t, 'e', 2)::int;
  else
    mantissa := t;
  end if;
  -- digits, and where the decimal point falls among them (value = 0.digits × 10^point)
  point := coalesce(nullif(position('.' in mantissa), 0) - 1, length(mantissa)) + exponent;
  digits := replace(mantissa, '.', '');
  while left(digits, 1) = '0' loop
    digits := substr(digits, 2);
    point := point - 1;
  end loop;
  digits := rtrim(digits, '0');
  if digits = '' then return '0'; end if;
  k := length(digits);
  if k <= point and point <= 21 then
    written := digits || repeat('0', point - k);
  elsif 0 < point and point <= 21 then
    written := left(digits, point) || '.' || substr(digits, point + 1);
  elsif -6 < point and point <= 0 then
    written := '0.' || repeat('0', -point) || digits;
  else
    e := point - 1;
    written := left(digits, 1) || case when k > 1 then '.' || substr(digits, 2) else '' end
      || 'e' || case when e >= 0 then '+' else '-' end || abs(e)::text;
  end if;
  return case when negative then '-' || written else written end;
end $$;`;

/**
 * JSON with every object's keys sorted, at every depth, as the service writes it: no spaces,
 * strings escaped as JSON.stringify escapes them (PostgreSQL's JSON escaping is the same), numbers
 * as JavaScript writes them.
 */
const CANONICAL_JSON = `create function "audit_canonical_json"(v jsonb) returns text language plpgsql immutable as $$
declare
  kind text := jsonb_typeof(v);
begin
  if v is null or kind = 'null' then
    return 'null';
  elsif kind = 'number' then
    return audit_json_number(v::numeric);
  elsif kind in ('string', 'boolean') then
    return v::text;
  elsif kind = 'array' then
    return '[' || coalesce((select string_agg(audit_canonical_json(e), ',' order by i) from jsonb_array_elements(v) with ordinality as a(e, i)), '') || ']';
  end if;
  return '{' || coalesce((select string_agg(to_json(k)::text || ':' || audit_canonical_json(e), ',' order by audit_utf16_units(k)) from jsonb_each(v) as o(k, e)), '') || '}';
end $$;`;

/** The text an event's hash is taken of: the 'audit-event/1' array, field for field. */
const CHAINED_TEXT = `create function "audit_event_chained_text"(e "audit_events") returns text language sql stable as $$
  select '["audit-event/1",' || to_json(e.id::text)::text
    || ',' || to_json(to_char(e.occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text
    || ',' || to_json(e.actor_type)::text || ',' || to_json(e.actor_id)::text || ',' || to_json(e.actor_name)::text
    || ',' || to_json(e.action)::text || ',' || to_json(e.target_type)::text || ',' || to_json(e.target_id)::text
    || ',' || coalesce(to_json(e.reason)::text, 'null') || ',' || coalesce(to_json(e.request_id)::text, 'null')
    || ',' || audit_canonical_json(e.changes) || ',' || coalesce(to_json(e.previous_hash)::text, 'null') || ']'
$$;`;

/**
 * Places a row that comes without a position at the head of the chain. occurred_at is cut to the
 * millisecond first: the hash covers what the service reads back, and it reads milliseconds.
 */
const PLACE = `create function "audit_events_place_in_chain"() returns trigger language plpgsql as $$
declare
  head record;
begin
  if new.chain_position is not null then
    return new;
  end if;
  perform pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK_KEY}::bigint);
  select chain_position, hash into head from audit_events where chain_position is not null order by chain_position desc limit 1;
  new.occurred_at := date_trunc('milliseconds', new.occurred_at);
  new.chain_position := coalesce(head.chain_position, 0) + 1;
  new.previous_hash := head.hash;
  new.hash := encode(sha256(convert_to(audit_event_chained_text(new), 'UTF8')), 'hex');
  return new;
end $$;`;

/**
 * Events an earlier rolling upgrade left outside the chain (written by the release before the
 * chain after `db migrate`): chained now, in the order they happened, as the trigger would have.
 */
const CHAIN_LEFT_OUT = `do $$
declare
  r record;
  head record;
  placed "audit_events";
begin
  for r in select * from audit_events where chain_position is null order by occurred_at, id loop
    select chain_position, hash into head from audit_events where chain_position is not null order by chain_position desc limit 1;
    placed := r;
    placed.chain_position := coalesce(head.chain_position, 0) + 1;
    placed.previous_hash := head.hash;
    update audit_events set chain_position = placed.chain_position, previous_hash = placed.previous_hash,
      hash = encode(sha256(convert_to(audit_event_chained_text(placed), 'UTF8')), 'hex')
      where id = r.id;
  end loop;
end $$;`;

export class Migration20261207233000 extends Migration {

  override async up(): Promise<void> {
    for (const fn of [UTF16_UNITS, JSON_NUMBER, CANONICAL_JSON, CHAINED_TEXT, PLACE]) this.addSql(fn);
    this.addSql(`create trigger "audit_events_place_in_chain" before insert on "audit_events" for each row execute function "audit_events_place_in_chain"();`);
    // The append-only trigger is lifted for this and only this, inside the migration's transaction.
    this.addSql(`alter table "audit_events" disable trigger "audit_events_no_update_or_delete";`);
    this.addSql(CHAIN_LEFT_OUT);
    this.addSql(`alter table "audit_events" enable trigger "audit_events_no_update_or_delete";`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "audit_events_place_in_chain" on "audit_events";`);
    this.addSql(`drop function if exists "audit_events_place_in_chain"();`);
    this.addSql(`drop function if exists "audit_event_chained_text"("audit_events");`);
    this.addSql(`drop function if exists "audit_canonical_json"(jsonb);`);
    this.addSql(`drop function if exists "audit_json_number"(numeric);`);
    this.addSql(`drop function if exists "audit_utf16_units"(text);`);
  }

}
