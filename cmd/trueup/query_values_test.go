package main

import (
	"context"
	"strings"
	"testing"

	tsql "trueup/sql"
)

// `trueup query` prints a DECIMAL as its digits, in text, CSV and JSON alike: 1234567890123456.78
// is not the double 1234567890123456.8, and a cent changed on it shows.
func TestQueryDecimalsExact(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if code, out, errs := cli(t, "init", "--target", "duckdb:wh.duckdb", "--create"); code != exitOK {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errs)
	}
	e, err := tsql.Open(context.Background(), "duckdb:wh.duckdb")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Exec(context.Background(), "CREATE TABLE money AS SELECT * FROM (VALUES (1, CAST('1234567890123456.78' AS DECIMAL(18,2))), (2, CAST('-0.50' AS DECIMAL(18,2)))) t(id, amount)"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	const q = "SELECT id, amount FROM money ORDER BY id"
	for format, want := range map[string][]string{
		"csv":   {"1,1234567890123456.78", "2,-0.5"},
		"json":  {`1234567890123456.78`, `-0.5`},
		"table": {"1234567890123456.78", "-0.5"},
	} {
		code, out, errs := cli(t, "query", q, "--format", format)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s", format, code, errs)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s output lacks %q:\n%s", format, w, out)
			}
		}
		if strings.Contains(out, "1234567890123456.8") && !strings.Contains(out, "1234567890123456.78") || strings.Contains(out, "e+15") {
			t.Errorf("%s output rounds the decimal:\n%s", format, out)
		}
	}
}

// `trueup query` prints a TIMESTAMP as a timestamp even at midnight, with its fraction when it
// has one, and a DATE as a date: one column reads one way.
func TestQueryTimestampsStayTimestamps(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if code, out, errs := cli(t, "init", "--target", "duckdb:wh.duckdb", "--create"); code != exitOK {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errs)
	}
	e, err := tsql.Open(context.Background(), "duckdb:wh.duckdb")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Exec(context.Background(), "CREATE TABLE times AS SELECT * FROM (VALUES (1, TIMESTAMP '2026-01-01 00:00:00', DATE '2026-01-01'), (2, TIMESTAMP '2026-01-01 00:00:09.5', DATE '2026-01-02')) t(id, ts, d)"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	code, out, errs := cli(t, "query", "SELECT id, ts, d FROM times ORDER BY id", "--format", "csv")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for _, w := range []string{"1,2026-01-01 00:00:00,2026-01-01\n", "2,2026-01-01 00:00:09.5,2026-01-02\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
