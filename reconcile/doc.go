// Package reconcile compares an old and a new version of a relation, partition by partition and
// row by row, in one engine or across two, and judges the differences against what the operator
// said would change. The backfill runner, the swap gate and notices stand on its Result.
//
// # How a diff runs
//
//  1. One scan per side, grouped by the partition column (inside one engine, both in one
//     statement): row count, rows whose key has a NULL, measure totals, and the sum (mod 2^64) of
//     a row hash over every compared column but the partition column, which every row of a
//     partition holds alike. Inside one engine the hash is the engine's fast one; across engines it is the portable MD5 hash,
//     computed inside each engine, that gives the same value for the same row in both.
//  2. Partitions whose counts and checksums agree are done: they are not joined at all.
//  3. Inside one engine, the differing partitions (bound as a `partition IN (…)` filter, or no
//     filter when most partitions differ) are joined once on the key carrying every compared
//     column, the partition column among them (a pair whose partitions differ is a row removed
//     from one partition and added to the other); only the pairs that differ are read out, sorted
//     by key, and classified in Go. Where a key has several rows on a side the partition is
//     compared again exactly: a narrow join of (partition, key, row hash) names the differing
//     keys and every row of those keys is read. That is where a key came out twice, or where the
//     rows read (each with its row hash) do not make up the partition's summary: the pairs not
//     read out must be equal rows, one a side, so they change neither the difference of the
//     counts nor that of the checksums; a key's extra row that paired only with equal rows does.
//  4. Across engines nothing can be joined, so each differing partition is split into buckets by
//     the portable hash of the key; per-bucket counts and checksums are compared and differing
//     buckets split again until they hold about 32 rows; only those buckets' rows cross over.
//     Result.RowsTransferred counts them.
//  5. Every partition is judged against the expectations.
//
// # Comparison semantics
//
//   - Rows are matched on (partition, key). A row that moved to another partition is removed from
//     one and added to the other.
//   - Spec.Grain makes a partition a day, month or hour of a date or timestamp column, labelled by
//     its start (grain.go); rows are still matched on the column's own value and key, so a row
//     whose day changed inside its month is removed and added in that month.
//   - NULL equals NULL. Rows whose key has a NULL cannot be matched: they are counted per
//     partition (old_null_keys, new_null_keys) and left out of the row-level comparison.
//   - A key with more than one row on either side is counted once as a duplicate key, with its
//     row counts per side, and not as added, removed or changed. Keys whose rows are equal and
//     equally many on both sides are not differences and are not reported.
//   - Each column compares at the coarser precision of its two sides' declared types, in the
//     checksums and the row comparison alike: timestamps as instants truncated to the lower
//     fractional precision, decimals at the lower scale, a REAL/Float32 side at float precision,
//     two doubles at Spec.Scale decimal places (default 6); Spec.Precision overrides it and
//     Result.Precision says it. Numbers compare by value across types (DECIMAL, DOUBLE, integers;
//     Decimal, Float64 on ClickHouse), or within a per-column Tolerance, absolute (0.01) or
//     relative (0.1%): a partition that differs only within a tolerance shows checksum_match
//     false and zero changed rows, and is judged unchanged. UUIDs compare and print as text.
//   - Columns present on one side only are reported in Result.Schema; they are a difference
//     unless listed in Spec.Ignore. Columns whose type differs are reported and still compared.
//   - A partition present on one side only is reported as old_only or new_only, never dropped;
//     its rows count as removed or added and a few are sampled.
//
// # Expectations
//
// The operator states the intended change as text, as in a backfill header:
//
//	expect: inside 2026-07-10..2026-07-18 rows +0..6%, sum(amount) +0..6%; outside identical
//
// Grammar (case-insensitive; a leading "expect:" and lines starting with # are ignored):
//
//	expectations = clause { ";" clause }
//	clause       = [ where ] body
//	where        = "inside" ranges | "outside" [ ranges ] | "everywhere"
//	ranges       = "scope" | range { "," range }
//	range        = VALUE [ ".." VALUE ]          inclusive, in the partition column's type
//	body         = "identical" | "unchanged" | "any" | bound { "," bound }
//	bound        = metric change
//	metric       = "rows" | "sum(" COLUMN ")" | "added" | "removed" | "changed"
//	change       = NUMBER [ ".." NUMBER ] [ "%" ]  signed; one number means exactly that
//
// "rows" is new_count against old_count; "sum(col)" the column's total (it becomes a measure);
// "added", "removed" and "changed" count rows by key, in percent of old_count with "%". A bare
// "outside" means outside every "inside" clause; "inside scope" uses Spec.Scope (the windows a
// backfill rebuilt). A clause without a where applies everywhere.
//
// Each partition gets a verdict: "unexpected" when it breaks a bound of a clause that covers it,
// or differs while no clause covers it; otherwise "unchanged" when it holds the same rows, and
// "expected" when it differs within what the clauses allow. Without expectations every
// difference is unexpected. Result.ExpectationsMet is false when any partition is unexpected or
// columns were added or removed without being ignored.
package reconcile
