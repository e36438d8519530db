-- A lease's holder can be asked to give it up (ADR 0185): a waiter for a
-- resumable upload's lock, on any replica, sets release_requested on the
-- lease it waits for, and the holder, which checks its lease while it
-- holds it, ends its request and releases. The flag belongs to the
-- holder it was set for: a lease that changes hands starts without it.
ALTER TABLE leases ADD COLUMN release_requested INTEGER NOT NULL DEFAULT 0;
