package monitor

import (
	"context"
	"fmt"
	"strings"

	"trueup/fault"
	"trueup/rules"
)

// RunSelected runs, as one run recorded like a run-now, the rules named (every rule when none
// is named) that carry any of tags (any tag when none is given): `trueup check --rule --tag`
// through a server. Not found (fault) for an unknown name or when nothing matches, Busy when one
// of them is still running after the wait (claim).
func (m *Monitor) RunSelected(ctx context.Context, names, tags []string, actor string) (*rules.Run, error) {
	rs, err := m.selected(names, tags)
	if err != nil {
		return nil, err
	}
	if err := m.claim(ctx, rs); err != nil {
		return nil, err
	}
	return m.execute(ctx, rs, m.trigger, actor)
}

// PlanSelected is what RunSelected would run, without running it: the SQL that `trueup check
// --explain` prints. Not found as RunSelected.
func (m *Monitor) PlanSelected(names, tags []string) (*rules.Plan, error) {
	rs, err := m.selected(names, tags)
	if err != nil {
		return nil, err
	}
	return m.runner.Plan(rs), nil
}

// selected are the rules RunSelected runs; not found for an unknown name or when none matches.
func (m *Monitor) selected(names, tags []string) ([]*rules.Rule, error) {
	set := &rules.Set{Rules: m.Rules()}
	rs, err := set.Select(names, tags)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err) // rules.NotFound
	}
	// A project with no rules yet (a fresh `trueup init`) checks clean: asked for everything,
	// it runs nothing. A --rule or --tag that matches nothing is still not found.
	if len(rs) == 0 && len(names)+len(tags) > 0 {
		var asked []string
		if len(names) > 0 {
			asked = append(asked, fmt.Sprintf("rule %q", strings.Join(names, ",")))
		}
		if len(tags) > 0 {
			asked = append(asked, fmt.Sprintf("tag %q", strings.Join(tags, ",")))
		}
		return nil, fmt.Errorf("monitor: %w", fault.New(fault.NotFound, "No rule matches %s.", strings.Join(asked, " and ")))
	}
	return rs, nil
}
