import { Migration } from '@mikro-orm/migrations';

/**
 * The usage events' monthly partitions are made by a function that runs with its owner's
 * rights (the schema's owner, who runs the migrations), so a service running as a role that owns
 * nothing (docs/audit.md, "Who can change an event") can still make the coming months'
 * partitions at start-up and in the billing run: creating a table in the schema and attaching
 * it to usage_events need the owner. The function makes only the partition of the month it is
 * given, named and bounded as src/services/usage/event-store.ts names them, and moves that
 * month's rows out of the DEFAULT partition first; it is a no-op when the partition exists.
 */
export class Migration20261207234500 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create function "usage_events_make_partition"(month_start date) returns boolean
language plpgsql security definer set search_path = pg_catalog, public as $$
declare
  name text := 'usage_events_y' || to_char(month_start, 'YYYY') || 'm' || to_char(month_start, 'MM');
  from_ts timestamptz := month_start::timestamp at time zone 'UTC';
  to_ts timestamptz := (month_start + interval '1 month')::timestamp at time zone 'UTC';
begin
  if month_start is null or month_start <> date_trunc('month', month_start)::date then
    raise exception 'usage_events_make_partition: % is not the first day of a month', month_start;
  end if;
  perform pg_advisory_xact_lock(7349001942);
  if exists (select 1 from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'public.usage_events'::regclass and c.relname = name) then
    return false;
  end if;
  execute format('create table public.%I (like public.usage_events including defaults including constraints)', name);
  -- ATTACH refuses a partition while the default still holds rows of its range.
  execute format('with moved as (delete from public.usage_events_default where occurred_at >= %L and occurred_at < %L returning *) insert into public.%I select * from moved', from_ts, to_ts, name);
  execute format('alter table public.usage_events attach partition public.%I for values from (%L) to (%L)', name, from_ts, to_ts);
  return true;
end $$;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop function if exists "usage_events_make_partition"(date);`);
  }

}
