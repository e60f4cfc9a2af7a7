-- A swap or rollback's outcome commits in the ledger before the notices hear of it (views.Listener):
-- notified_at is set once they have. A done publish without it was cut off by a crash between the
-- two, and start-up recovery tells the notices again, oldest first. Publishes recorded before this
-- migration are taken as told: replaying history would move notices people have moved since.
ALTER TABLE swaps ADD COLUMN notified_at TIMESTAMP;
UPDATE swaps SET notified_at = coalesce(finished_at, started_at);
