-- The runs of a backfill's transform as the pipeline (`trueup run NAME --window …`, or its
-- schedule: header under `trueup serve`), each window checkpointed as it is written: a run that
-- stopped (killed, its machine restarted) is continued by the next run of the same windows with
-- the same transform, from the first window it had not written. The newest scheduled run of a
-- backfill is also its last slot.
--   windows: JSON list of the partitions asked for, in order
--   state:   running, done, failed (running while its owner, "pid:start:boot", is gone: stopped)
CREATE SEQUENCE pipeline_run_seq START 1;
CREATE TABLE pipeline_runs (
    id          BIGINT PRIMARY KEY DEFAULT nextval('pipeline_run_seq'),
    backfill    VARCHAR NOT NULL,
    target      VARCHAR NOT NULL,
    code_sha    VARCHAR NOT NULL,
    windows     VARCHAR NOT NULL,
    actor       VARCHAR NOT NULL,
    owner       VARCHAR NOT NULL,
    state       VARCHAR NOT NULL,
    started_at  TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    error       VARCHAR NOT NULL DEFAULT ''
);
-- One window of a pipeline run written into one table's version (the live one; building, when
-- the window was also written into a version a backfill is building).
CREATE TABLE pipeline_windows (
    run_id       BIGINT NOT NULL,
    window_start VARCHAR NOT NULL,
    table_name   VARCHAR NOT NULL,
    version      VARCHAR NOT NULL,
    building     VARCHAR NOT NULL DEFAULT '',
    rows         BIGINT NOT NULL,
    written_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (run_id, window_start, table_name)
);
