-- Which transaction last changed each app, so that a reload asks the
-- database for the apps changed since its last read instead of sending it
-- every app's revision: a reload then costs what the change costs.
--
-- The loader keeps the xmin of the snapshot it last read (the oldest
-- transaction still running then; every older one had finished and was
-- visible). Any change that read did not see was made by a transaction at
-- or above that xmin, so `changed_xid >= xmin` finds it, even one that
-- committed after a later transaction did. xid8 never wraps around.

alter table shell.app_revisions
  add column changed_xid xid8 not null default pg_current_xact_id();

create index app_revisions_changed_xid on shell.app_revisions (changed_xid);

-- Still once per transaction (sql/004_one_revision_per_transaction.sql), now
-- told by the xid the row records rather than by its xmin.
create or replace function shell.bump_app_revision(changed_app_key text) returns void
language sql as $$
  insert into shell.app_revisions as r (app_key, changed_xid)
  values (changed_app_key, pg_current_xact_id())
  on conflict (app_key) do update
    set revision = nextval('shell.app_revision_seq'), changed_xid = excluded.changed_xid
    where r.changed_xid <> excluded.changed_xid
$$;

create or replace function shell.forget_app_revisions() returns trigger
language plpgsql as $$
begin
  update shell.app_revisions
    set revision = nextval('shell.app_revision_seq'), changed_xid = pg_current_xact_id();
  return null;
end
$$;

-- TRUNCATE of the apps cascades to the other tables, whose triggers forget
-- every revision; this one says so for the apps table itself.
create trigger apps_truncate_revisions
  after truncate on shell.apps
  for each statement execute function shell.forget_app_revisions();
