package rules

import tsql "trueup/sql"

// On returns a copy of the rule that checks other relations: each logical table named in
// relations is read from its replacement instead (e.g. orders → orders__v2), so a backfill can
// validate the version it built before anyone reads it. The copy keeps the rule's name. current
// is the engine's tsql.CurrentQualifiers: SQL that names a table with them is pointed too.
func (r *Rule) On(d tsql.Dialect, relations map[string]string, current []string) *Rule {
	c := *r
	swap := func(name string) string {
		if to, ok := relations[name]; ok {
			return to
		}
		return name
	}
	c.Table = swap(r.Table)
	c.Parent = swap(r.Parent)
	c.Reference.Relation = swap(r.Reference.Relation)
	if r.Reference.Select != "" {
		c.Reference.Select = tsql.RewriteTables(d, r.Reference.Select, relations, current)
	}
	if r.Body != "" {
		c.Body = tsql.RewriteTables(d, r.Body, relations, current)
	}
	return &c
}

// Reads lists the logical relations a rule reads.
func (r *Rule) Reads() []string {
	var out []string
	for _, name := range []string{r.Table, r.Parent, r.Reference.Relation} {
		if name != "" {
			out = append(out, name)
		}
	}
	for _, q := range []string{r.Reference.Select, r.Body} {
		if q != "" {
			out = append(out, tsql.TableRefs(q)...)
		}
	}
	return out
}
