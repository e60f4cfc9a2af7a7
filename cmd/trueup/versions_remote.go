package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"trueup/views"
)

// targetQuery names the --target a table request is for; without it the server picks the
// target that has the table.
func targetQuery(e *env) url.Values {
	q := url.Values{}
	if e.globals.target != "" {
		q.Set("target", e.globals.target)
	}
	return q
}

// versionsRemote is `trueup versions TABLE [--retire vN]` through a server.
func versionsRemote(ctx context.Context, e *env, rc *remote, table, retire, reason, format string) error {
	path := "tables/" + url.PathEscape(table)
	var j views.ListingJSON
	if retire != "" {
		body := map[string]string{"version": retire, "reason": reason, "target": e.globals.target}
		if err := rc.call(ctx, "versions", http.MethodPost, path+"/retire", targetQuery(e), body, &j); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "versions: retired %s %s\n", table, retire)
	} else if err := rc.call(ctx, "versions", http.MethodGet, path, targetQuery(e), nil, &j); err != nil {
		return err
	}
	return reportVersions(e, format, j.Listing(), j.Busy)
}

// publishRemote is `trueup swap` or `trueup rollback` through a server: the publish, or with
// dryRun the plan, printed as locally. A rollback's undoes (0: none) is sent for the server to
// check: a retried rollback does not take back a second swap.
func publishRemote(ctx context.Context, e *env, rc *remote, kind, table, to, reason, override string, undoes int64, dryRun bool, format string) error {
	body := map[string]any{"target": e.globals.target, "to": to, "reason": reason, "override": override, "dry_run": dryRun}
	if undoes != 0 {
		body["undoes"] = undoes
	}
	path := "tables/" + url.PathEscape(table) + "/" + kind
	if dryRun {
		var plan views.Plan
		if err := rc.call(ctx, kind, http.MethodPost, path, targetQuery(e), body, &plan); err != nil {
			return err
		}
		return writeViewPlan(e.stdout, format, plan)
	}
	var p views.Publish
	if err := rc.call(ctx, kind, http.MethodPost, path, targetQuery(e), body, &p); err != nil {
		return err
	}
	return finishPublish(ctx, e, format, p, nil)
}
