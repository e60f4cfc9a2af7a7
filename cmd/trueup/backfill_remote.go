package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"trueup/backfill"
)

// backfillPoll is how often a run or resume through a server asks how the build is going.
const backfillPoll = 250 * time.Millisecond

// backfillRemote is `trueup backfill VERB NAME` through a server: the same answers, printed
// and judged as the local command does. A run or resume waits for the server's build to end.
func backfillRemote(ctx context.Context, e *env, rc *remote, verb, name string, scope *backfill.Scope, sample int, out *backfillOutput) error {
	cmd := "backfill " + verb
	path := "backfills/" + url.PathEscape(name)
	scoped := url.Values{} // --from and --to, as the server reads them
	if scope != nil {
		scoped.Set("from", scope.From.Format("2006-01-02"))
		scoped.Set("to", scope.To.Format("2006-01-02"))
	}
	switch verb {
	case "plan":
		var p backfill.Plan
		if err := rc.call(ctx, cmd, http.MethodGet, path, scoped, nil, &p); err != nil {
			return err
		}
		return reportPlan(out, name, &p)
	case "dry-run":
		var pv backfill.Preview
		if err := rc.call(ctx, cmd, http.MethodPost, path+"/dry-run", scoped, nil, &pv); err != nil {
			return err
		}
		return reportDryRun(out, name, &pv)
	case "run":
		var run backfill.Run
		q := scoped
		if sample > 0 {
			q.Set("sample", strconv.Itoa(sample))
		}
		if err := rc.call(ctx, cmd, http.MethodPost, path+"/run", q, nil, &run); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "backfill %s: run %d building %s on %s\n", name, run.ID, versionsOf(&run), rc.Base())
		return awaitBuilt(ctx, e, rc, cmd, path, out)
	case "resume", "retry":
		var run backfill.Run
		if err := rc.call(ctx, cmd, http.MethodPost, path+"/resume", nil, nil, &run); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "backfill %s: resuming run %d (%s) on %s\n", name, run.ID, run.State, rc.Base())
		return awaitBuilt(ctx, e, rc, cmd, path, out)
	case "cancel":
		if err := rc.call(ctx, cmd, http.MethodPost, path+"/cancel", nil, nil, nil); err != nil {
			return err
		}
		st, err := awaitStopped(ctx, rc, cmd, path)
		if err != nil {
			return err
		}
		return out.status(st)
	case "status":
		var st backfill.Status
		if err := rc.call(ctx, cmd, http.MethodGet, path+"/status", nil, nil, &st); err != nil {
			return err
		}
		return out.status(&st)
	case "history":
		var h []backfill.ReasonCount
		if err := rc.call(ctx, cmd, http.MethodGet, "backfills/history", nil, nil, &h); err != nil {
			return err
		}
		return out.history(h)
	case "verify":
		return usagef("backfill verify works only locally, not with --server")
	}
	return usagef("backfill: unknown action %q (want %s)", verb, backfillUsage)
}

// awaitBuilt waits for the server to stop building the backfill's latest run, then reports it
// as a local run does. An interrupt leaves the run going on in the server.
func awaitBuilt(ctx context.Context, e *env, rc *remote, cmd, path string, out *backfillOutput) error {
	st, err := awaitStopped(ctx, rc, cmd, path)
	if ctx.Err() != nil {
		fmt.Fprintf(e.stderr, "backfill: stopped waiting; the run goes on in the server (trueup backfill status|cancel NAME --server %s)\n", rc.Base())
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	return reportBuilt(out, st)
}

// awaitStopped polls the status of the backfill's latest run until it is neither building nor
// validating.
func awaitStopped(ctx context.Context, rc *remote, cmd, path string) (*backfill.Status, error) {
	for {
		var st backfill.Status
		if err := rc.call(ctx, cmd, http.MethodGet, path+"/status", nil, nil, &st); err != nil {
			return nil, err
		}
		if st.State != backfill.RunRunning && st.State != backfill.RunValidating {
			return &st, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backfillPoll):
		}
	}
}
