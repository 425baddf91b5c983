-- The shell data model (contract, section 4). Every rule the service relies
-- on is enforced here, so that rows written by psql or an admin tool are held
-- to the same rules as the import command.

create schema if not exists shell;

create table shell.apps (
  app_key     text primary key
              constraint apps_app_key_format check (app_key ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  name        text not null,
  description text,
  home_url    text,
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now()
);

create table shell.branding (
  app_key      text primary key references shell.apps (app_key) on delete cascade,
  product_name text,
  logo_url     text,
  favicon_url  text,
  primary_color text
               constraint branding_primary_color_format check (primary_color ~ '^#[0-9a-fA-F]{6}$'),
  accent_color text
               constraint branding_accent_color_format check (accent_color ~ '^#[0-9a-fA-F]{6}$'),
  footer_text  text,
  -- A map of design tokens handed to the front end as is.
  theme        jsonb not null default '{}'
               constraint branding_theme_object check (jsonb_typeof(theme) = 'object')
);

create table shell.menu_items (
  id        bigint generated always as identity primary key,
  app_key   text not null references shell.apps (app_key) on delete cascade,
  item_key  text not null
            constraint menu_items_item_key_format check (item_key ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
  zone      text not null
            constraint menu_items_zone check (zone in ('topbar', 'sidebar', 'footer', 'user-menu')),
  parent_id bigint,
  position  int not null default 0,
  kind      text not null default 'link'
            constraint menu_items_kind check (kind in ('link', 'search', 'action')),
  label     text not null,
  icon      text,
  href      text,
  external  boolean not null default false,
  constraint menu_items_item_key_unique unique (app_key, item_key),
  -- Target of the parent reference below: lets the database itself require
  -- that a parent belongs to the same app and the same zone as its child.
  constraint menu_items_id_app_zone unique (id, app_key, zone),
  constraint menu_items_parent_same_app_and_zone
    foreign key (parent_id, app_key, zone)
    references shell.menu_items (id, app_key, zone) on delete cascade,
  constraint menu_items_not_own_parent check (parent_id <> id)
);

create index menu_items_parent_id on shell.menu_items (parent_id);

create table shell.menu_role_grants (
  menu_item_id bigint not null references shell.menu_items (id) on delete cascade,
  role         text not null
               constraint menu_role_grants_role_not_blank check (role ~ '\S'),
  primary key (menu_item_id, role)
);

-- updated_at follows every change of an app row, whoever makes it.
create function shell.touch_updated_at() returns trigger
language plpgsql as $$
begin
  new.updated_at := now();
  return new;
end
$$;

create trigger apps_touch_updated_at
  before update on shell.apps
  for each row execute function shell.touch_updated_at();

-- A parent chain must end at a root: a cycle would hide its items forever.
create function shell.reject_menu_cycle() returns trigger
language plpgsql as $$
begin
  if new.parent_id is not null and exists (
    with recursive ancestors(id, parent_id) as (
      select id, parent_id from shell.menu_items where id = new.parent_id
      union
      select m.id, m.parent_id from shell.menu_items m join ancestors a on m.id = a.parent_id
    )
    select 1 from ancestors where id = new.id
  ) then
    raise exception 'menu item % would be its own ancestor', new.id
      using errcode = 'check_violation';
  end if;
  return new;
end
$$;

create trigger menu_items_reject_cycle
  before update of parent_id on shell.menu_items
  for each row execute function shell.reject_menu_cycle();

-- Every committed change reaches every running instance: statement-level, so
-- a bulk statement sends one notification, and PostgreSQL folds identical
-- notifications of one transaction into one, delivered at COMMIT.
create function shell.notify_changed() returns trigger
language plpgsql as $$
begin
  perform pg_notify('shell_changed', tg_table_name);
  return null;
end
$$;

create trigger apps_notify_changed
  after insert or update or delete or truncate on shell.apps
  for each statement execute function shell.notify_changed();

create trigger branding_notify_changed
  after insert or update or delete or truncate on shell.branding
  for each statement execute function shell.notify_changed();

create trigger menu_items_notify_changed
  after insert or update or delete or truncate on shell.menu_items
  for each statement execute function shell.notify_changed();

create trigger menu_role_grants_notify_changed
  after insert or update or delete or truncate on shell.menu_role_grants
  for each statement execute function shell.notify_changed();
