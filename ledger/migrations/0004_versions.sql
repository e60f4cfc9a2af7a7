-- Physical versions of logical tables (<table>__v<N>) and what is known about each.
CREATE TABLE versions (
    target       VARCHAR NOT NULL,
    table_name   VARCHAR NOT NULL,
    version      INTEGER NOT NULL,
    state        VARCHAR NOT NULL,   -- building, validated, validation-failed, cancelled, live, previous, retired
    built_by     VARCHAR NOT NULL DEFAULT '',
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL,
    backfill     VARCHAR NOT NULL DEFAULT '',
    run_id       BIGINT NOT NULL DEFAULT 0,
    row_count    BIGINT NOT NULL DEFAULT 0,
    checksum     VARCHAR NOT NULL DEFAULT '',
    diff_id      BIGINT NOT NULL DEFAULT 0,
    validation   JSON,
    override_by  VARCHAR NOT NULL DEFAULT '',
    override_reason VARCHAR NOT NULL DEFAULT '',
    PRIMARY KEY (target, table_name, version)
);
