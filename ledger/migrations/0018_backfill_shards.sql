-- A partition of a backfill run written on one shard of a cluster target (each shard's local
-- table replaced on its own, sql/clickhouse_cluster_write.go): a resume writes only the shards a
-- partition lacks. The rows are the shard's rows of the partition. Preparing the table again
-- (its version dropped and made anew) clears them.
CREATE TABLE backfill_shards (
    run_id     BIGINT NOT NULL,
    table_name VARCHAR NOT NULL,
    part       VARCHAR NOT NULL,
    shard      INTEGER NOT NULL,
    row_count  BIGINT NOT NULL,
    written_at TIMESTAMP NOT NULL,
    PRIMARY KEY (run_id, table_name, part, shard)
);
