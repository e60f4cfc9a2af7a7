package reconcile

import tsql "trueup/sql"

// renames are Spec.Map resolved against the columns: old name → new name, and back.
type renames struct {
	to, from map[string]string
}

// mapColumns checks Spec.Map: each pair names a column of the old relation and one of the new,
// and no column is named twice.
func mapColumns(spec Spec, oldCols, newCols []tsql.Column) (renames, error) {
	r := renames{to: map[string]string{}, from: map[string]string{}}
	for from, to := range spec.Map {
		o, ok := findColumn(oldCols, from)
		if !ok {
			return r, badInput("--map %s=%s: no column %q in old relation %s", from, to, from, spec.Old.Relation)
		}
		n, ok := findColumn(newCols, to)
		if !ok {
			return r, badInput("--map %s=%s: no column %q in new relation %s", from, to, to, spec.New.Relation)
		}
		if _, twice := r.to[o.Name]; twice {
			return r, badInput("--map: column %q mapped twice", o.Name)
		}
		if prev := r.from[n.Name]; prev != "" {
			return r, badInput("--map: %q and %q both map to %q", prev, o.Name, n.Name)
		}
		r.to[o.Name], r.from[n.Name] = n.Name, o.Name
	}
	return r, nil
}
