package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"trueup/fault"
	"trueup/ledger"
	"trueup/monitor"
	"trueup/rules"
	"trueup/server"
)

// refusal is what a refusal answers: the API's status, kind and message, and the CLI's exit
// code and the one line it prints after "trueup: ".
type refusal struct {
	status int
	kind   string
	msg    string
}

// apiRefusal sends one API request and reads the refusal it answers.
func apiRefusal(t *testing.T, method, url, body string) refusal {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var p struct{ Error, Kind string }
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("%s %s: %d, not an API error: %s", method, url, resp.StatusCode, raw)
	}
	return refusal{status: resp.StatusCode, kind: p.Kind, msg: p.Error}
}

// cliRefusal runs the CLI and returns its exit code and the one line it printed.
func cliRefusal(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, out, errs := cli(t, args...)
	if out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "trueup: ") {
		t.Errorf("%v: stdout %q, stderr %q: want nothing on stdout and one line on stderr", args, out, errs)
	}
	return code, strings.TrimSuffix(strings.TrimPrefix(errs, "trueup: "), "\n")
}

var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)

// sameness blanks what differs between the local project and the served one: when, and who
// (the CLI's user locally, the server's actor remotely).
func sameness(s string) string {
	return strings.NewReplacer(cliActor(), "ACTOR", localActorName, "ACTOR").Replace(rfc3339.ReplaceAllString(s, "TIME"))
}

// TestRefusalsAnswerAlike: a notice conflict, a missing backfill and a busy rule are the same
// refusal everywhere: through the API its kind and status, through the CLI, locally and with
// --server, its exit code, and in each the one sentence the package that refused wrote (times
// and actors aside, which differ between the two projects).
func TestRefusalsAnswerAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	local, served := demoDir(t), demoDir(t)
	draftDemoNotice(t, local)
	draftDemoNotice(t, served)
	srv := serveDemo(t, served)
	localCfg := filepath.Join(local, "trueup.yaml")
	for _, args := range [][]string{{"--config", localCfg}, {"--server", srv.url}} {
		if code, _, errs := cli(t, append(args, "notice", "announce", "1")...); code != exitOK {
			t.Fatalf("%v announce: exit %d: %s", args, code, errs)
		}
	}
	for _, tc := range []struct {
		name         string
		args         []string
		method, path string
		want         refusal
		code         int
	}{
		{"notice_conflict", []string{"notice", "announce", "1"}, http.MethodPost, "/api/v1/notices/1/announce",
			refusal{http.StatusConflict, "conflict", "Notice 1 is already announced (by ACTOR at TIME); nothing was sent again."}, exitFailed},
		{"missing_backfill", []string{"backfill", "plan", "nope"}, http.MethodGet, "/api/v1/backfills/nope",
			refusal{http.StatusNotFound, "not found", "There is no backfill nope."}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := apiRefusal(t, tc.method, srv.url+tc.path, "")
			api.msg = sameness(api.msg)
			if api != tc.want {
				t.Errorf("API: %+v, want %+v", api, tc.want)
			}
			for _, mode := range []struct{ name, flag, value string }{{"local", "--config", localCfg}, {"server", "--server", srv.url}} {
				code, line := cliRefusal(t, append([]string{mode.flag, mode.value}, tc.args...)...)
				if line = sameness(line); code != tc.code || line != tc.want.msg {
					t.Errorf("CLI %s: exit %d %q, want exit %d %q", mode.name, code, line, tc.code, tc.want.msg)
				}
			}
		})
	}

	// A rule is busy only in a monitor, which `trueup check` has none of: locally a check runs
	// its rules on its own. Through a server whose rule is running, the API and the CLI say what
	// the monitor says.
	t.Run("busy_rule", func(t *testing.T) {
		url, release := busyRuleServer(t, served, "matches_raw")
		defer release()
		want := refusal{http.StatusConflict, "conflict", fault.Message(monitor.Busy("matches_raw"))}
		if want.msg != "Rule matches_raw is already running; try again when it has finished." {
			t.Errorf("the monitor says %q", want.msg)
		}
		if api := apiRefusal(t, http.MethodPost, url+"/api/v1/check", `{"rules": ["matches_raw"]}`); api != want {
			t.Errorf("API check: %+v, want %+v", api, want)
		}
		if api := apiRefusal(t, http.MethodPost, url+"/api/v1/rules/matches_raw/run", ""); api != want {
			t.Errorf("API run-now: %+v, want %+v", api, want)
		}
		if code, line := cliRefusal(t, "--server", url, "check", "--rule", "matches_raw"); code != exitFailed || line != want.msg {
			t.Errorf("CLI --server: exit %d %q, want exit %d %q", code, line, exitFailed, want.msg)
		}
	})
}

// busyRuleServer serves the rules of the demo project in dir through a monitor in which rule is
// running until release is called.
func busyRuleServer(t *testing.T, dir, rule string) (url string, release func()) {
	t.Helper()
	ctx := context.Background()
	e := &env{stdout: io.Discard, stderr: io.Discard, globals: globals{config: filepath.Join(dir, "trueup.yaml")}}
	a, err := openApp(ctx, e.globals)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	targets := projectTargets(e, a)
	set, err := loadRules(ctx, e, a.Config.ProjectDir("rules"), targets)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	held := &heldRunner{Runner: rules.NewRunner(targets), started: make(chan struct{}), release: make(chan struct{})}
	mon := monitor.New(set.Rules, held, rules.NewStore(l), monitor.NewLedgerSlots(l), monitor.WithBusyWait(0))
	done := make(chan struct{})
	go func() {
		defer close(done)
		mon.RunNow(ctx, rule, "ann")
	}()
	<-held.started
	ts := httptest.NewServer(server.New(server.Options{Logger: slog.New(slog.DiscardHandler), Rules: mon, Audit: l}).Handler())
	t.Cleanup(ts.Close)
	return ts.URL, func() {
		close(held.release)
		<-done
	}
}

// heldRunner runs rules once release is closed, saying when a run has started.
type heldRunner struct {
	*rules.Runner
	started, release chan struct{}
}

func (h *heldRunner) Run(ctx context.Context, rs []*rules.Rule) *rules.Run {
	close(h.started)
	<-h.release
	return h.Runner.Run(ctx, rs)
}
