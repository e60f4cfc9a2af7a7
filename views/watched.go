package views

import "context"

// WatchedTables are the tables of target of which trueup recorded a version as it stopped being
// live (Watched), by name: every table Stale has something to compare for.
func (s Store) WatchedTables(ctx context.Context, target string) ([]string, error) {
	rows, err := s.L.DB().QueryContext(ctx, `SELECT DISTINCT table_name FROM version_marks WHERE target = ? AND mark = ? ORDER BY table_name`,
		target, markLeft)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
