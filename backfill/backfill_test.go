package backfill_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/backfill"
	"trueup/fault"
	"trueup/fixtures"
	"trueup/ledger"
	"trueup/ledger/ledgertest"
	"trueup/reconcile"
	"trueup/rules"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// demo is the demo project and warehouse in one engine, with a ledger.
type demo struct {
	dir    string
	engine tsql.Engine
	ledger *ledger.Ledger
	runner *backfill.Runner
}

const demoRows = 50000

func newDemo(t *testing.T, e tsql.Engine) *demo {
	t.Helper()
	ctx := context.Background()
	if err := fixtures.Warehouse(ctx, e, fixtures.Options{Rows: demoRows, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := fixtures.WriteProject(dir, e.Info().Target); err != nil {
		t.Fatal(err)
	}
	l := ledgertest.OpenAt(t, filepath.Join(dir, "state.duckdb"))
	d := &demo{dir: dir, engine: e, ledger: l}
	d.runner = d.newRunner(t, e)
	return d
}

// newRunner wires a runner over the demo project, the way cmd/trueup does.
func (d *demo) newRunner(t *testing.T, e tsql.Engine, opts ...backfill.Option) *backfill.Runner {
	t.Helper()
	return d.runnerSaving(t, e, reconcile.NewStore(d.ledger), opts...)
}

// files loads the demo's backfill files and its rules on e, as they are in its folder now.
func (d *demo) files(t *testing.T, e tsql.Engine) (*backfill.Set, *rules.Set, rules.TargetMap) {
	t.Helper()
	set, err := backfill.Load(os.DirFS(filepath.Join(d.dir, "backfills")), "backfills")
	if err != nil {
		t.Fatal(err)
	}
	targets := rules.TargetMap{Default: "warehouse", Engines: map[string]tsql.Engine{"warehouse": e}}
	rs, err := rules.Load(context.Background(), os.DirFS(filepath.Join(d.dir, "rules")), "rules", targets)
	if err != nil {
		t.Fatal(err)
	}
	return set, rs, targets
}

// runnerSaving is newRunner with validation's diffs saved to diffs.
func (d *demo) runnerSaving(t *testing.T, e tsql.Engine, diffs backfill.DiffStore, opts ...backfill.Option) *backfill.Runner {
	t.Helper()
	set, rs, targets := d.files(t, e)
	v := backfill.Validator{Rules: rs, Runner: rules.NewRunner(targets), Diffs: diffs}
	return backfill.NewRunner(backfill.Planner{Set: set, Engine: e, Target: "warehouse", Rules: v}, backfill.Store{L: d.ledger}, v, opts...)
}

var bugDays = []string{"2026-07-10", "2026-07-11", "2026-07-12", "2026-07-13", "2026-07-14", "2026-07-15", "2026-07-16", "2026-07-17", "2026-07-18"}

// soleBackfill is a runner on target warehouse of e for the one backfill the file at path with
// text declares, with a ledger of its own, and the store of its diffs.
func soleBackfill(t *testing.T, e tsql.Engine, path, text string) (*backfill.Runner, *reconcile.Store) {
	t.Helper()
	b, ps := backfill.Parse(path, text)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	l := ledgertest.OpenAt(t, filepath.Join(t.TempDir(), "state.duckdb"))
	diffs := reconcile.NewStore(l)
	r := backfill.NewRunner(backfill.Planner{Set: backfill.NewSet(b), Engine: e, Target: "warehouse"},
		backfill.Store{L: l}, backfill.Validator{Diffs: diffs})
	return r, diffs
}

// runToEnd starts a run of backfill name with opt and executes it to its end, failing the test
// when either is refused; the caller judges how it ended.
func runToEnd(t *testing.T, ctx context.Context, r *backfill.Runner, name string, opt backfill.RunOptions) *backfill.Run {
	t.Helper()
	run, err := r.Start(ctx, name, opt)
	if err != nil {
		t.Fatal(err)
	}
	done, err := r.Execute(ctx, run.ID, backfill.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return done
}

// checksum is the portable hash sum and row count of a relation.
func checksum(t *testing.T, e tsql.Engine, rel string) (uint64, int64) {
	t.Helper()
	ctx := context.Background()
	cols, err := e.Columns(ctx, rel)
	if err != nil {
		t.Fatal(err)
	}
	d := e.Dialect()
	res, err := e.Query(ctx, "SELECT "+d.HashSum(d.RowHash(cols, tsql.HashOptions{Portable: true}))+", count(*) FROM "+d.QuoteRelation(rel))
	if err != nil {
		t.Fatal(err)
	}
	return tsql.AsUint64(res.Rows[0][0]), tsql.AsInt64(res.Rows[0][1])
}

func duplicateKeys(t *testing.T, e tsql.Engine, rel string) int64 {
	t.Helper()
	res, err := e.Query(context.Background(), "SELECT count(*) FROM (SELECT order_id FROM "+e.Dialect().QuoteRelation(rel)+" GROUP BY order_id HAVING count(*) > 1) AS d")
	if err != nil {
		t.Fatal(err)
	}
	return tsql.AsInt64(res.Rows[0][0])
}

func TestDemoBackfill(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		d := newDemo(t, e)
		r := d.runner

		t.Run("plan_from_failing_rule", func(t *testing.T) {
			b, _ := r.Planner.Set.Get("fix_dedup_bug")
			p, err := r.Planner.Plan(ctx, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(bugDays, p.Partitions); diff != "" {
				t.Errorf("partitions (-want +got):\n%s", diff)
			}
			if len(p.Downstream) != 27 {
				t.Errorf("downstream refreshes: %d, want 27 (9 days × 3 tables)", len(p.Downstream))
			}
			if !p.InputsOK || p.Score != 4 || p.Blocked() {
				t.Errorf("inputs ok %v, score %d, findings %v", p.InputsOK, p.Score, p.Findings)
			}
		})

		t.Run("missing_inputs_block_the_run", func(t *testing.T) {
			_, err := r.Start(ctx, "fix_dedup_bug", backfill.RunOptions{Scope: &backfill.Scope{From: day("2026-08-30"), To: day("2026-09-02")}})
			if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "input orders_raw has no rows for 2 partitions of the scope: 2026-09-01, 2026-09-02") {
				t.Errorf("got %v", err)
			}
		})

		t.Run("dry_run_shows_the_fix", func(t *testing.T) {
			before, _ := checksum(t, e, "orders__v1")
			pv, err := r.DryRun(ctx, "fix_dedup_bug", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !pv.OK {
				for _, tbl := range pv.Tables {
					for _, p := range tbl.Result.Partitions {
						if p.Verdict == "unexpected" {
							t.Errorf("dry run: %s %s unexpected: %v", tbl.Table, p.Partition, p.Reasons)
						}
					}
				}
			}
			if len(pv.Tables) != 4 {
				t.Fatalf("previewed %d tables, want orders and its three downstream tables", len(pv.Tables))
			}
			for _, p := range pv.Tables[0].Result.Partitions {
				if p.PctChange == nil || *p.PctChange < 3 || *p.PctChange > 7 {
					t.Errorf("orders %s: pct_change %v, want about +5%%", p.Partition, p.PctChange)
				}
			}
			after, _ := checksum(t, e, "orders__v1")
			if before != after {
				t.Error("the dry run changed the live version")
			}
			rels, _ := e.Relations(ctx)
			for _, rel := range rels {
				if strings.Contains(rel.Name, "__scratch_") || rel.Name == "orders__v2" {
					t.Errorf("dry run left %s behind", rel.Name)
				}
			}
		})

		var first *backfill.Run
		t.Run("run_builds_validated_versions", func(t *testing.T) {
			run, err := r.Start(ctx, "fix_dedup_bug", backfill.RunOptions{Actor: "ann"})
			if err != nil {
				t.Fatal(err)
			}
			first, err = r.Execute(ctx, run.ID, backfill.ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if first.State != backfill.RunValidated {
				t.Fatalf("state %s: %s", first.State, first.Validation)
			}
			// The diffs are kept in the ledger for the pages and the notice.
			var v backfill.Validation
			json.Unmarshal(first.Validation, &v)
			for _, tc := range v.Tables {
				saved, err := reconcile.NewStore(d.ledger).Get(ctx, tc.DiffID)
				if err != nil || saved.New.Relation != tc.New {
					t.Errorf("%s: stored diff %d: %v", tc.Table, tc.DiffID, err)
					continue
				}
				// The partitions carried from live are confirmed from the fingerprints recorded
				// as the run built the new version and as it measured live, which nothing wrote
				// to since: neither side is read; the rebuilt ones are.
				if strings.Join(saved.Fingerprints, ",") != "old,new" {
					t.Errorf("%s: validation used the fingerprints of %v, want old and new", tc.Table, saved.Fingerprints)
				}
				for _, p := range saved.Partitions {
					rebuilt := slices.Contains(bugDays, p.Partition)
					if confirmed := p.ConfirmedBy == reconcile.ConfirmedByFingerprint; (!confirmed && !rebuilt) || (confirmed && !p.ChecksumMatch) {
						t.Errorf("%s %s: confirmed by %q, checksum match %v", tc.Table, p.Partition, p.ConfirmedBy, p.ChecksumMatch)
					}
				}
			}
			if src, _ := e.ViewSource(ctx, "orders"); src != "orders__v1" {
				t.Errorf("the run touched the live view: orders reads %s", src)
			}
			for _, tbl := range []string{"orders", "daily_revenue", "customer_ltv", "region_summary"} {
				v, err := d.runner.Versions.Get(ctx, "warehouse", tbl, 2)
				if err != nil || v.State != views.StateValidated {
					t.Errorf("%s v2: %+v, %v", tbl, v, err)
				}
			}
			// Outside the scope v2 is v1; inside, orders grew by about 5%.
			_, n1 := checksum(t, e, "orders__v1")
			_, n2 := checksum(t, e, "orders__v2")
			if n2 <= n1 || float64(n2-n1) > 0.02*float64(n1) {
				t.Errorf("orders v1 %d rows, v2 %d rows", n1, n2)
			}
			if dup := duplicateKeys(t, e, "orders__v2"); dup != 0 {
				t.Errorf("%d duplicate order ids in v2", dup)
			}
			// The totals rule that found the bug passes on the new version.
			rule, _ := r.Validator.Rules.Get("matches_raw")
			on := rule.On(e.Dialect(), map[string]string{"daily_revenue": "daily_revenue__v2"}, nil)
			res := r.Validator.Runner.Run(ctx, []*rules.Rule{on})
			if res.Results[0].Status != rules.StatusPass {
				t.Errorf("matches_raw on daily_revenue__v2: %+v", res.Results[0])
			}
		})

		t.Run("rerun_is_idempotent", func(t *testing.T) {
			run, err := r.Start(ctx, "fix_dedup_bug", backfill.RunOptions{Actor: "ann"})
			if err != nil {
				t.Fatal(err)
			}
			second, err := r.Execute(ctx, run.ID, backfill.ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if second.Tables[0].Version != 3 {
				t.Errorf("second run built v%d, want v3", second.Tables[0].Version)
			}
			for _, tbl := range []string{"orders", "daily_revenue", "customer_ltv", "region_summary"} {
				a, _ := checksum(t, e, tbl+"__v2")
				b, _ := checksum(t, e, tbl+"__v3")
				if a != b {
					t.Errorf("%s: v2 and v3 differ", tbl)
				}
			}
			// Rebuilding partitions of an existing version again replaces them: same rows.
			before, _ := checksum(t, e, "orders__v3")
			if _, err := d.ledger.DB().ExecContext(ctx, "UPDATE backfill_partitions SET state = 'pending' WHERE run_id = ?", run.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Execute(ctx, run.ID, backfill.ExecOptions{}); err != nil {
				t.Fatal(err)
			}
			after, _ := checksum(t, e, "orders__v3")
			if before != after || duplicateKeys(t, e, "orders__v3") != 0 {
				t.Error("rebuilding every partition again changed the version")
			}
		})

		t.Run("failed_partition_is_retried_alone", func(t *testing.T) {
			flaky := &flakyEngine{Engine: e, failOn: "2026-07-12", failures: 1}
			fr := d.newRunner(t, flaky)
			run, err := fr.Start(ctx, "fix_dedup_bug", backfill.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fr.Execute(ctx, run.ID, backfill.ExecOptions{}); err == nil {
				t.Fatal("a failing partition did not fail the run")
			}
			st, _ := fr.Store.StatusOf(ctx, run.ID, d.ledger.Now())
			if st.State != backfill.RunFailed || st.PartitionsFailed != 1 || st.Tables[0].Done != 8 {
				t.Fatalf("after the failure: %+v", st.Tables)
			}
			flaky.calls = nil
			done, err := fr.Execute(ctx, run.ID, backfill.ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var upstream []string
			for _, c := range flaky.calls {
				if strings.HasPrefix(c, "orders__") {
					upstream = append(upstream, c)
				}
			}
			if diff := cmp.Diff([]string{"orders__v4 2026-07-12"}, upstream); diff != "" {
				t.Errorf("retry rebuilt (-want +got):\n%s", diff)
			}
			if done.State != backfill.RunValidated {
				t.Errorf("after retry: %s", done.State)
			}
		})

		t.Run("sample_builds_n_partitions_then_stops", func(t *testing.T) {
			run, err := r.Start(ctx, "fix_dedup_bug", backfill.RunOptions{Sample: 2})
			if err != nil {
				t.Fatal(err)
			}
			sampled, err := r.Execute(ctx, run.ID, backfill.ExecOptions{Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			st, _ := r.Store.StatusOf(ctx, run.ID, d.ledger.Now())
			if sampled.State != backfill.RunSampled || st.PartitionsDone != 8 {
				t.Fatalf("after --sample 2: %s with %d partitions done, want sampled with 2 upstream + 6 downstream", sampled.State, st.PartitionsDone)
			}
			done, err := r.Execute(ctx, run.ID, backfill.ExecOptions{})
			if err != nil || done.State != backfill.RunValidated {
				t.Fatalf("resumed after review: %v %v", done, err)
			}
		})

		t.Run("cancel_stops_after_the_partition_in_flight", func(t *testing.T) {
			stop := make(chan struct{})
			var once sync.Once
			cr := d.newRunner(t, e, backfill.WithProgress(func(p backfill.Progress) { once.Do(func() { close(stop) }) }))
			run, err := cr.Start(ctx, "fix_dedup_bug", backfill.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := cr.Execute(ctx, run.ID, backfill.ExecOptions{Stop: stop})
			if err != nil {
				t.Fatal(err)
			}
			st, _ := cr.Store.StatusOf(ctx, run.ID, d.ledger.Now())
			if got.State != backfill.RunCancelled || st.PartitionsDone == 0 || st.PartitionsDone > 2 {
				t.Fatalf("cancelled run: %s with %d done (concurrency 2)", got.State, st.PartitionsDone)
			}
			v, _ := cr.Versions.Get(ctx, "warehouse", "orders", got.Tables[0].Version)
			if v.State != views.StateCancelled {
				t.Errorf("version state %s, want cancelled", v.State)
			}
			if _, err := e.Columns(ctx, v.Physical()); err != nil {
				t.Errorf("the cancelled version was dropped: %v", err)
			}
			if done, err := cr.Execute(ctx, run.ID, backfill.ExecOptions{}); err != nil || done.State != backfill.RunValidated {
				t.Errorf("resume after cancel: %v %v", done, err)
			}
		})

		t.Run("window_and_throttle_with_a_fake_clock", func(t *testing.T) {
			base, _ := r.Planner.Set.Get("fix_dedup_bug")
			night := *base
			night.Name, night.Concurrency, night.Throttle = "nightly", 1, 3*time.Second
			night.Window = &backfill.HourWindow{Start: 22 * 60, End: 6 * 60}
			now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			var slept []time.Duration
			var mu sync.Mutex
			var svc *backfill.Service
			waiting := ""
			nr := d.newRunner(t, e, backfill.WithClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
				func(_ context.Context, d time.Duration) error {
					if waiting == "" { // the status while it waits for its hours says so
						st, err := svc.Status(ctx, "nightly")
						if err != nil {
							t.Error(err)
						}
						waiting = st.Waiting
					}
					mu.Lock()
					defer mu.Unlock()
					slept = append(slept, d)
					now = now.Add(d)
					return nil
				}))
			nr.Planner.Set.Replace(backfill.NewSet(append(nr.Planner.Set.All(), &night)...))
			svc = &backfill.Service{Runner: nr}
			run, err := nr.Start(ctx, "nightly", backfill.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := nr.Execute(ctx, run.ID, backfill.ExecOptions{}); err != nil {
				t.Fatal(err)
			}
			if len(slept) == 0 || slept[0] != 10*time.Hour {
				t.Fatalf("first wait %v, want 10h until 22:00", slept)
			}
			if waiting != "the window 22:00-06:00 (UTC) opens in 10h0m0s" {
				t.Errorf("status while waiting: %q", waiting)
			}
			throttles := 0
			for _, s := range slept[1:] {
				if s == 3*time.Second {
					throttles++
				}
			}
			if throttles != 9 {
				t.Errorf("%d throttle pauses after the 9 upstream partitions, want 9 (waits: %v)", throttles, slept)
			}
		})

		t.Run("clock_reading_transform_is_flagged", func(t *testing.T) {
			b, ps := backfill.Parse("backfills/now.sql", "-- table: orders\n-- partition: order_date\n-- key: order_id\n-- reason: bug\n-- objective: x\n-- scope: 2026-07-10..2026-07-11\n"+
				"SELECT * FROM orders_raw WHERE order_date >= $start AND order_date < $end AND now() IS NOT NULL")
			if len(ps) > 0 {
				t.Fatal(ps)
			}
			p, err := r.Planner.Plan(ctx, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.Score != 3 || !p.Blocked() || !strings.Contains(p.ScoreMissing[0], "now") {
				t.Errorf("score %d, blocked %v, missing %v", p.Score, p.Blocked(), p.ScoreMissing)
			}
		})

		t.Run("verify_finds_a_manual_edit", func(t *testing.T) {
			pv, err := r.Verify(ctx, "fix_dedup_bug", day("2026-06-01"), day("2026-06-03"))
			if err != nil {
				t.Fatal(err)
			}
			if !pv.OK {
				t.Fatalf("live orders outside the bug window are not reproducible: %+v", pv.Tables[0].Result.Rows)
			}
			// Someone patches a row into the live table by hand.
			at := time.Date(2026, 6, 2, 9, 0, 0, 0, time.UTC)
			if err := e.Insert(ctx, "orders__v1", []string{"order_id", "order_date", "ordered_at", "customer_id", "region", "amount"},
				[][]any{{int64(999999999), day("2026-06-02"), at, int64(1), "EMEA", 10.0}}); err != nil {
				t.Fatal(err)
			}
			pv, err = r.Verify(ctx, "fix_dedup_bug", day("2026-06-01"), day("2026-06-03"))
			if err != nil {
				t.Fatal(err)
			}
			res := pv.Tables[0].Result
			if pv.OK || res.Rows.Removed != 1 || res.Rows.Added != 0 {
				t.Fatalf("verify after a manual insert: ok %v rows %+v", pv.OK, res.Rows)
			}
			for _, p := range res.Partitions {
				if (p.Partition == "2026-06-02") == p.Unchanged() {
					t.Errorf("partition %s unchanged=%v", p.Partition, p.Unchanged())
				}
			}
		})

		t.Run("concurrency_is_bounded", func(t *testing.T) {
			flaky := &flakyEngine{Engine: e}
			fr := d.newRunner(t, flaky)
			run, err := fr.Start(ctx, "fix_dedup_bug", backfill.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fr.Execute(ctx, run.ID, backfill.ExecOptions{}); err != nil {
				t.Fatal(err)
			}
			if flaky.maxInFlight > 2 {
				t.Errorf("%d partitions at once, the file allows 2", flaky.maxInFlight)
			}
			// quick partitions are written several to a transaction once one has been timed
			batches := 0
			for _, c := range flaky.calls {
				if strings.HasSuffix(c, "(batch)") {
					batches++
				}
			}
			if batches == 0 {
				t.Errorf("no partitions were written in batches: %v", flaky.calls)
			}
		})
	})
}

// flakyEngine is a real engine whose ReplacePartition fails on one partition a given number
// of times, and which records every partition it replaces and how many run at once.
type flakyEngine struct {
	tsql.Engine
	failOn   string
	failures int

	mu          sync.Mutex
	calls       []string
	inFlight    int
	maxInFlight int
}

// ReplacePartitions fails a batch holding the failing partition, as one transaction would,
// without counting it as one of the failures: the runner then builds the batch one by one.
func (f *flakyEngine) ReplacePartitions(ctx context.Context, table string, writes []tsql.PartitionWrite) ([]int64, error) {
	f.mu.Lock()
	fail := false
	for _, w := range writes {
		part := w.Window.Start.Format("2006-01-02")
		f.calls = append(f.calls, table+" "+part+" (batch)")
		fail = fail || (part == f.failOn && f.failures > 0)
	}
	f.inFlight++ // a batch is one worker's writes
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.mu.Unlock()
	defer func() { f.mu.Lock(); f.inFlight--; f.mu.Unlock() }()
	if fail {
		return nil, errors.New("injected failure")
	}
	return f.Engine.ReplacePartitions(ctx, table, writes)
}

func (f *flakyEngine) ReplacePartition(ctx context.Context, table string, w tsql.Window, q string, args ...any) (int64, error) {
	f.mu.Lock()
	part := w.Start.Format("2006-01-02")
	f.calls = append(f.calls, table+" "+part)
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	fail := part == f.failOn && f.failures > 0
	if fail {
		f.failures--
	}
	f.mu.Unlock()
	defer func() { f.mu.Lock(); f.inFlight--; f.mu.Unlock() }()
	if fail {
		return 0, errors.New("injected failure")
	}
	return f.Engine.ReplacePartition(ctx, table, w, q, args...)
}
