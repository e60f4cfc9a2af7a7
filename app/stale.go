package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"trueup/monitor"
	"trueup/rules"
	"trueup/views"
)

// The built-in check beside the project's rules: a writer that kept writing a version after a
// swap or rollback stopped it being live wrote rows readers do not see. Every run of rules on a
// logical table (trueup check, the schedule, run now) also reports, for that table, a failing
// result "<table>.written_after_live" naming the version and its partitions (views.Stale), and
// a passing one once trueup catch-up carried them over: it alerts like any rule. A run of the
// whole rule set (trueup check without --rule or --tag) reports it for every table trueup
// watches in the targets it checks, those no rule reads too: a table without rules has writers
// as well. A narrowed run keeps to the tables of the rules it runs.

// KindWrittenAfterLive is the kind of the built-in results.
const KindWrittenAfterLive rules.Kind = "written_after_live"

// staleChecked is a rules runner that adds the built-in results for the tables its rules read,
// and in a run of every rule of all (the monitor's rules) for every table watched in the
// targets.
type staleChecked struct {
	monitor.Runner
	p *Project
	// target is where the Runner runs the rules without a target: of their own: the configured
	// default, or the one check --target chose.
	target string
	all    func() []*rules.Rule
}

func (s staleChecked) Run(ctx context.Context, rs []*rules.Rule) *rules.Run {
	run := s.Runner.Run(ctx, rs)
	if ctx.Err() != nil {
		return run
	}
	seen := map[string]bool{}
	check := func(target, table string) {
		key := target + "\x00" + table
		if seen[key] || table == "" {
			return
		}
		seen[key] = true
		if res, ok := s.p.staleResult(ctx, target, table); ok {
			run.Results = append(run.Results, res)
		}
	}
	targets := []string{s.target}
	for _, r := range rs {
		target := r.Target
		if target == "" {
			target = s.target
		}
		if !slices.Contains(targets, target) {
			targets = append(targets, target)
		}
		check(target, r.Table)
	}
	if !s.whole(rs) {
		return run
	}
	for _, target := range targets {
		if _, ok := s.p.Targets[target]; !ok {
			continue
		}
		tables, err := (views.Store{L: s.p.Ledger}).WatchedTables(ctx, target)
		if err != nil {
			run.Results = append(run.Results, rules.Result{Rule: "written_after_live", Kind: KindWrittenAfterLive, Severity: rules.SeverityError,
				Status: rules.StatusError, FailingPartitions: []string{}, Sample: []rules.Row{}, Target: target, At: time.Now().UTC(),
				Message: fmt.Sprintf("could not list the tables of %s whose old versions are watched: %v", target, err)})
			continue
		}
		for _, table := range tables {
			check(target, table)
		}
	}
	return run
}

// whole reports whether rs are all the rules there are (none when there are none).
func (s staleChecked) whole(rs []*rules.Rule) bool {
	if s.all == nil {
		return false
	}
	in := map[string]bool{}
	for _, r := range rs {
		in[r.Name] = true
	}
	for _, r := range s.all() {
		if !in[r.Name] {
			return false
		}
	}
	return true
}

// staleResult is the built-in result of table in target; false when no publish recorded a
// version of it as it stopped being live (nothing to compare with), or the target is not the
// project's.
func (p *Project) staleResult(ctx context.Context, target, table string) (rules.Result, bool) {
	e, ok := p.Targets[target]
	if !ok {
		return rules.Result{}, false
	}
	if watched, err := (views.Store{L: p.Ledger}).Watched(ctx, target, table); err == nil && !watched {
		return rules.Result{}, false
	}
	started := time.Now()
	stale, err := views.New(target, e, p.Ledger).Stale(ctx, table)
	res := rules.Result{Rule: table + ".written_after_live", Kind: KindWrittenAfterLive, Severity: rules.SeverityError,
		Status: rules.StatusPass, FailingPartitions: []string{}, Sample: []rules.Row{}, Target: target, Table: table, At: time.Now().UTC()}
	switch {
	case err != nil:
		res.Status, res.Message = rules.StatusError, fmt.Sprintf("could not tell whether an old version of %s was written after it stopped being live: %v", table, err)
	case len(stale) == 0:
		res.Message = "no old version of " + table + " was written after it stopped being live"
	default:
		res.Status = rules.StatusFail
		var lines []string
		carries, inScope := false, false
		for _, sv := range stale {
			lines = append(lines, sv.String())
			lines = append(lines, sv.NotCarried()...)
			carries, inScope = carries || len(sv.Partitions) > 0, inScope || len(sv.InScope) > 0
			for _, c := range append(slices.Clone(sv.Partitions), sv.InScope...) {
				res.Violations += max(c.Delta, 1)
				if !slices.Contains(res.FailingPartitions, c.Partition) {
					res.FailingPartitions = append(res.FailingPartitions, c.Partition)
				}
			}
		}
		res.Message = strings.Join(lines, "; ")
		switch {
		case carries && inScope:
			res.Message += "; trueup catch-up " + table + " carries those outside a backfill's scope into the live version"
		case carries:
			res.Message += "; trueup catch-up " + table + " carries them into the live version"
		}
	}
	res.DurationMS = float64(time.Since(started).Microseconds()) / 1000
	return res, true
}
