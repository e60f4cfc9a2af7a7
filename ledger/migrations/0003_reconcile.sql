-- Reconcile: stored diffs of an old and a new relation, one row per diff with its headline
-- figures, and one row per partition. result holds the whole Result as JSON except the
-- per-partition samples, which live with their partition (detail) for the drill-down.
CREATE SEQUENCE reconcile_diff_seq START 1;
CREATE TABLE reconcile_diffs (
    id               BIGINT PRIMARY KEY DEFAULT nextval('reconcile_diff_seq'),
    created_at       TIMESTAMP NOT NULL,
    label            VARCHAR NOT NULL DEFAULT '',   -- what it was for: "cli", "backfill fix_dedup_bug dry-run"
    actor            VARCHAR NOT NULL DEFAULT '',
    old_target       VARCHAR NOT NULL,
    old_relation     VARCHAR NOT NULL,
    new_target       VARCHAR NOT NULL,
    new_relation     VARCHAR NOT NULL,
    differs          BOOLEAN NOT NULL,
    expectations_met BOOLEAN NOT NULL,
    partitions       INTEGER NOT NULL,
    unexpected       INTEGER NOT NULL,
    rows_added       BIGINT NOT NULL,
    rows_removed     BIGINT NOT NULL,
    rows_changed     BIGINT NOT NULL,
    duplicate_keys   BIGINT NOT NULL,
    rows_transferred BIGINT NOT NULL,
    elapsed_ms       BIGINT NOT NULL,
    result           JSON NOT NULL
);
CREATE TABLE reconcile_partitions (
    diff_id        BIGINT NOT NULL,
    seq            INTEGER NOT NULL,               -- the partition's place in the result
    partition      VARCHAR NOT NULL,
    presence       VARCHAR NOT NULL,               -- both, old_only, new_only
    old_count      BIGINT NOT NULL,
    new_count      BIGINT NOT NULL,
    pct_change     DOUBLE,                         -- NULL when old_count is 0
    checksum_match BOOLEAN NOT NULL,
    verdict        VARCHAR NOT NULL,               -- unchanged, expected, unexpected
    detail         JSON NOT NULL,                  -- the Partition with its samples
    PRIMARY KEY (diff_id, partition)
);
