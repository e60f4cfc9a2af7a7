package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"trueup/backfill"
	"trueup/fault"
	"trueup/notices"
	"trueup/ops"
	"trueup/server/page"
	"trueup/views"
)

// recentPublishes is how many of the newest swaps and rollbacks the dashboard lists.
const recentPublishes = 5

// dashboardWork gathers what needs a person now, from every service the server has, and the
// newest swaps and rollbacks across the tables (what changed lately).
func (s *Server) dashboardWork(ctx context.Context, tables []views.Table) (page.Work, []page.RecentPublish, error) {
	var w page.Work
	recent := map[string]page.RecentPublish{} // by target and publish id: a group's publish is listed once
	infos, err := s.rules.List(ctx)
	if err != nil {
		return w, nil, err
	}
	for _, info := range infos {
		status := info.Status
		if status != "fail" && status != "error" {
			continue
		}
		detail := info.Message
		if n := len(info.FailingPartitions); n > 0 {
			detail = fmt.Sprintf("%s failing partitions: %s", page.Thousands(int64(n)), strings.Join(info.FailingPartitions[:min(n, 3)], ", "))
			if n > 3 {
				detail += ", …"
			}
		}
		w.FailingRules = append(w.FailingRules, page.WorkItem{Name: info.Rule, Href: ruleHref(info.Rule), Status: status, Severity: info.Severity, Detail: detail})
	}
	if s.opt.Backfills != nil {
		list, err := s.opt.Backfills.List(ctx)
		if err != nil {
			return w, nil, err
		}
		for _, b := range list {
			if b.Latest == nil || b.Via != "" || b.Latest.State == backfill.RunCancelled {
				continue // a downstream backfill's run is its upstream's, listed once under that
			}
			st := b.Latest
			if st.State == backfill.RunValidated && s.published(ctx, st) {
				continue
			}
			w.Backfills = append(w.Backfills, page.WorkItem{Name: b.Name, Href: backfillHref(b.Name), Status: st.State,
				Detail: fmt.Sprintf("run %d: %s/%s partitions", st.RunID, page.Thousands(int64(st.PartitionsDone)), page.Thousands(int64(st.PartitionsTotal)))})
		}
	}
	for _, t := range tables {
		if s.opt.Tables == nil {
			break
		}
		l, err := s.opt.Tables.Versions(ctx, ops.VersionsRequest{Target: t.Target, Table: t.Name, History: recentPublishes})
		if errors.Is(err, fault.ErrNotFound) {
			continue // a target without versions set up
		}
		if err != nil {
			return w, nil, err
		}
		for _, p := range l.History {
			recent[fmt.Sprintf("%s\x00%d", l.Target, p.ID)] = page.RecentPublish{PublishRow: publishRow(p),
				Table: p.Table, Href: tableHref(p.Table, l.Target), StartedAt: p.StartedAt}
		}
		if views.Mixed(l.Nodes) {
			w.AwaitSwap = append(w.AwaitSwap, page.WorkItem{Name: t.Name, Href: tableHref(t.Name, l.Target), Status: "half done",
				Detail: fmt.Sprintf("its nodes read different versions: trueup swap %s --resume completes the swap (with --undo, takes it back)", t.Name)})
		}
		for _, v := range l.Versions {
			if v.State == views.StateValidated && !v.Live {
				w.AwaitSwap = append(w.AwaitSwap, page.WorkItem{Name: t.Name + " " + v.Name(), Status: "validated",
					Href:   "/tables/" + url.PathEscape(t.Name) + "?target=" + url.QueryEscape(t.Target),
					Detail: fmt.Sprintf("built by %s from %s; live is %s", v.BuiltBy, v.Backfill, l.Live)})
			}
		}
	}
	if s.opt.Notices != nil {
		for _, state := range []notices.State{notices.StateDraft, notices.StateAnnounced} {
			ns, err := s.opt.Notices.List(ctx, notices.Filter{State: state})
			if err != nil {
				return w, nil, err
			}
			for _, n := range ns {
				w.OpenNotices = append(w.OpenNotices, page.WorkItem{Name: n.Title, Href: fmt.Sprintf("/notices/%d", n.ID),
					Status: string(n.State), Detail: strings.Join(n.Tables, ", ")})
			}
		}
	}
	return w, newestPublishes(recent), nil
}

// newestPublishes is the recentPublishes newest of rs, newest first.
func newestPublishes(rs map[string]page.RecentPublish) []page.RecentPublish {
	out := slices.Collect(maps.Values(rs))
	slices.SortFunc(out, func(a, b page.RecentPublish) int { return b.StartedAt.Compare(a.StartedAt) })
	return out[:min(len(out), recentPublishes)]
}

// published reports whether a validated run's upstream version went live since.
func (s *Server) published(ctx context.Context, st *backfill.Status) bool {
	if st.Run == nil {
		return false
	}
	if s.opt.Tables == nil {
		return false
	}
	l, err := s.opt.Tables.Versions(ctx, ops.VersionsRequest{Target: st.Run.Target, Table: st.Table})
	if err != nil {
		return false
	}
	for _, v := range l.Versions {
		if v.RunID == st.RunID && (v.State == views.StateLive || v.State == views.StatePrevious) {
			return true
		}
	}
	return false
}

// backfillsFromRule lists the backfills whose scope is the partitions a rule fails on.
func (s *Server) backfillsFromRule(ctx context.Context, rule string) ([]page.WorkItem, error) {
	if s.opt.Backfills == nil {
		return nil, nil
	}
	list, err := s.opt.Backfills.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []page.WorkItem
	for _, b := range list {
		if b.Backfill != nil && b.Backfill.Scope.FromRule == rule {
			out = append(out, page.WorkItem{Name: b.Name, Href: backfillHref(b.Name)})
		}
	}
	return out, nil
}
