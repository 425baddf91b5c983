-- A revision per app, bumped in the same transaction as any change to the
-- app, its branding, its menu items or their grants. A reload reads these
-- (one small row per app) and then only the rows of apps whose revision
-- moved, so a change to one app of a thousand costs one app's read and
-- build, not the whole database's. Revisions say "something changed"; the
-- snapshot version stays a hash of the content.

create sequence shell.app_revision_seq;

-- No foreign key to apps: a cascade from a deleted app fires the child
-- tables' triggers after the app row is gone, and must not fail. Rows of
-- deleted apps are harmless (the loader reads revisions joined to apps).
create table shell.app_revisions (
  app_key  text primary key,
  revision bigint not null default nextval('shell.app_revision_seq')
);

insert into shell.app_revisions (app_key) select app_key from shell.apps;

create function shell.bump_app_revision(changed_app_key text) returns void
language sql as $$
  insert into shell.app_revisions (app_key) values (changed_app_key)
  on conflict (app_key) do update set revision = nextval('shell.app_revision_seq')
$$;

create function shell.bump_app_revision_of_row() returns trigger
language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then
    if tg_table_name = 'menu_role_grants' then
      -- Gone already when the item itself was deleted; the item's own trigger bumps then.
      perform shell.bump_app_revision(m.app_key) from shell.menu_items m where m.id = old.menu_item_id;
    else
      perform shell.bump_app_revision(old.app_key);
    end if;
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    if tg_table_name = 'menu_role_grants' then
      perform shell.bump_app_revision(m.app_key) from shell.menu_items m where m.id = new.menu_item_id;
    else
      perform shell.bump_app_revision(new.app_key);
    end if;
  end if;
  return null;
end
$$;

create trigger apps_bump_revision
  after insert or update or delete on shell.apps
  for each row execute function shell.bump_app_revision_of_row();

create trigger branding_bump_revision
  after insert or update or delete on shell.branding
  for each row execute function shell.bump_app_revision_of_row();

create trigger menu_items_bump_revision
  after insert or update or delete on shell.menu_items
  for each row execute function shell.bump_app_revision_of_row();

create trigger menu_role_grants_bump_revision
  after insert or update or delete on shell.menu_role_grants
  for each row execute function shell.bump_app_revision_of_row();

-- TRUNCATE fires no row triggers: forget every revision, so the next reload
-- reads everything again.
create function shell.forget_app_revisions() returns trigger
language plpgsql as $$
begin
  update shell.app_revisions set revision = nextval('shell.app_revision_seq');
  return null;
end
$$;

create trigger branding_truncate_revisions
  after truncate on shell.branding
  for each statement execute function shell.forget_app_revisions();

create trigger menu_items_truncate_revisions
  after truncate on shell.menu_items
  for each statement execute function shell.forget_app_revisions();

create trigger menu_role_grants_truncate_revisions
  after truncate on shell.menu_role_grants
  for each statement execute function shell.forget_app_revisions();
