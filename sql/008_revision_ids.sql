-- A revision that no other write ever has, on any server. The sequence's
-- revisions (sql/002_app_revisions.sql) are handed out again after a
-- failover that lost commits (asynchronous replication): the new primary
-- never received the lost commits, nor the sequence values they drew, and
-- gives those values to other content. An instance that served a lost
-- commit would then find the same revision and keep its bytes. A random id
-- per write is never handed out again, so a reload after a failover still
-- reads only the apps whose rows differ from what it holds, lost commits
-- included. The loader reads this id as an app's revision.

alter table shell.app_revisions
  add column revision_id uuid not null default gen_random_uuid();

create or replace function shell.bump_app_revision(changed_app_key text) returns void
language sql as $$
  insert into shell.app_revisions as r (app_key, changed_xid)
  values (changed_app_key, pg_current_xact_id())
  on conflict (app_key) do update
    set revision = nextval('shell.app_revision_seq'), changed_xid = excluded.changed_xid,
      revision_id = gen_random_uuid()
    where r.changed_xid <> excluded.changed_xid
$$;

create or replace function shell.forget_app_revisions() returns trigger
language plpgsql as $$
begin
  update shell.app_revisions
    set revision = nextval('shell.app_revision_seq'), changed_xid = pg_current_xact_id(),
      revision_id = gen_random_uuid();
  return null;
end
$$;
