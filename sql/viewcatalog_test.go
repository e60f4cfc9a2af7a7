package sql_test

import (
	"context"
	"errors"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestViewCatalog reads, in one query, the views and tables a swap looks at: named ones and
// those starting with a prefix, with the relation each view reads, and nothing else.
func TestViewCatalog(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}}
		for _, table := range []string{"orders__v1", "orders__v2", "ordersx", "other"} {
			if err := e.CreateTable(ctx, table, cols, "", []string{"id"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v2"}, {View: "other_view", Table: "other"}}); err != nil {
			t.Fatal(err)
		}
		got, err := tsql.ViewCatalog(ctx, e, []string{"orders", "missing"}, []string{"orders__v"})
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
		want := []tsql.CatalogEntry{
			{Relation: tsql.Relation{Name: "orders", View: true}, Source: "orders__v2"},
			{Relation: tsql.Relation{Name: "orders__v1"}},
			{Relation: tsql.Relation{Name: "orders__v2"}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("catalog (-want +got):\n%s", diff)
		}
	})
}

// TestRepointNoted: DuckDB checks, repoints and notes views in one transaction. The note comes
// back with the catalog (quotes and backslashes intact); a view that reads something else than
// expected stops the whole repoint with ErrViewMoved and nothing changes; a view replaced or
// renamed outside trueup is read from its definition, not from a note it lost or carried along.
func TestRepointNoted(t *testing.T) {
	ctx := context.Background()
	e := sqltest.Open(t, sqltest.DuckDBURL(t))
	nr, ok := e.(tsql.NotedRepointer)
	if !ok {
		t.Fatal("the DuckDB engine does not repoint with notes")
	}
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}}
	for _, table := range []string{"a__v1", "a__v2", "b__v1", "b__v2"} {
		if err := e.CreateTable(ctx, table, cols, "", []string{"id"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "a", Table: "a__v1"}}); err != nil {
		t.Fatal(err)
	}
	catalog := func() map[string]tsql.CatalogEntry {
		t.Helper()
		got, err := tsql.ViewCatalog(ctx, e, []string{"a", "b", "c"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]tsql.CatalogEntry{}
		for _, c := range got {
			out[c.Name] = c
		}
		return out
	}
	note := `{"actor":"O'Brien","reason":"C:\new\table'); DROP TABLE a__v1; -- ? $1"}`
	point := func(view, from, to string) tsql.NotedPoint {
		return tsql.NotedPoint{ViewPoint: tsql.ViewPoint{View: view, Table: to}, From: from, Note: note + view}
	}

	// b does not exist yet: From "" says so.
	if err := nr.RepointNoted(ctx, []tsql.NotedPoint{point("a", "a__v1", "a__v2"), point("b", "", "b__v1")}); err != nil {
		t.Fatal(err)
	}
	want := map[string]tsql.CatalogEntry{
		"a": {Relation: tsql.Relation{Name: "a", View: true}, Source: "a__v2", Note: note + "a"},
		"b": {Relation: tsql.Relation{Name: "b", View: true}, Source: "b__v1", Note: note + "b"},
	}
	if diff := cmp.Diff(want, catalog()); diff != "" {
		t.Fatalf("after the noted repoint (-want +got):\n%s", diff)
	}

	// Expecting a to read a__v1 (it reads a__v2): refused, and b is not moved either.
	err := nr.RepointNoted(ctx, []tsql.NotedPoint{point("b", "b__v1", "b__v2"), point("a", "a__v1", "a__v2")})
	if !errors.Is(err, tsql.ErrViewMoved) {
		t.Fatalf("stale expectation: %v, want ErrViewMoved", err)
	}
	// Expecting c to exist, and a version table that does not exist: refused too.
	if err := nr.RepointNoted(ctx, []tsql.NotedPoint{point("c", "c__v1", "c__v2")}); !errors.Is(err, tsql.ErrViewMoved) {
		t.Fatalf("missing view: %v, want ErrViewMoved", err)
	}
	if err := nr.RepointNoted(ctx, []tsql.NotedPoint{point("b", "b__v1", "b__v2"), point("a", "a__v2", "a__v9")}); err == nil {
		t.Fatal("repoint to a missing table went through")
	}
	// A table where a view would go: the repoint fails and changes nothing either.
	if err := e.CreateTable(ctx, "c", cols, "", []string{"id"}); err != nil {
		t.Fatal(err)
	}
	if err := nr.RepointNoted(ctx, []tsql.NotedPoint{point("b", "b__v1", "b__v2"), point("c", "", "a__v1")}); err == nil {
		t.Fatal("repoint over a table went through")
	}
	if err := e.DropTable(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, catalog()); diff != "" {
		t.Fatalf("a refused repoint changed something (-want +got):\n%s", diff)
	}

	// Replaced outside trueup: the note is gone with the old view; renamed: the note names
	// another view. Both are read from their definitions.
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "a", Table: "a__v1"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Exec(ctx, `ALTER VIEW b RENAME TO c`); err != nil {
		t.Fatal(err)
	}
	want = map[string]tsql.CatalogEntry{
		"a": {Relation: tsql.Relation{Name: "a", View: true}, Source: "a__v1"},
		"c": {Relation: tsql.Relation{Name: "c", View: true}, Source: "b__v1"},
	}
	if diff := cmp.Diff(want, catalog()); diff != "" {
		t.Fatalf("views changed outside trueup (-want +got):\n%s", diff)
	}
}

// TestRepointNotedRefusesAMovedCarry: a carry planned against the destination partition as it
// was refuses, inside the repoint's transaction, once a writer has changed that partition since
// (its rows would be deleted by the replace): ErrCarryMoved, the view not moved, the writer's row
// kept. Planned against the partition as it is, the carry and the repoint go through.
func TestRepointNotedRefusesAMovedCarry(t *testing.T) {
	ctx := context.Background()
	e := sqltest.Open(t, sqltest.DuckDBURL(t))
	nr := e.(tsql.NotedRepointer)
	for _, q := range []string{
		"CREATE TABLE o__v1 AS SELECT CAST('2026-07-10' AS DATE) AS d, range AS id FROM range(3)",
		"CREATE TABLE o__v2 AS SELECT CAST('2026-07-10' AS DATE) AS d, range AS id FROM range(1)",
	} {
		if err := e.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "o", Table: "o__v1"}}); err != nil {
		t.Fatal(err)
	}
	w := tsql.Window{Column: "d", Type: tsql.TypeDate, Start: day("2026-07-10"), End: day("2026-07-11")}
	measure := func() *tsql.PartMark {
		t.Helper()
		m, err := tsql.MeasurePartitions(ctx, e, "o__v2", "d", "day", []tsql.Window{w})
		if err != nil {
			t.Fatal(err)
		}
		pm := m[day("2026-07-10")]
		return &pm
	}
	count := func(q string) int64 {
		t.Helper()
		res, err := e.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return tsql.AsInt64(res.Rows[0][0])
	}
	was := measure()
	if err := e.Exec(ctx, "INSERT INTO o__v2 VALUES (CAST('2026-07-10' AS DATE), 99)"); err != nil { // a writer still writing v2
		t.Fatal(err)
	}
	point := tsql.NotedPoint{ViewPoint: tsql.ViewPoint{View: "o", Table: "o__v2"}, From: "o__v1", Note: "{}",
		Carry: []tsql.Carry{{Into: "o__v2", From: "o__v1", Window: w, IntoWas: was}}}
	if err := nr.RepointNoted(ctx, []tsql.NotedPoint{point}); !errors.Is(err, tsql.ErrCarryMoved) {
		t.Fatalf("carry planned before the write: %v, want ErrCarryMoved", err)
	}
	if src, _ := e.ViewSource(ctx, "o"); src != "o__v1" || count("SELECT count(*) FROM o__v2 WHERE id = 99") != 1 {
		t.Fatalf("a refused carry changed something: o reads %s", src)
	}
	point.Carry[0].IntoWas = measure()
	if err := nr.RepointNoted(ctx, []tsql.NotedPoint{point}); err != nil {
		t.Fatal(err)
	}
	if src, _ := e.ViewSource(ctx, "o"); src != "o__v2" || count("SELECT count(*) FROM o") != 3 {
		t.Errorf("after the carry o reads %s with %d rows, want o__v2 with v1's 3", src, count("SELECT count(*) FROM o"))
	}
}
