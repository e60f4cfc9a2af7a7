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
		if t.Rows, err = rowCount(ctx, e, src); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// engineState is what the engine says about one logical table.
type engineState struct {
	live     int          // version the view reads; 0 when there is no view
	physical map[int]bool // version tables that exist
	foreign  string       // what the view reads when that is not a version of the table
}

// foreignErr refuses to work on a table whose view reads something that is not one of its
// versions.
func (st engineState) foreignErr(table string) error {
	if st.foreign == "" {
		return nil
	}
	return refusef("view %s reads %s, which is not a version of %s (%s__v<N>)", table, st.foreign, table, table)
}

// inspect reads the views and version tables of logical tables from the engine, in one catalog
// read for all of them (sql.ViewCatalog): every statement of a swap counts while readers load
// the engine.
func (s *Service) inspect(ctx context.Context, tables ...string) (map[string]engineState, error) {
	out := map[string]engineState{}
	prefixes := make([]string, len(tables))
	for i, t := range tables {
		out[t] = engineState{physical: map[int]bool{}}
		prefixes[i] = t + "__v"
	}
	rels, err := tsql.ViewCatalog(ctx, s.engine, tables, prefixes)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	for _, r := range rels {
		if st, ok := out[r.Name]; ok && r.View {
			if r.SourceErr != nil {
				return nil, fmt.Errorf("views: view %s: %w", r.Name, r.SourceErr)
			}
			if name, n, ok := ParseVersion(r.Source); ok && name == r.Name {
				st.live = n
			} else {
				st.foreign = r.Source
			}
			out[r.Name] = st
		}
		if name, n, ok := ParseVersion(r.Name); ok && !r.View {
			if st, ok := out[name]; ok {
				st.physical[n] = true
			}
		}
	}
	return out, nil
}

// repairMove is one version state the ledger must change to agree with the engine.
type repairMove struct {
	n        int
	from, to string
}

// repairMoves lists what repair would change for one table.
func repairMoves(st engineState, vs []Version) []repairMove {
	var moves []repairMove
	for _, v := range vs {
		switch {
		case v.N == st.live && v.State != StateLive:
			moves = append(moves, repairMove{v.N, v.State, StateLive})
		case v.N != st.live && v.State == StateLive:
			moves = append(moves, repairMove{v.N, v.State, StatePrevious})
		case !st.physical[v.N] && v.State != StateRetired && v.State != StateBuilding:
			moves = append(moves, repairMove{v.N, v.State, StateRetired})
		}
	}
	return moves
}

// agrees reports whether the engine says about a table what the ledger does: the view reads one
// of its versions, and sync would neither adopt nor repair anything.
func agrees(st engineState, vs []Version) bool {
	if st.foreign != "" || len(repairMoves(st, vs)) > 0 {
		return false
	}
	known := map[int]bool{}
	for _, v := range vs {
		known[v.N] = true
	}
	for n := range st.physical {
		if !known[n] {
			return false
		}
	}
	return true
}

// actual reads which version each changed table's view reads now (-1: something that is not
// one of its versions).
func (s *Service) actual(ctx context.Context, changes []Change) (map[string]int, error) {
	tables := make([]string, len(changes))
	for i, c := range changes {
		tables[i] = c.Table
	}
	sts, err := s.inspect(ctx, tables...)
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	for _, t := range tables {
		at[t] = sts[t].live
		if sts[t].foreign != "" {
			at[t] = -1
		}
	}
	return at, nil
}

type where int

const (
	allFrom where = iota
	allTo
	mixed // some at From, some at To, none elsewhere
	elsewhere
)

// classify says where a publish's views are: all still at From, all at To, a mix of the two, or
// somewhere neither (changed by someone else).
func classify(changes []Change, at map[string]int) where {
	from, to := 0, 0
	for _, c := range changes {
		switch at[c.Table] {
		case c.To:
			to++
		case c.From:
			from++
		default:
			return elsewhere
		}
	}
	switch {
	case to == len(changes):
		return allTo
	case from == len(changes):
		return allFrom
	}
	return mixed
}

// confirmed reports whether the engine's catalog (one read of the tables changes move) confirms a
// publish of changes planned from the ledger's versions vss alone: about each table, the engine
// says what the ledger does (agrees), its view reads the version the ledger has live, and the
// version it moves to exists. Then planning from what the engine says would make the same plan.
// A catalog that cannot be read confirms nothing: the publish is then planned from the engine.
func (s *Service) confirmed(ctx context.Context, changes []Change, vss map[string][]Version) bool {
	tables := make([]string, len(changes))
	for i, c := range changes {
		tables[i] = c.Table
	}
	sts, err := s.inspect(ctx, tables...)
	if err != nil {
		return false
	}
	for _, c := range changes {
		st, live := sts[c.Table], 0
		for _, v := range vss[c.Table] {
			if v.State == StateLive {
				live = v.N // as recordedStates reads it
			}
		}
		if !agrees(st, vss[c.Table]) || st.live != live || !st.physical[c.To] {
			return false
		}
	}
	return true
}

// rowCount is how many rows relation holds now.
func rowCount(ctx context.Context, e tsql.Engine, relation string) (int64, error) {
	res, err := e.Query(ctx, "SELECT count(*) FROM "+e.Dialect().QuoteRelation(relation))
	if err != nil {
		return 0, fmt.Errorf("views: count %s: %w", relation, err)
	}
	return tsql.AsInt64(res.Rows[0][0]), nil
}
