package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/ledger/ledgertest"
	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestNonFiniteTotals: a float column holding NaN or an infinity has a NaN or infinite total.
// The diff judges it (NaN and NaN, or an infinity and itself, are no change; a total that
// becomes infinite or leaves NaN breaks a bound), prints it, writes it in JSON by name, and
// saves it to the ledger, from which it loads with the same totals. JSON has no NaN: the
// diff used to end in "json: unsupported value: NaN" with nothing printed or kept.
func TestNonFiniteTotals(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		nan, inf := math.NaN(), math.Inf(1)
		row := func(id int64, d string, score float64) []any {
			return []any{id, day(d), "c", 10.0, score}
		}
		load(t, e, "old_t", orderCols, orderNames, [][]any{
			row(1, "2026-07-10", nan), row(2, "2026-07-10", 1),
			row(3, "2026-07-11", inf), row(4, "2026-07-11", 1),
			row(5, "2026-07-12", 1), row(6, "2026-07-12", 1),
			row(7, "2026-07-13", nan), row(8, "2026-07-13", 1),
		})
		load(t, e, "new_t", orderCols, orderNames, [][]any{
			row(1, "2026-07-10", nan), row(2, "2026-07-10", 1), // NaN is NaN: unchanged
			row(3, "2026-07-11", inf), row(4, "2026-07-11", 2), // +Inf both sides: the total did not move
			row(5, "2026-07-12", 1), row(6, "2026-07-12", -inf), // 2 → -Inf
			row(7, "2026-07-13", 3), row(8, "2026-07-13", 1), // NaN → 4
		})
		s := spec(e)
		s.Measures = []string{"score"}
		var err error
		s.Expect, err = reconcile.ParseExpectations("inside 2026-07-11 sum(score) 0, changed 0..1; inside 2026-07-12..2026-07-13 sum(score) -50..50%; outside identical")
		if err != nil {
			t.Fatal(err)
		}
		r := diff(t, s)

		type judged struct {
			Verdict string
			Reasons []string
			Totals  string // old new delta pct_change_exact
			JSON    string // the measure as --format json writes it
		}
		judge := func(r *reconcile.Result) map[string]judged {
			out := map[string]judged{}
			for _, p := range r.Partitions {
				m := p.Measures["score"]
				js, err := json.Marshal(m)
				if err != nil {
					t.Errorf("%s: %v", p.Partition, err)
				}
				out[p.Partition] = judged{p.Verdict, p.Reasons, fmt.Sprint(m.Old, m.New, m.Delta, *m.PctChangeExact), string(js)}
			}
			return out
		}
		want := map[string]judged{
			"2026-07-10": {"unchanged", nil, "NaN NaN 0 0",
				`{"old":"NaN","new":"NaN","delta":0,"pct_change":0,"pct_change_exact":0}`},
			"2026-07-11": {"expected", nil, "+Inf +Inf 0 0",
				`{"old":"+Inf","new":"+Inf","delta":0,"pct_change":0,"pct_change_exact":0}`},
			"2026-07-12": {"unexpected", []string{"sum(score) -50..+50%: changed by -Inf%"}, "2 -Inf -Inf -Inf",
				`{"old":2,"new":"-Inf","delta":"-Inf","pct_change":"-Inf","pct_change_exact":"-Inf"}`},
			"2026-07-13": {"unexpected", []string{"sum(score) -50..+50%: changed from NaN to 4"}, "NaN 4 NaN NaN",
				`{"old":"NaN","new":4,"delta":"NaN","pct_change":"NaN","pct_change_exact":"NaN"}`},
		}
		if diff := cmp.Diff(want, judge(r)); diff != "" {
			t.Errorf("partitions (-want +got):\n%s", diff)
		}

		r.ElapsedMS = 0
		var text bytes.Buffer
		if err := r.WriteText(&text, reconcile.TextOptions{}); err != nil {
			t.Fatal(err)
		}
		_, printed, _ := strings.Cut(text.String(), "\n\n") // after the header naming the temporary file
		wantText := `partition   old_count  new_count  delta  pct_change  score_pct  checksum  verdict
2026-07-11          2          2      0         0.0        0.0  differs   expected
2026-07-12          2          2      0         0.0       -Inf  differs   unexpected
2026-07-13          2          2      0         0.0        NaN  differs   unexpected
4 partitions: 1 unchanged, 1 expected, 2 unexpected

unexpected:
  2026-07-12  sum(score) -50..+50%: changed by -Inf%
  2026-07-13  sum(score) -50..+50%: changed from NaN to 4

rows: 0 added, 0 removed, 3 changed, 0 duplicate keys
changed columns: score 3
samples:
  changed  2026-07-11  id=4: score 1 → 2
  changed  2026-07-12  id=6: score 1 → -Inf
  changed  2026-07-13  id=7: score NaN → 3
expectations: NOT met (inside 2026-07-11 sum(score) 0, changed 0..1; inside 2026-07-12..2026-07-13 sum(score) -50..50%; outside identical)
rows transferred: 6   took 0.00s
`
		if diff := cmp.Diff(wantText, printed); diff != "" {
			t.Errorf("text (-want +got):\n%s", diff)
		}

		store := reconcile.NewStore(ledgertest.Open(t))
		id, err := store.Save(ctx, r, "cli", "ann")
		if err != nil {
			t.Fatalf("save: %v", err)
		}
		got, err := store.Get(ctx, id)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		if diff := cmp.Diff(want, judge(got)); diff != "" {
			t.Errorf("loaded partitions (-want +got):\n%s", diff)
		}
		r.Label = "cli"
		saved, _ := json.Marshal(r)
		loaded, _ := json.Marshal(got)
		if string(saved) != string(loaded) {
			t.Errorf("stored diff differs from the one saved:\nsaved  %s\nloaded %s", saved, loaded)
		}
	})
}
