-- The role the service runs as: it reads and writes the data, and owns nothing.
--
-- Run by the schema's owner (compose's `app-role` service, after `db migrate`; by hand:
-- `APP_DB_PASSWORD=… psql "$OWNER_DATABASE_URL" -f docker/app-role.sql`, with psql 15 or later
-- for \getenv). Safe to run again: it creates the role once, sets its password to
-- APP_DB_PASSWORD each time, and grants again.
--
-- NOTE: the audit trail's triggers refuse UPDATE, DELETE and TRUNCATE of an event, and only the
-- table's owner or a superuser can disable them. The service therefore never runs as either;
-- migrations (which create and alter tables) run as the owner. docs/audit.md explains the roles.

\set ON_ERROR_STOP on
\set QUIET on

\getenv app_password APP_DB_PASSWORD
\getenv app_role APP_DB_USER
\if :{?app_role}
\else
  \set app_role billing_app
\endif
\if :{?app_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'APP_DB_PASSWORD is not set: the application role needs a password of its own'; END $$;
\endif

-- Refused: the owner as its own application role, or a superuser one (either could lift the triggers).
SELECT current_user = :'app_role' AS app_role_is_owner,
       coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = :'app_role'), false) AS app_role_is_superuser \gset
\if :app_role_is_owner
  DO $$ BEGIN RAISE EXCEPTION 'APP_DB_USER names the role running this script: the service must not run as the schema''s owner'; END $$;
\endif
\if :app_role_is_superuser
  DO $$ BEGIN RAISE EXCEPTION 'APP_DB_USER names a superuser: the service must run as a role that cannot lift the audit trail''s triggers'; END $$;
\endif

SELECT format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE', :'app_role')
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'app_role') \gexec
ALTER ROLE :"app_role" WITH LOGIN PASSWORD :'app_password';

SELECT format('GRANT CONNECT, TEMPORARY ON DATABASE %I TO %I', current_database(), :'app_role') \gexec
GRANT USAGE ON SCHEMA public TO :"app_role";

-- The tables and sequences the migrations have made so far …
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO :"app_role";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO :"app_role";
-- … and those later migrations make (they run as this same owner), before this script runs again.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"app_role";
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO :"app_role";

-- The audit trail is append-only for the service: refused by the privileges here and by the
-- table's triggers (once the migrations have made it).
SELECT format('REVOKE UPDATE, DELETE, TRUNCATE ON %s FROM %I', 'audit_events', :'app_role')
  WHERE to_regclass('public.audit_events') IS NOT NULL \gexec

\echo application role ready: :app_role (owner: :USER)
