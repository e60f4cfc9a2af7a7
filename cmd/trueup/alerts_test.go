package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/config"
	"trueup/ledger"
	"trueup/notices"
	"trueup/rules"
	tsql "trueup/sql"
)

// alertReceiver is a subscriber's webhook: a real HTTP server that accepts only requests
// signed with its secret, as notices' receivers do, and keeps what it accepted.
type alertReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string // idempotency key and subject of each accepted request
}

const alertSecret = "s3cret"

func newAlertReceiver(t *testing.T) *alertReceiver {
	r := &alertReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if notices.VerifyWebhook(alertSecret, req.Header, body, time.Now()) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var p struct {
			Subject string `json:"subject"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.got = append(r.got, req.Header.Get(notices.HeaderIdempotency)+" "+p.Subject)
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *alertReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// subscribe adds the receiver to a project's config as webhook "team", subscribed to orders.
func (r *alertReceiver) subscribe(t *testing.T, cfg string) {
	t.Helper()
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.WriteString("notify:\n  public_url: http://127.0.0.1:8080\n  webhooks:\n    team: {url: '" + r.srv.URL + "/hook', secret: " + alertSecret + "}\n" +
		"  subscriptions:\n    - {table: orders, webhook: team}\n")
	if err != nil {
		t.Fatal(err)
	}
}

// storedAlerts reads the project's rule alerts from its ledger, oldest first.
func storedAlerts(t *testing.T, cfg string) []rules.Alert {
	t.Helper()
	c, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), c.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	alerts, err := rules.NewStore(l).Alerts(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(alerts)-1; i < j; i, j = i+1, j-1 {
		alerts[i], alerts[j] = alerts[j], alerts[i]
	}
	return alerts
}

// warehouseExec runs statements on a check project's warehouse while no command holds it.
func warehouseExec(t *testing.T, cfg string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	e, err := tsql.Create(ctx, "duckdb:"+filepath.Join(filepath.Dir(cfg), "warehouse.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, q := range stmts {
		if err := e.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

const (
	dropJuly2    = "DELETE FROM orders WHERE d = DATE '2026-07-02'"
	restoreJuly2 = "INSERT INTO orders VALUES (3, DATE '2026-07-02', 10), (4, DATE '2026-07-02', 10)"
)

// TestCheckDeliversAlerts: a state change first seen by `trueup check` reaches the subscribers
// of the rule's table once, and the alert is recorded as delivered; a check that sees the same
// state again sends nothing.
func TestCheckDeliversAlerts(t *testing.T) {
	cfg := checkProject(t, map[string]string{"orders/complete.sql": rulePasses})
	hook := newAlertReceiver(t)
	hook.subscribe(t, cfg)

	steps := []struct {
		name  string
		stmts []string
		code  int
		want  []string
	}{
		{"first_result_passes", nil, exitOK, nil},
		{"pass_to_fail", []string{dropJuly2}, exitFailed, []string{"alert:1/webhook:team Rule complete is now fail on orders"}},
		{"still_failing", nil, exitFailed, []string{"alert:1/webhook:team Rule complete is now fail on orders"}},
		{"fail_to_pass", []string{restoreJuly2}, exitOK, []string{
			"alert:1/webhook:team Rule complete is now fail on orders",
			"alert:2/webhook:team Rule complete is now pass on orders",
		}},
		{"still_passing", nil, exitOK, []string{
			"alert:1/webhook:team Rule complete is now fail on orders",
			"alert:2/webhook:team Rule complete is now pass on orders",
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			warehouseExec(t, cfg, s.stmts...)
			if code, _, errs := cli(t, "--config", cfg, "check"); code != s.code {
				t.Fatalf("exit %d, want %d: %s", code, s.code, errs)
			}
			if diff := cmp.Diff(s.want, hook.received()); diff != "" {
				t.Errorf("webhook received (-want +got):\n%s", diff)
			}
		})
	}
	alerts := storedAlerts(t, cfg)
	if len(alerts) != 2 {
		t.Fatalf("%d alerts recorded, want 2: %+v", len(alerts), alerts)
	}
	for _, a := range alerts {
		if a.DeliveredAt.IsZero() {
			t.Errorf("alert %d (%s → %s) has no delivered_at", a.ID, a.From, a.To)
		}
	}
}

// TestCheckOtherTargetRaisesNoAlert: `check --target` of another warehouse (a copy missing a
// day) reports its failure and keeps it in the history, but the rule's monitored state is the
// configured target's: no alert, and the next check of the configured target changes nothing.
// Its schema snapshot is its own.
func TestCheckOtherTargetRaisesNoAlert(t *testing.T) {
	cfg := checkProject(t, map[string]string{"orders/complete.sql": rulePasses, "orders/columns.sql": "-- kind: schema\n-- table: orders\n"})
	hook := newAlertReceiver(t)
	hook.subscribe(t, cfg)
	if code, _, errs := cli(t, "--config", cfg, "check"); code != exitOK {
		t.Fatalf("first check: exit %d: %s", code, errs)
	}
	dir := filepath.Dir(cfg)
	src, err := os.ReadFile(filepath.Join(dir, "warehouse.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "copy.duckdb"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	copyURL := "duckdb:" + filepath.Join(dir, "copy.duckdb")
	e, err := tsql.Open(context.Background(), copyURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{dropJuly2, "ALTER TABLE orders ADD COLUMN note VARCHAR"} {
		if err := e.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	code, out, errs := cli(t, "--config", cfg, "check", "--target", copyURL, "--format", "json")
	if code != exitFailed {
		t.Fatalf("check of the copy: exit %d, want %d: %s", code, exitFailed, errs)
	}
	var run rules.Run
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range run.Results {
		got[r.Rule] = string(r.Status) + " on " + r.Target
	}
	// the copy's first schema result records its own snapshot rather than comparing with the
	// warehouse's
	want := map[string]string{"complete": "fail on " + copyURL, "columns": "pass on " + copyURL}
	if diff := cmp.Diff(want, got); diff != "" || run.Target != copyURL {
		t.Errorf("check of the copy (target %q) (-want +got):\n%s", run.Target, diff)
	}
	if code, _, errs := cli(t, "--config", cfg, "check"); code != exitOK {
		t.Fatalf("check of the warehouse again: exit %d: %s", code, errs)
	}
	if got := hook.received(); len(got) != 0 {
		t.Errorf("alerts delivered for a check of another target: %v", got)
	}
	if alerts := storedAlerts(t, cfg); len(alerts) != 0 {
		t.Errorf("alerts recorded: %+v", alerts)
	}
}

// TestServeDeliversAlerts: serve's wiring hands each state change to the subscribers once: an
// alert recorded but never handed on (a check stopped before it could) at start-up, then
// those its own runs raise, none for a run that changes nothing.
func TestServeDeliversAlerts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := checkProject(t, map[string]string{"orders/complete.sql": rulePasses})
	hook := newAlertReceiver(t)
	hook.subscribe(t, cfg)
	e := &env{stdout: io.Discard, stderr: io.Discard, globals: globals{config: cfg}}
	a, err := openApp(ctx, e.globals)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	engine := a.Targets["warehouse"]

	// what a check killed between recording its run and handing on the alert leaves behind
	store := rules.NewStore(a.Ledger)
	set, err := loadRules(ctx, e, a.Config.ProjectDir("rules"), projectTargets(e, a))
	if err != nil {
		t.Fatal(err)
	}
	runner := rules.NewRunner(projectTargets(e, a))
	for _, stmts := range [][]string{nil, {dropJuly2}} {
		for _, q := range stmts {
			if err := engine.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		run := runner.Run(ctx, set.Rules)
		run.Trigger = rules.TriggerCLI
		if _, err := store.SaveRun(ctx, run, "cli"); err != nil {
			t.Fatal(err)
		}
	}

	p, err := openServed(ctx, e, a, freeAddr(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	monitorDone := make(chan error, 1)
	go func() { monitorDone <- p.mon.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-monitorDone; err != nil {
			t.Errorf("monitor: %v", err)
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if alerts, err := store.Alerts(ctx, "", 0); err == nil && len(alerts) == 1 && !alerts[0].DeliveredAt.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the monitor did not hand on the waiting alert at start-up")
		}
	}
	deliver := func() {
		t.Helper()
		if _, err := p.ntc.Outbox().Deliver(ctx); err != nil {
			t.Fatal(err)
		}
	}
	deliver()
	if diff := cmp.Diff([]string{"alert:1/webhook:team Rule complete is now fail on orders"}, hook.received()); diff != "" {
		t.Fatalf("at start-up the webhook received (-want +got):\n%s", diff)
	}

	steps := []struct {
		name  string
		stmts []string
		want  int // requests the webhook has accepted in all
	}{
		{"still_failing", nil, 1},
		{"fail_to_pass", []string{restoreJuly2}, 2},
		{"still_passing", nil, 2},
		{"pass_to_fail", []string{dropJuly2}, 3},
	}
	for _, s := range steps {
		for _, q := range s.stmts {
			if err := engine.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.mon.RunNow(ctx, "complete", "tester"); err != nil {
			t.Fatal(err)
		}
		deliver()
		if got := hook.received(); len(got) != s.want {
			t.Errorf("%s: the webhook has received %d alerts, want %d: %v", s.name, len(got), s.want, got)
		}
	}
	want := []string{
		"alert:1/webhook:team Rule complete is now fail on orders",
		"alert:2/webhook:team Rule complete is now pass on orders",
		"alert:3/webhook:team Rule complete is now fail on orders",
	}
	if diff := cmp.Diff(want, hook.received()); diff != "" {
		t.Errorf("webhook received (-want +got):\n%s", diff)
	}
}
