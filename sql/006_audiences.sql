-- Audiences: an item may be rolled out to a share of the callers its roles
-- admit, and shown only within a window of time (README, "Audiences"). The
-- row triggers of sql/002_app_revisions.sql and the statement triggers of
-- sql/001_schema.sql already cover every column of menu_items.

alter table shell.menu_items
  -- The share of callers who see the item, by a bucket of their own (0 to 99)
  -- derived from the app, the item and the caller; null: every caller.
  add column rollout_percent smallint
    constraint menu_items_rollout_percent_range check (rollout_percent between 0 and 100),
  -- Shown when visible_from <= now < visible_until; null: unbounded on that side.
  add column visible_from timestamptz,
  add column visible_until timestamptz,
  add constraint menu_items_window_order
    check (visible_from is null or visible_until is null or visible_from < visible_until);
