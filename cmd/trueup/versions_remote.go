package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"trueup/views"
)

// listingJSON is a table's versions as GET /api/v1/tables/{table} answers them.
type listingJSON struct {
	Target         string              `json:"target"`
	Table          string              `json:"table"`
	Live           string              `json:"live"`
	RollbackTarget string              `json:"rollback_target"`
	Versions       []views.VersionInfo `json:"versions"`
	History        []views.Publish     `json:"history"`
	Busy           string              `json:"busy"`
}

func (j listingJSON) listing() views.Listing {
	l := views.Listing{Target: j.Target, Table: j.Table, Versions: j.Versions, History: j.History}
	l.Live, _ = views.ParseVersionArg(j.Table, j.Live)
	l.RollbackTarget, _ = views.ParseVersionArg(j.Table, j.RollbackTarget)
	for i := range l.Versions {
		l.Versions[i].Target = j.Target
	}
	return l
}

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
	var j listingJSON
	if retire != "" {
		body := map[string]string{"version": retire, "reason": reason, "target": e.globals.target}
		if err := rc.call(ctx, "versions", http.MethodPost, path+"/retire", targetQuery(e), body, &j); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "versions: retired %s %s\n", table, retire)
	} else if err := rc.call(ctx, "versions", http.MethodGet, path, targetQuery(e), nil, &j); err != nil {
		return err
	}
	return reportVersions(e, format, j.listing(), j.Busy)
}

// publishRemote is `trueup swap` or `trueup rollback` through a server: the publish, or with
// dryRun the plan, printed as locally.
func publishRemote(ctx context.Context, e *env, rc *remote, kind, table, to, reason, override string, dryRun bool, format string) error {
	body := map[string]any{"target": e.globals.target, "to": to, "reason": reason, "override": override, "dry_run": dryRun}
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
