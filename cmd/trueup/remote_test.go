package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/config"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// servedDemo is a demo project served in-process on a free port through the real wiring, as
// `trueup serve` does; its app stays reachable for what a test must set up behind the API.
type servedDemo struct {
	dir, url string
	a        *app
}

func serveDemo(t *testing.T, dir string) *servedDemo {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := filepath.Join(dir, "trueup.yaml")
	e := &env{stdout: io.Discard, stderr: io.Discard, globals: globals{config: cfg}}
	a, err := openApp(ctx, e.globals)
	if err != nil {
		t.Fatal(err)
	}
	p, err := openServed(ctx, e, a, "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	// as serve does (runWithMonitor): the rules' latest results are loaded before the first page
	if err := p.mon.Load(ctx); err != nil {
		p.close()
		a.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		p.close()
		a.Close()
	})
	select {
	case <-p.srv.Listening():
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not start listening")
	}
	return &servedDemo{dir: dir, url: "http://" + p.srv.Addr(), a: a}
}

// volatile are the JSON fields that differ between two runs of the same command: clocks,
// durations and who ran it (the CLI's user locally, the server's actor remotely).
var volatile = map[string]bool{
	"started": true, "finished": true, "duration_ms": true, "elapsed_ms": true, "created_at": true,
	"updated_at": true, "finished_at": true, "started_at": true, "at": true, "trigger": true,
	"actor": true, "built_by": true, "eta_seconds": true, "url": true,
}

func normalizeJSON(t *testing.T, doc string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, doc)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if volatile[k] {
					delete(x, k)
				} else {
					x[k] = walk(val)
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case string:
			// a notice's text says when it went live or was rolled back, to the minute
			return clock.ReplaceAllString(x, "…")
		}
		return v
	}
	return walk(v)
}

var timings = regexp.MustCompile(`\d+\.\d+s|\d+ ms|time="[^"]*"|timestamp="[^"]*"|\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?`)

var spaces = regexp.MustCompile(` +`)

// clock is a time of day as a notice's text gives it (at 19:08 UTC).
var clock = regexp.MustCompile(`\b\d\d:\d\d UTC\b`)

// normalizeText blanks what differs between two runs of the same command: times, durations and
// who ran it (the CLI's user locally, the server's actor remotely), and the column widths
// these change.
func normalizeText(s string) string {
	s = strings.NewReplacer(cliActor(), "ACTOR", localActorName, "ACTOR").Replace(s)
	return spaces.ReplaceAllString(timings.ReplaceAllString(s, "…"), " ")
}

// localActorName is who a write through a server without tokens is recorded as.
const localActorName = "local-operator"

// TestServerModeMatchesLocal runs each command on one demo project locally and on an identical
// one through a served trueup with --server, in the same order: the output (JSON, text or
// JUnit, times aside) and the exit code must be the same.
func TestServerModeMatchesLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	local, served := demoDir(t), demoDir(t)
	// On both, a v3 of orders and daily_revenue whose validation failed: the gate refuses it.
	buildVersions(t, local, 3, "validation-failed")
	buildVersions(t, served, 3, "validation-failed")
	srv := serveDemo(t, served)
	for _, tc := range []remoteCase{
		{"check_json", []string{"check", "--rule", "matches_raw", "--format", "json"}, exitFailed, "json"},
		{"check_text", []string{"check", "--rule", "matches_raw"}, exitFailed, "text"},
		{"check_junit", []string{"check", "--rule", "matches_raw,unique_order_id", "--format", "junit"}, exitFailed, "junit"},
		{"check_unknown_rule", []string{"check", "--rule", "nope"}, exitUsage, "text"},
		{"check_pass", []string{"check", "--rule", "no_negative_amounts,unique_order_id"}, exitOK, "text"},
		{"check_pass_json", []string{"check", "--tag", "orders", "--rule", "unique_order_id", "--format", "json"}, exitOK, "json"},
		{"check_no_match", []string{"check", "--tag", "nope"}, exitUsage, "text"},
		{"diff_json", []string{"diff", "--old", "orders__v1", "--new", "orders__v3", "--key", "order_id", "--partition", "order_date", "--measure", "amount", "--format", "json"}, exitFailed, "json"},
		{"diff_unexpected_text", []string{"diff", "--old", "orders__v1", "--new", "orders__v3", "--key", "order_id", "--partition", "order_date"}, exitFailed, "text"},
		{"diff_text", []string{"diff", "--old", "orders__v1", "--new", "orders__v1", "--key", "order_id", "--partition", "order_date", "--tolerance", "amount=0.1%"}, exitOK, "text"},
		{"diff_unknown_relation", []string{"diff", "--old", "orders__v1", "--new", "orders__v9", "--key", "order_id"}, exitUsage, "text"},
		{"versions_json", []string{"versions", "orders", "--format", "json"}, exitOK, "json"},
		{"versions_text", []string{"versions", "orders"}, exitOK, "text"},
		{"query_text", []string{"query", "SELECT count(*) AS n, sum(amount) AS amount FROM orders"}, exitOK, "text"},
		{"query_version_compare_json", []string{"query", "--exposure", "board_revenue", "--version", "daily_revenue=v3", "--compare-to-live", "--format", "json"}, exitOK, "json"},
		{"query_version_compare_text", []string{"query", "--exposure", "board_revenue", "--version", "daily_revenue=v3", "--compare-to-live"}, exitOK, "text"},
		{"query_csv", []string{"query", "SELECT order_id FROM orders ORDER BY order_id", "--limit", "3", "--format", "csv"}, exitOK, "text"},
		{"query_not_select", []string{"query", "DROP TABLE orders"}, exitUsage, "text"},
		{"query_version_of_plain_table", []string{"query", "SELECT count(*) FROM orders_raw", "--version", "orders_raw=v1"}, exitUsage, "text"},
		{"query_before_trueup_knew", []string{"query", "SELECT count(*) FROM orders", "--as-of", "2001-01-01"}, exitUsage, "text"},
		{"query_in_the_future", []string{"query", "SELECT count(*) FROM orders", "--as-of", "2999-01-01"}, exitUsage, "text"},
		{"query_no_exposure", []string{"query", "--exposure", "nope"}, exitUsage, "text"},
		{"write_target", []string{"versions", "orders", "--write-target"}, exitOK, "text"},
		{"write_target_json", []string{"versions", "orders", "--write-target", "--format", "json"}, exitOK, "json"},
		{"write_target_unknown", []string{"versions", "nope", "--write-target"}, exitUsage, "text"},
		{"swap_gate_refusal", []string{"swap", "orders", "--to", "v3", "--reason", "try"}, exitFailed, "text"},
		{"swap_unknown_version", []string{"swap", "orders", "--to", "v9"}, exitUsage, "text"},
		{"swap_dry_run", []string{"swap", "orders", "--to", "v3", "--dry-run", "--format", "json"}, exitFailed, "json"}, // the gate would refuse it
		{"backfill_plan", []string{"backfill", "plan", "fix_dedup_bug", "--format", "json"}, exitOK, "json"},
		{"backfill_dry_run", []string{"backfill", "dry-run", "fix_dedup_bug", "--format", "json"}, exitOK, "json"},
		{"backfill_plan_scoped", []string{"backfill", "plan", "fix_dedup_bug", "--from", "2026-07-10", "--to", "2026-07-12", "--format", "json"}, exitOK, "json"},
		{"backfill_dry_run_scoped", []string{"backfill", "dry-run", "fix_dedup_bug", "--from", "2026-07-10", "--to", "2026-07-12"}, exitOK, "text"},
		{"backfill_bad_scope", []string{"backfill", "plan", "fix_dedup_bug", "--from", "2026-07-12", "--to", "2026-07-10"}, exitUsage, "text"},
		{"backfill_run", []string{"backfill", "run", "fix_dedup_bug", "--format", "json"}, exitOK, "json"},
		{"backfill_status", []string{"backfill", "status", "fix_dedup_bug"}, exitOK, "text"},
		{"notice_list", []string{"notice", "list", "--format", "json"}, exitOK, "json"},
		{"notice_show", []string{"notice", "show", "1"}, exitOK, "text"},
		{"notice_announce", []string{"notice", "announce", "1", "--format", "json"}, exitOK, "json"},
		{"notice_announce_again", []string{"notice", "announce", "1"}, exitFailed, "text"},
		{"swap", []string{"swap", "orders", "--to", "v4", "--reason", "fix", "--format", "json"}, exitOK, "json"},
		{"rollback", []string{"rollback", "orders", "--reason", "oops"}, exitOK, "text"},
		{"versions_after", []string{"versions", "orders"}, exitOK, "text"},
		{"notice_show_after", []string{"notice", "show", "1", "--format", "json"}, exitOK, "json"},
		{"retire", []string{"versions", "orders", "--retire", "v3", "--reason", "old", "--format", "json"}, exitOK, "json"},
		{"query_retired_version", []string{"query", "SELECT count(*) FROM orders", "--version", "orders=v3"}, exitUsage, "text"},
		// the rollback took the notice's change back: it is edited no more, is completed by hand,
		// and then is not withdrawn
		{"notice_edit_rolled_back", []string{"notice", "edit", "1", "--planned-swap", "2099-08-04 09:00"}, exitFailed, "text"},
		{"notice_complete", []string{"notice", "complete", "1", "--reason", "live again", "--format", "json"}, exitOK, "json"},
		{"notice_withdraw_completed", []string{"notice", "withdraw", "1", "--reason", "late"}, exitFailed, "text"},
		{"notice_deliver", []string{"notice", "deliver"}, exitOK, "text"},
		{"backfill_run_sample", []string{"backfill", "run", "fix_dedup_bug", "--sample", "1", "--format", "json"}, exitOK, "json"},
		{"backfill_cancel", []string{"backfill", "cancel", "fix_dedup_bug"}, exitOK, "text"},
		{"backfill_cancel_again", []string{"backfill", "cancel", "fix_dedup_bug"}, exitFailed, "text"}, // a conflict: it ended
		{"backfill_resume", []string{"backfill", "resume", "fix_dedup_bug", "--format", "json"}, exitOK, "json"},
		{"backfill_retry_validated", []string{"backfill", "retry", "fix_dedup_bug"}, exitFailed, "text"}, // a conflict: nothing left
		{"backfill_history", []string{"backfill", "history", "--format", "json"}, exitOK, "json"},
		{"backfill_history_text", []string{"backfill", "history"}, exitOK, "text"},
		{"backfill_status_unknown", []string{"backfill", "status", "nope"}, exitUsage, "text"},
		{"backfill_resume_unknown", []string{"backfill", "resume", "nope"}, exitUsage, "text"},
		{"adopt", []string{"adopt", "orders_raw", "--partition", "order_date", "--grain", "day", "--reason", "first", "--format", "json"}, exitOK, "json"},
		{"versions_adopted", []string{"versions", "orders_raw", "--format", "json"}, exitOK, "json"},
		{"adopt_again", []string{"adopt", "orders_raw"}, exitFailed, "text"},
		{"adopt_logical", []string{"adopt", "orders"}, exitFailed, "text"},
		{"adopt_missing", []string{"adopt", "nope"}, exitUsage, "text"},
		{"adopt_bad_partition", []string{"adopt", "customers", "--partition", "nope"}, exitUsage, "text"},
		{"adopt_undo", []string{"adopt", "--undo", "orders_raw", "--format", "json"}, exitOK, "json"},
		{"adopt_undo_again", []string{"adopt", "--undo", "orders_raw"}, exitFailed, "text"},
		{"adopt_text", []string{"adopt", "orders_raw"}, exitOK, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) { compareModes(t, local, srv, tc) })
	}
}

// remoteCase is one command, the same on both sides.
type remoteCase struct {
	name   string
	args   []string
	code   int
	format string // json, text or junit: how the outputs are compared
}

func compareModes(t *testing.T, localDir string, srv *servedDemo, tc remoteCase) {
	t.Helper()
	lcode, lout, lerr := cli(t, append([]string{"--config", filepath.Join(localDir, "trueup.yaml")}, tc.args...)...)
	rcode, rout, rerr := cli(t, append([]string{"--server", srv.url}, tc.args...)...)
	if lcode != tc.code || rcode != tc.code {
		t.Fatalf("exit codes: local %d, server %d, want %d\nlocal stderr: %s\nserver stderr: %s", lcode, rcode, tc.code, lerr, rerr)
	}
	switch tc.format {
	case "json":
		if d := cmp.Diff(normalizeJSON(t, lout), normalizeJSON(t, rout)); d != "" {
			t.Errorf("JSON differs (-local +server):\n%s", d)
		}
	default:
		if d := cmp.Diff(normalizeText(lout), normalizeText(rout)); d != "" {
			t.Errorf("%s differs (-local +server):\n%s", tc.format, d)
		}
	}
	// The one-line cause on stderr is the same apart from the server's wording of a few.
	if lcode != 0 && (strings.Count(rerr, "\n") == 0 || !strings.HasPrefix(rerr, "trueup: ")) {
		t.Errorf("server mode stderr is not a one-line cause: %q", rerr)
	}
}

// TestServerModeRefusals: the refusals of a server with tokens, and the ones before any server
// answers, each a one-line cause with the local command's exit code.
func TestServerModeRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	dir := demoDir(t)
	f, err := os.OpenFile(filepath.Join(dir, "trueup.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\nauth:\n  tokens:\n    - {name: ann, role: approver, sha256: " + config.HashToken("ann-token") + "}\n" +
		"    - {name: vera, role: viewer, sha256: " + config.HashToken("vera-token") + "}\n")
	f.Close()
	buildVersions(t, dir, 2, "validated")
	srv := serveDemo(t, dir)
	// bob holds orders as a swap in another process would: his lock row is in the ledger.
	if _, err := srv.a.Ledger.DB().Exec(`INSERT INTO view_locks (target, table_name, swap_id, holder, kind, since)
		VALUES ('warehouse', 'orders', 99, 'bob', 'swap', now())`); err != nil {
		t.Fatal(err)
	}
	closed := "http://" + freeAddr(t) // nothing listens there any more
	for _, tc := range []struct {
		name  string
		env   string // TRUEUP_TOKEN
		args  []string
		code  int
		cause string
	}{
		{"no_token", "", []string{"--server", srv.url, "check"}, exitUsage, "Log in first"},
		{"bad_token", "", []string{"--server", srv.url, "--token", "wrong", "versions", "orders"}, exitUsage, "That API token is not valid"},
		{"bad_token_from_env", "wrong", []string{"--server", srv.url, "versions", "orders"}, exitUsage, "That API token is not valid"},
		{"weak_role", "vera-token", []string{"--server", srv.url, "swap", "orders", "--to", "v2"}, exitUsage, "needs the approver role; vera is a viewer"},
		{"good_token_from_env", "ann-token", []string{"--server", srv.url, "versions", "orders"}, exitOK, ""},
		{"conflict_names_holder", "ann-token", []string{"--server", srv.url, "swap", "orders", "--to", "v2", "--reason", "fix"}, exitFailed, "orders is held by bob (swap #99"},
		{"unreachable", "", []string{"--server", closed, "versions", "orders"}, exitUsage, "cannot reach the server at " + closed},
		{"bad_url_scheme", "", []string{"--server", "ftp://127.0.0.1:1", "check"}, exitUsage, `--server "ftp://127.0.0.1:1": want the server's address`},
		{"bad_url_no_scheme", "", []string{"--server", "localhost:8080", "check"}, exitUsage, "want the server's address"},
		{"local_only_flag", "ann-token", []string{"--server", srv.url, "check", "--explain"}, exitUsage, "--explain works only locally"},
		{"check_target_local_only", "ann-token", []string{"--server", srv.url, "check", "--target", "warehouse"}, exitUsage, "--target works only locally"},
		{"verify_local_only", "ann-token", []string{"--server", srv.url, "backfill", "verify", "fix_dedup_bug", "--from", "2026-07-10", "--to", "2026-07-11"}, exitUsage, "works only locally"},
		{"diff_target_url_refused", "ann-token", []string{"--server", srv.url, "diff", "--old", "orders__v1", "--new", "orders__v2", "--key", "order_id", "--old-target", "duckdb:/tmp/x.duckdb"}, exitUsage, `no target "duckdb:/tmp/x.duckdb" on this server`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TRUEUP_TOKEN", tc.env)
			before := ledgerSnapshot(t, srv.a)
			code, out, errs := cli(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errs)
			}
			if tc.cause == "" {
				return
			}
			if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.cause) {
				t.Errorf("stderr is not the one-line cause %q: %q", tc.cause, errs)
			}
			if out != "" {
				t.Errorf("a refusal printed on stdout: %q", out)
			}
			if after := ledgerSnapshot(t, srv.a); after != before {
				t.Errorf("refused, yet the ledger changed:\n%s", changed(before, after))
			}
		})
	}
}

// TestTargetURL: --target and diff's --old-target/--new-target take a URL as well as a name;
// the URL of a configured target is that target (its DuckDB file is not opened twice).
func TestTargetURL(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	wh := "duckdb:" + filepath.Join(dir, "warehouse.duckdb")
	code, out, errs := cli(t, "--config", cfg, "--target", wh, "check", "--rule", "matches_raw", "--format", "json")
	if code != exitFailed || !strings.Contains(out, `"2026-07-18"`) {
		t.Fatalf("check --target URL: exit %d\n%s\n%s", code, out, errs)
	}
	other := filepath.Join(t.TempDir(), "other.duckdb")
	// a target cannot ATTACH (user SQL is sandboxed there): copy with a plain DuckDB connection
	e, err := tsql.OpenDuckDBFile(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ExecContext(context.Background(), "ATTACH '"+filepath.Join(dir, "warehouse.duckdb")+"' AS w (READ_ONLY); CREATE TABLE orders_copy AS SELECT * FROM w.orders__v1; DETACH w"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"old_target_url_new_target_name", []string{"--old-target", "duckdb:" + other, "--old", "orders_copy", "--new-target", "warehouse", "--new", "orders__v1"}},
		{"both_urls", []string{"--old-target", "duckdb:" + other, "--old", "orders_copy", "--new-target", wh, "--new", "orders__v1"}},
		{"global_target_url", []string{"--target", wh, "--old", "orders__v1", "--new", "orders"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--config", cfg, "diff", "--key", "order_id", "--partition", "order_date"}, tc.args...)
			code, out, errs := cli(t, args...)
			if code != exitOK || !strings.Contains(out, "0 unexpected") {
				t.Errorf("exit %d\n%s\n%s", code, out, errs)
			}
		})
	}
}

// TestServerModeClickHouse: a project on ClickHouse checked through its server fails on the
// nine planted-bug days, as locally.
func TestServerModeClickHouse(t *testing.T) {
	url := sqltest.ClickHouseURL(t)
	if url == "" {
		return
	}
	srv := serveDemo(t, demoDir(t, "--target", url))
	code, out, errs := cli(t, "--server", srv.url, "check", "--rule", "matches_raw", "--format", "json")
	if code != exitFailed {
		t.Fatalf("exit %d, want 1: %s", code, errs)
	}
	var run struct {
		Results []struct {
			FailingPartitions []string `json:"failing_partitions"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &run); err != nil || len(run.Results) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := run.Results[0].FailingPartitions; len(got) != 9 || got[0] != "2026-07-10" || got[8] != "2026-07-18" {
		t.Errorf("failing partitions: %v", got)
	}
}
