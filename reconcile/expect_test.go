package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/fault"
	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

func TestParseExpectations(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string // per clause: where | body
	}{
		{"backfill_header", "expect: inside 2026-07-10..2026-07-18 rows +0..6%, sum(amount) +0..6%; outside identical",
			[]string{"inside 2026-07-10..2026-07-18 | rows +0..+6% ; sum(amount) +0..+6%", "outside | identical"}},
		{"scope_words", "inside scope rows +0..6%, sum( amount ) 0..6%; outside scope identical",
			[]string{"inside scope | rows +0..+6% ; sum(amount) +0..+6%", "outside scope | identical"}},
		{"several_ranges_and_counts", "inside 2026-07-10..2026-07-12, 2026-07-15 removed 0, added 0..100; everywhere changed -0..0",
			[]string{"inside 2026-07-10..2026-07-12 2026-07-15..2026-07-15 | removed +0 ; added +0..+100", "everywhere | changed +0"}},
		{"multi_line_file", "# the dedup fix\ninside 2026-07-10..2026-07-18 rows -1%..+6%\n; outside any\n",
			[]string{"inside 2026-07-10..2026-07-18 | rows -1..+6%", "outside | any"}},
		{"no_where", "rows 0..2%", []string{"everywhere | rows +0..+2%"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := reconcile.ParseExpectations(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range e.Clauses {
				where := c.Where.Kind
				if c.Where.Scope {
					where += " scope"
				}
				for _, r := range c.Where.Ranges {
					where += " " + r.From + ".." + r.To
				}
				var body []string
				switch {
				case c.Same:
					body = []string{"identical"}
				case c.Any:
					body = []string{"any"}
				}
				for _, b := range c.Bounds {
					body = append(body, b.String())
				}
				got = append(got, where+" | "+strings.Join(body, " ; "))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("clauses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseExpectationsErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "expect:", "nothing expected"},
		{"inside_nothing", "inside rows +0..6%", "inside what"},
		{"unknown_metric", "inside 2026-07-10 bytes +1%", `unknown measure "bytes"`},
		{"no_change", "inside 2026-07-10 rows", "how much"},
		{"bad_number", "rows +a..6%", "want LO..HI"},
		{"reversed", "rows 6..0%", "low end is above"},
		{"junk_after_identical", "outside identical please", `unexpected "please"`},
		{"half_range", "inside 2026-07-10.. rows 0", "want FROM..TO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reconcile.ParseExpectations(tc.text)
			if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want invalid mentioning %q", err, tc.want)
			}
		})
	}
}

// backfillRows are 20 orders a day from 2026-07-08 to 2026-07-20; grow adds extra orders on the
// days inside the dedup bug's window, as the fixed pipeline would.
func backfillRows(grow func(day string) int) [][]any {
	var rows [][]any
	for d := day("2026-07-08"); !d.After(day("2026-07-20")); d = d.AddDate(0, 0, 1) {
		n := 20
		if grow != nil {
			n += grow(d.Format("2006-01-02"))
		}
		for i := 0; i < n; i++ {
			rows = append(rows, []any{int64(d.YearDay())*1000 + int64(i), d, fmt.Sprintf("c%d", i%7), 100.0 + float64(i), nil})
		}
	}
	return rows
}

func TestExpectations(t *testing.T) {
	const header = "expect: inside 2026-07-10..2026-07-18 rows +0..6%, sum(amount) +0..6%; outside identical"
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		run := func(t *testing.T, newRows [][]any, text string) *reconcile.Result {
			t.Helper()
			for _, tb := range []string{"old_t", "new_t"} {
				e.DropTable(ctx, tb)
			}
			load(t, e, "old_t", orderCols, orderNames, backfillRows(nil))
			load(t, e, "new_t", orderCols, orderNames, newRows)
			ex, err := reconcile.ParseExpectations(text)
			if err != nil {
				t.Fatal(err)
			}
			s := spec(e)
			s.Measures = nil // sum(amount) in the expectations makes it a measure
			s.Expect = ex
			return diff(t, s)
		}
		verdicts := func(r *reconcile.Result) map[string][]string {
			out := map[string][]string{}
			for _, p := range r.Partitions {
				out[p.Verdict] = append(out[p.Verdict], p.Partition[8:])
			}
			return out
		}

		t.Run("met", func(t *testing.T) {
			// One more order on each day of the window: +5%, amounts +5.5%.
			r := run(t, backfillRows(func(d string) int {
				if d >= "2026-07-10" && d <= "2026-07-18" {
					return 1
				}
				return 0
			}), header)
			want := map[string][]string{
				"unchanged": {"08", "09", "19", "20"},
				"expected":  {"10", "11", "12", "13", "14", "15", "16", "17", "18"},
			}
			if diff := cmp.Diff(want, verdicts(r)); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if !r.ExpectationsMet || !r.Differs {
				t.Errorf("met=%v differs=%v", r.ExpectationsMet, r.Differs)
			}
			p := r.Partition("2026-07-12")
			if *p.PctChange != 5 || p.Rows.Added != 1 || p.Measures["amount"].Delta != 120 {
				t.Errorf("2026-07-12: pct %v rows %+v amount %+v", *p.PctChange, p.Rows, p.Measures["amount"])
			}
		})

		t.Run("violated_inside_and_outside", func(t *testing.T) {
			// Two more orders on 07-12 (+10%), and one on 07-19, outside the window.
			r := run(t, backfillRows(func(d string) int {
				switch {
				case d == "2026-07-12":
					return 2
				case d == "2026-07-19":
					return 1
				case d >= "2026-07-10" && d <= "2026-07-18":
					return 1
				}
				return 0
			}), header)
			if got := verdicts(r)["unexpected"]; !cmp.Equal(got, []string{"12", "19"}) {
				t.Errorf("unexpected partitions: %v", got)
			}
			if r.ExpectationsMet {
				t.Error("expectations met despite a 10% rise and a change outside")
			}
			want := []string{"rows +0..+6%: changed by +10.0%", "sum(amount) +0..+6%: changed by +11.0%"}
			if diff := cmp.Diff(want, r.Partition("2026-07-12").Reasons); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
			if got := r.Partition("2026-07-19").Reasons; len(got) != 1 || !strings.HasPrefix(got[0], "expected identical: rows 20 → 21, 1 added") {
				t.Errorf("outside reasons: %v", got)
			}
		})

		t.Run("unchanged_where_a_rise_was_required", func(t *testing.T) {
			r := run(t, backfillRows(nil), "inside 2026-07-10 rows +1..6%; outside identical")
			if p := r.Partition("2026-07-10"); p.Verdict != reconcile.VerdictUnexpected || r.ExpectationsMet {
				t.Errorf("no rise where one was required: %s %v", p.Verdict, p.Reasons)
			}
		})

		t.Run("scope_from_the_caller", func(t *testing.T) {
			for _, tb := range []string{"old_t", "new_t"} {
				e.DropTable(ctx, tb)
			}
			load(t, e, "old_t", orderCols, orderNames, backfillRows(nil))
			load(t, e, "new_t", orderCols, orderNames, backfillRows(func(d string) int {
				if d == "2026-07-11" {
					return 1
				}
				return 0
			}))
			ex, _ := reconcile.ParseExpectations("inside scope added 0..1, removed 0, changed 0; outside scope identical")
			s := spec(e)
			s.Expect = ex
			if _, err := reconcile.Diff(ctx, s); !errors.Is(err, fault.ErrInvalid) {
				t.Errorf("scope without a scope: %v", err)
			}
			s.Scope = []tsql.Window{{Column: "d", Type: tsql.TypeDate, Start: day("2026-07-11"), End: day("2026-07-12")}}
			r := diff(t, s)
			if !r.ExpectationsMet || r.Partition("2026-07-11").Verdict != reconcile.VerdictExpected {
				t.Errorf("met=%v overview=%v", r.ExpectationsMet, overview(r))
			}
		})
	})
}
