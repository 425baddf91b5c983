-- Labels in several languages. menu_items.label stays the label in the app's
-- default locale; menu_item_labels holds the others, one row per item and
-- language tag. A database of the previous version keeps every row: its apps
-- get the default locale 'en' and no other language.

alter table shell.apps
  add column default_locale text not null default 'en'
    constraint apps_default_locale_format
      check (default_locale ~ '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$');

create table shell.menu_item_labels (
  menu_item_id bigint not null references shell.menu_items (id) on delete cascade,
  locale       text not null
               constraint menu_item_labels_locale_format
                 check (locale ~ '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$'),
  label        text not null,
  primary key (menu_item_id, locale)
);

-- Language tags compare case-insensitively: `de-CH` and `de-ch` name one
-- language, so an item has at most one label for it.
create unique index menu_item_labels_one_per_language
  on shell.menu_item_labels (menu_item_id, lower(locale));

create trigger menu_item_labels_notify_changed
  after insert or update or delete or truncate on shell.menu_item_labels
  for each statement execute function shell.notify_changed();

-- A label change is a change of its item's app: bump that app's revision, as
-- the other tables' triggers do (sql/002_app_revisions.sql).
create function shell.bump_app_revision_of_label() returns trigger
language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then
    -- Gone already when the item itself was deleted; the item's own trigger bumps then.
    perform shell.bump_app_revision(m.app_key) from shell.menu_items m where m.id = old.menu_item_id;
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    perform shell.bump_app_revision(m.app_key) from shell.menu_items m where m.id = new.menu_item_id;
  end if;
  return null;
end
$$;

create trigger menu_item_labels_bump_revision
  after insert or update or delete on shell.menu_item_labels
  for each row execute function shell.bump_app_revision_of_label();

create trigger menu_item_labels_truncate_revisions
  after truncate on shell.menu_item_labels
  for each statement execute function shell.forget_app_revisions();
