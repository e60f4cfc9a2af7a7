// Package views owns logical tables: a view that readers query over one physical version
// <name>__v<N>. It lists versions, repoints views atomically (swap, rollback), gates swaps on
// validation, retires old versions and recovers from crashes between intent and outcome.
package views

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"

	tsql "trueup/sql"
)

// Table is a logical table found in a target.
type Table struct {
	Name     string
	Target   string // target name
	Live     string // live version, e.g. "v1"
	Versions []string
	Rows     int64 // rows in the live version
}

var versionRe = regexp.MustCompile(`^(.+)__v(\d+)$`)

// ParseVersion splits a physical table name into its logical name and version number.
func ParseVersion(physical string) (name string, n int, ok bool) {
	m := versionRe.FindStringSubmatch(physical)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return "", 0, false
	}
	return m[1], n, true
}

// Physical names version n of a logical table.
func Physical(name string, n int) string { return name + "__v" + strconv.Itoa(n) }

// List finds the logical tables of one target: views that read from a <view>__v<N> table.
func List(ctx context.Context, target string, e tsql.Engine) ([]Table, error) {
	rels, err := e.Relations(ctx)
	if err != nil {
		return nil, fmt.Errorf("views: list %s: %w", target, err)
	}
	versions := map[string][]int{}
	for _, r := range rels {
		if name, n, ok := ParseVersion(r.Name); ok && !r.View {
			versions[name] = append(versions[name], n)
		}
	}
	var out []Table
	for _, r := range rels {
		if !r.View || len(versions[r.Name]) == 0 {
			continue
		}
		src, err := e.ViewSource(ctx, r.Name)
		if err != nil {
			continue // a view of another shape is not a logical table
		}
		name, n, ok := ParseVersion(src)
		if !ok || name != r.Name {
			continue
		}
		t := Table{Name: r.Name, Target: target, Live: "v" + strconv.Itoa(n)}
		vs := versions[r.Name]
		sort.Ints(vs)
		for _, v := range vs {
			t.Versions = append(t.Versions, "v"+strconv.Itoa(v))
		}
		res, err := e.Query(ctx, "SELECT count(*) FROM "+e.Dialect().QuoteRelation(src))
		if err != nil {
			return nil, fmt.Errorf("views: count %s: %w", src, err)
		}
		t.Rows = tsql.AsInt64(res.Rows[0][0])
		out = append(out, t)
	}
	return out, nil
}
