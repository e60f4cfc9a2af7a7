package config

// Backfill holds the settings of backfill runs.
type Backfill struct {
	// FullRewriteRows is the size, in rows, above which a run rewrites a table that has no
	// partitions (a ClickHouse table without PARTITION BY) only with --allow-full-rewrite
	// (0: the default, backfill.DefaultFullRewriteRows).
	FullRewriteRows int64 `yaml:"full_rewrite_rows"`
}

func (b *Backfill) validate(bad func(key, format string, args ...any) error) error {
	if b.FullRewriteRows < 0 {
		return bad("full_rewrite_rows", "backfill.full_rewrite_rows %d: want a number of rows, 0 or more", b.FullRewriteRows)
	}
	return nil
}
