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
	"trueup/rules"
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
	if s.opt.Rules != nil {
		// The rules' and the built-in checks' last results, judged as trueup check judges a run:
		// what it fails (error severity) apart from what it warns of.
		latest, err := s.opt.Rules.Latest(ctx)
		if err != nil {
			return w, nil, err
		}
		for _, res := range latest {
			switch {
			case res.FailsCheck():
				w.FailingRules = append(w.FailingRules, s.resultItem(res))
			case res.Warns():
				w.Warnings = append(w.Warnings, s.resultItem(res))
			}
		}
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

// resultItem is a failing or warning result on the dashboard: a rule links to its page, a
// built-in check (a stale writer's, which no rule file names) to its table's, which says what
// to do.
func (s *Server) resultItem(res rules.Result) page.WorkItem {
	href := ruleHref(res.Rule)
	if _, err := s.opt.Rules.Rule(res.Rule); err != nil && res.Table != "" {
		href = tableHref(res.Table, res.Target)
	}
	detail := res.Message
	if n := len(res.FailingPartitions); n > 0 {
		detail = fmt.Sprintf("%s: %s", page.Plural(n, "failing partition", "failing partitions"), strings.Join(res.FailingPartitions[:min(n, 3)], ", "))
		if n > 3 {
			detail += ", …"
		}
	}
	return page.WorkItem{Name: res.Rule, Href: href, Status: string(res.Status), Severity: string(res.Severity), Detail: detail}
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
