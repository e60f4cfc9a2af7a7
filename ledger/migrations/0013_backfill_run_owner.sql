-- The process building a run: "pid:start:boot" (its process id, its start time in clock ticks
-- since boot, and the boot's id), so that a run whose process was killed can be told from one
-- another process is building, and a reused pid does not pass for the dead process. Runs recorded
-- before this migration have no owner: one still running was left by a process that is gone.
ALTER TABLE backfill_runs ADD COLUMN owner VARCHAR DEFAULT '';
