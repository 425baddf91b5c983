-- Links: an item's href, an app's home_url and branding's logo_url and
-- favicon_url are a path, a relative reference, or an https:, http: or
-- mailto: URL; any other scheme (javascript:, data:, vbscript:, in any case,
-- with spaces or control characters around or inside it) is refused here as
-- by `import`, so that psql or an admin tool cannot store one either, and the
-- service never serves one.
--
-- The rule is an allow-list, read as a browser reads a URL (WHATWG URL): it
-- strips C0 controls and spaces from both ends and removes tabs and line
-- breaks anywhere, so "  java\tscript:" is a javascript: URL to it. What is
-- left either has no scheme (no ":" before the first "/", "?" or "#") or
-- names https, http or mailto. isAllowedLink in src/domain/vocabulary.ts
-- spells the same rule; test/db/schema.test.ts and the import's tests hold
-- both to one list of cases (test/helpers/link-cases.ts). A text value
-- cannot hold NUL, so U+0001 is the first control character here.

create function shell.is_allowed_link(link text) returns boolean
  language sql immutable strict parallel safe
as $$
  select read !~ '^[^/?#]*:' or read ~* '^(https?|mailto):'
  from (
    select translate(
      regexp_replace(link, '^[\x01-\x20]+|[\x01-\x20]+$', '', 'g'),
      E'\t\n\r', ''
    ) as read
  ) as browser
$$;

-- Rows stored before this migration that break the rule lose the link (set
-- to null: an item without href, an app without home page, branding without
-- logo or favicon), rather than stopping the migration or keeping a link no
-- one may follow. The updates bump the apps' revisions and notify, as any
-- change does, so running instances drop those links on their next reload.
update shell.apps set home_url = null where not shell.is_allowed_link(home_url);
update shell.branding set logo_url = null where not shell.is_allowed_link(logo_url);
update shell.branding set favicon_url = null where not shell.is_allowed_link(favicon_url);
update shell.menu_items set href = null where not shell.is_allowed_link(href);

alter table shell.apps
  add constraint apps_home_url_link check (shell.is_allowed_link(home_url));
alter table shell.branding
  add constraint branding_logo_url_link check (shell.is_allowed_link(logo_url)),
  add constraint branding_favicon_url_link check (shell.is_allowed_link(favicon_url));
alter table shell.menu_items
  add constraint menu_items_href_link check (shell.is_allowed_link(href));
