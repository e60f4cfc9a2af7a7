package views

import (
	"context"
	"fmt"

	tsql "trueup/sql"
)

// Days lists the partitions readers of table see now (what its view reads), oldest first, as
// people read them (2026-09-02): by the partition column and grain the newest mark of any of its
// versions records, so days a pipeline wrote after trueup last measured the table are there too.
// A table no mark describes (no backfill has built or carried a version of it) has none: nil.
func (s *Service) Days(ctx context.Context, table string) ([]string, error) {
	var m Marks
	found := false
	err := s.store.eachMark(ctx, `SELECT table_name, version, mark, body, taken_at FROM version_marks
		WHERE target = ? AND table_name = ? ORDER BY taken_at DESC LIMIT 1`, []any{s.target, table},
		func(_ string, _ markKey, got Marks) { m, found = got, true })
	if err != nil {
		return nil, fmt.Errorf("views: read the partitions recorded of %s: %w", table, err)
	}
	if !found || m.Column == "" {
		return nil, nil
	}
	parts, err := tsql.ExistingPartitions(ctx, s.engine, table, m.Column, m.Grain)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	out := make([]string, len(parts))
	for i, t := range parts {
		out[i] = tsql.FormatGrain(t, m.Grain)
	}
	return out, nil
}
