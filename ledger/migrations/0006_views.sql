-- Views: every swap and rollback of logical tables, recorded as an intent before the views are
-- repointed and completed with its outcome after, so that start-up recovery can compare the ledger
-- with the engine; and the per-table locks that keep one swap or rollback per table at a time.
CREATE SEQUENCE swap_seq START 1;
CREATE TABLE swaps (
    id              BIGINT PRIMARY KEY DEFAULT nextval('swap_seq'),
    target          VARCHAR NOT NULL,
    table_name      VARCHAR NOT NULL,            -- the table the operator named
    kind            VARCHAR NOT NULL,            -- swap, rollback
    state           VARCHAR NOT NULL,            -- intent, done, failed, abandoned
    actor           VARCHAR NOT NULL,
    reason          VARCHAR NOT NULL DEFAULT '',
    override_by     VARCHAR NOT NULL DEFAULT '',
    override_reason VARCHAR NOT NULL DEFAULT '',
    backfill        VARCHAR NOT NULL DEFAULT '',
    run_id          BIGINT NOT NULL DEFAULT 0,
    changes         JSON NOT NULL,               -- [{"table":"orders","from":1,"to":2}, …] in repoint order
    undoes          BIGINT NOT NULL DEFAULT 0,   -- a rollback: the swap it took back
    undone_by       BIGINT NOT NULL DEFAULT 0,   -- a swap: the rollback that took it back
    started_at      TIMESTAMP NOT NULL,
    finished_at     TIMESTAMP,
    detail          VARCHAR NOT NULL DEFAULT ''
);
-- One row per logical table while a swap or rollback holds it. The ledger file is opened by one
-- process at a time, so a row left here after a crash is stale and start-up recovery removes it.
CREATE TABLE view_locks (
    target     VARCHAR NOT NULL,
    table_name VARCHAR NOT NULL,
    swap_id    BIGINT NOT NULL,
    holder     VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL,
    since      TIMESTAMP NOT NULL,
    PRIMARY KEY (target, table_name)
);
