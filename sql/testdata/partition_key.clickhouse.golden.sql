SELECT count() FROM system.columns WHERE database = 'system' AND table = 'tables' AND name = 'partition_key';
SELECT partition_key FROM system.tables WHERE database = currentDatabase() AND name = ?;
SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = ?;
SELECT sum(rows), sum(bytes_on_disk) FROM system.parts WHERE active AND database = currentDatabase() AND table = ?;
