-- A password an administrator set for someone else (a new account made in the desk, or a reset) is temporary: the
-- account can only change it, on its own page, before it reads, corrects or signs anything. NULL (every account
-- made before this column) reads as false.
ALTER TABLE desk_accounts ADD COLUMN password_temporary BOOLEAN;
