package views

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	tsql "trueup/sql"
)

// Relation names a version of a logical table as a relation readers can query:
// Relation("orders", "v1") is "orders__v1". It does not check that the version is retained;
// Service.Retained does.
func Relation(table, version string) (string, error) {
	n, err := ParseVersionArg(table, version)
	if err != nil {
		return "", err
	}
	return Physical(table, n), nil
}

// Retained returns the relation of a retained version of table: one the ledger has not retired
// and whose table exists.
func (s *Service) Retained(ctx context.Context, table, version string) (string, error) {
	n, err := ParseVersionArg(table, version)
	if err != nil {
		return "", err
	}
	st, vs, err := s.sync(ctx, table, false)
	if err != nil {
		return "", err
	}
	for _, v := range vs {
		if v.N != n {
			continue
		}
		if v.State == StateRetired || !st.physical[n] {
			return "", refusef("%s v%d was retired: it can no longer be queried", table, n)
		}
		return v.Physical(), nil
	}
	return "", notFoundf("%s has no version v%d in target %s", table, n, s.target)
}

// AsOf rewrites a read-only query written against logical tables so that each table named in
// at reads the given retained version instead of its live one ("what would this report show
// with v2 of orders?"). Tables not in at keep reading their live version. A table may be named
// qualified by the current schema or database (main.orders, db.orders); one qualified otherwise
// (raw.orders) is another table and is read as written.
func (s *Service) AsOf(ctx context.Context, query string, at map[string]string) (string, error) {
	q, err := tsql.ReadOnlySelect(query)
	if err != nil {
		return "", fmt.Errorf("views: as of: %w", err)
	}
	to := map[string]string{}
	for _, table := range slices.Sorted(maps.Keys(at)) {
		rel, err := s.Retained(ctx, table, at[table])
		if err != nil {
			return "", err
		}
		to[table] = rel
	}
	if len(to) == 0 {
		return q, nil
	}
	current, err := tsql.CurrentQualifiers(ctx, s.engine)
	if err != nil {
		return "", fmt.Errorf("views: as of: %w", err)
	}
	return tsql.RewriteTables(s.engine.Dialect(), q, to, current), nil
}

// QueryAsOf runs query as of the versions in at (see AsOf).
func (s *Service) QueryAsOf(ctx context.Context, query string, at map[string]string, args ...any) (*tsql.Result, error) {
	q, err := s.AsOf(ctx, query, at)
	if err != nil {
		return nil, err
	}
	res, err := s.engine.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("views: as of %v: %w", at, err)
	}
	return res, nil
}

// Sides returns the versions of a publish's tables before and after it, ready for AsOf: how a
// notice compares an exposure on the old and the new numbers.
func Sides(p Publish) (before, after map[string]string) {
	before, after = map[string]string{}, map[string]string{}
	for _, c := range p.Changes {
		if c.From != 0 {
			before[c.Table] = fmt.Sprintf("v%d", c.From)
		}
		after[c.Table] = fmt.Sprintf("v%d", c.To)
	}
	return before, after
}

// PlanSides is Sides for a plan not yet carried out.
func PlanSides(p Plan) (before, after map[string]string) { return Sides(Publish{Changes: p.Changes}) }

// describeAt writes at as "orders v2, daily_revenue v1".
func describeAt(at map[string]string) string {
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(at)) {
		parts = append(parts, t+" "+at[t])
	}
	return strings.Join(parts, ", ")
}
