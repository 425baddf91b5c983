-- An app's revision moves once per transaction, not once per changed row.
-- Replacing an app's menus (an import) writes a row for every item, grant
-- and label; each bumped the revision, leaving a dead row version in
-- shell.app_revisions per row written, and the reload scans that table.
-- A row whose version this transaction wrote already has moved: the first
-- bump is enough for a reload to see a new revision after the commit.
create or replace function shell.bump_app_revision(changed_app_key text) returns void
language sql as $$
  insert into shell.app_revisions as r (app_key) values (changed_app_key)
  on conflict (app_key) do update set revision = nextval('shell.app_revision_seq')
  where r.xmin::text::bigint <> pg_current_xact_id()::text::bigint % 4294967296
$$;
