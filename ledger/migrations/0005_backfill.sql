-- Backfill plans, runs, the tables each run builds, and a checkpoint per partition.
CREATE SEQUENCE backfill_plan_seq START 1;
CREATE TABLE backfill_plans (
    id         BIGINT PRIMARY KEY DEFAULT nextval('backfill_plan_seq'),
    backfill   VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    actor      VARCHAR NOT NULL,
    plan       JSON NOT NULL
);
CREATE SEQUENCE backfill_run_seq START 1;
CREATE TABLE backfill_runs (
    id          BIGINT PRIMARY KEY DEFAULT nextval('backfill_run_seq'),
    backfill    VARCHAR NOT NULL,
    target      VARCHAR NOT NULL,
    table_name  VARCHAR NOT NULL,
    reason      VARCHAR NOT NULL,
    state       VARCHAR NOT NULL,   -- running, cancelled, failed, sampled, validated, validation-failed
    actor       VARCHAR NOT NULL,
    code_sha    VARCHAR NOT NULL,
    sample      INTEGER NOT NULL DEFAULT 0,
    plan        JSON NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    error       VARCHAR NOT NULL DEFAULT '',
    validation  JSON
);
CREATE TABLE backfill_tables (
    run_id     BIGINT NOT NULL,
    position   INTEGER NOT NULL,     -- build order: the upstream table first
    table_name VARCHAR NOT NULL,
    backfill   VARCHAR NOT NULL,     -- the file whose transform builds it
    version    INTEGER NOT NULL,
    code_sha   VARCHAR NOT NULL,
    prepared   BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (run_id, table_name)
);
CREATE TABLE backfill_partitions (
    run_id      BIGINT NOT NULL,
    table_name  VARCHAR NOT NULL,
    part        VARCHAR NOT NULL,    -- the partition's start, as formatted for its grain
    state       VARCHAR NOT NULL,    -- pending, running, done, failed
    row_count   BIGINT NOT NULL DEFAULT 0,
    attempts    INTEGER NOT NULL DEFAULT 0,
    started_at  TIMESTAMP,
    finished_at TIMESTAMP,
    error       VARCHAR NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, table_name, part)
);
