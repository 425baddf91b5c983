-- Names this database's data. An instance keeps its last snapshot in a file
-- and, when it starts, reads again only the apps whose revision differs from
-- the file's: revisions of another database (another environment, a new
-- cluster) can coincide with different content, so the file says which
-- dataset its revisions are of. A copy of the data (pg_dump, a replica)
-- keeps the name, with the revisions that go with it.

create table shell.dataset (
  id uuid primary key default gen_random_uuid(),
  -- One row, ever.
  singleton boolean not null default true unique check (singleton)
);

insert into shell.dataset default values;
