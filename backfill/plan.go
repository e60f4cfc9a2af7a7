package backfill

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	tsql "trueup/sql"
	"trueup/views"
)

// RuleScope finds the partitions a rule currently fails on, for `scope: from-rule: NAME`.
type RuleScope interface {
	FailingPartitions(ctx context.Context, rule string) ([]string, error)
}

// Plan is the one-page run plan: computed, not typed.
type Plan struct {
	Backfill     string    `json:"backfill"`
	Table        string    `json:"table"`
	Target       string    `json:"target"`
	Reason       string    `json:"reason"`
	Objective    string    `json:"objective"`
	Scope        string    `json:"scope"`
	Grain        string    `json:"grain"`
	Column       string    `json:"partition_column"`
	Partitions   []string  `json:"partitions"`
	Mode         string    `json:"mode"`
	Write        string    `json:"write"`
	Live         string    `json:"live_version"`
	Inputs       []Input   `json:"inputs"`
	InputsOK     bool      `json:"inputs_ok"`
	Downstream   []Refresh `json:"downstream_refreshes"`
	Validation   []string  `json:"validation"`
	Expect       string    `json:"expect"`
	Rollback     string    `json:"rollback"`
	Notice       string    `json:"notice"`
	Score        int       `json:"score"`
	ScoreMissing []string  `json:"score_missing"`
	Findings     []Finding `json:"findings"`
	CodeSHA      string    `json:"code_sha256"`
	Concurrency  int       `json:"concurrency"`
	Throttle     string    `json:"throttle"`
	Window       string    `json:"window"`
	Owner        string    `json:"owner"`
	Contact      string    `json:"contact"`

	windows []tsql.Window
}

// Input is one relation the transform reads, checked for the whole scope.
type Input struct {
	Relation    string   `json:"relation"`
	Partitioned bool     `json:"partitioned"`
	Missing     []string `json:"missing_partitions,omitempty"`
	Empty       bool     `json:"empty"`
}

// Refresh is one downstream table partition rebuilt after the upstream.
type Refresh struct {
	Table     string `json:"table"`
	Partition string `json:"partition"`
}

// Finding is something the plan found; blocking findings stop a run.
type Finding struct {
	Severity string `json:"severity"` // blocking or warning
	Message  string `json:"message"`
}

// Blocked reports whether any finding blocks the run.
func (p *Plan) Blocked() bool {
	for _, f := range p.Findings {
		if f.Severity == "blocking" {
			return true
		}
	}
	return false
}

// Planner computes plans against a project's target.
type Planner struct {
	Set    *Set
	Engine tsql.Engine
	Target string // target name
	Rules  RuleScope
}

func (p *Plan) block(format string, args ...any) {
	p.Findings = append(p.Findings, Finding{"blocking", fmt.Sprintf(format, args...)})
}

func (p *Plan) warn(format string, args ...any) {
	p.Findings = append(p.Findings, Finding{"warning", fmt.Sprintf(format, args...)})
}

// Plan computes the plan of backfill b. override, when not empty, replaces the file's scope
// (e.g. from --from/--to).
func (pl Planner) Plan(ctx context.Context, b *Backfill, override *Scope) (*Plan, error) {
	p := &Plan{
		Backfill: b.Name, Table: b.Table, Target: pl.Target, Reason: b.Reason, Objective: b.Objective,
		Grain: b.Grain, Column: b.Partition, Mode: b.Mode, Validation: b.Validate, Expect: b.Expect, CodeSHA: b.CodeSHA(),
		Concurrency: b.Concurrency, Throttle: b.Throttle.String(), Owner: b.Owner, Contact: b.Contact,
		Partitions: []string{}, Downstream: []Refresh{}, Inputs: []Input{}, Findings: []Finding{},
	}
	if b.Window != nil {
		p.Window = b.Window.String()
	}
	if b.Reason == "" {
		p.block("no reason: say why in the header (reason: %s)", strings.Join(Reasons, "|"))
	}
	if b.Objective == "" {
		p.block("no objective: say in one or two sentences what this backfill fixes (objective: …)")
	}
	scope := b.Scope
	if override != nil {
		scope = *override
	}
	p.Scope = scope.String()
	live, liveType, err := pl.liveVersion(ctx, b.Table, b.Partition)
	if err != nil {
		p.block("%v", err)
		return p, nil
	}
	p.Live = live.Name()
	parts, err := pl.scopePartitions(ctx, b, scope, live)
	if err != nil {
		p.block("%v", err)
	}
	for _, t := range parts {
		p.Partitions = append(p.Partitions, formatPartition(t, b.Grain))
		p.windows = append(p.windows, window(b.Partition, liveType, t, b.Grain))
	}
	if len(parts) == 0 && err == nil {
		p.block("the scope %s holds no partitions: nothing to rebuild", p.Scope)
	}
	p.Write = fmt.Sprintf("build %s beside the live %s: carry over the partitions outside the scope unchanged, "+
		"rebuild the %d in scope one by one (each replaced atomically, rerunning replaces it again); the live view is not touched",
		views.Physical(b.Table, live.N+1)+" (or the next free version)", live.Physical(), len(parts))
	if b.Mode == ModeFullRebuild {
		p.Write = fmt.Sprintf("build the next version of %s from the transform for every partition; the live %s is not touched", b.Table, live.Physical())
	}
	p.Rollback = fmt.Sprintf("nothing to undo before the swap: the live %s stays as it is; after a swap, rollback repoints %s back to %s", live.Physical(), b.Table, live.Name())
	p.Notice = "a change notice is drafted from this plan and the validation evidence when the run is created"
	if b.Contact != "" {
		p.Notice += "; contact: " + b.Contact
	}
	if len(parts) > 0 {
		pl.checkInputs(ctx, b, p, liveType)
		if err := pl.downstream(ctx, b, parts, p, map[string]bool{b.Table: true}); err != nil {
			p.block("%v", err)
		}
	}
	pl.score(ctx, b, p)
	return p, nil
}

// liveVersion finds the physical table the logical table's view reads and its partition type.
func (pl Planner) liveVersion(ctx context.Context, table, partition string) (views.Version, tsql.Type, error) {
	src, err := pl.Engine.ViewSource(ctx, table)
	if err != nil {
		return views.Version{}, 0, fmt.Errorf("table %s: no live view in target %s (%v)", table, pl.Target, err)
	}
	name, n, ok := views.ParseVersion(src)
	if !ok || name != table {
		return views.Version{}, 0, fmt.Errorf("table %s: its view reads %s, not a version %s__vN", table, src, table)
	}
	cols, err := pl.Engine.Columns(ctx, src)
	if err != nil {
		return views.Version{}, 0, fmt.Errorf("table %s: %w", table, err)
	}
	for _, c := range cols {
		if c.Name == partition {
			if !c.Kind.Temporal() {
				return views.Version{}, 0, fmt.Errorf("table %s: partition column %s is %s, want a date or timestamp", table, partition, c.Type)
			}
			return views.Version{Table: table, N: n}, c.Kind, nil
		}
	}
	return views.Version{}, 0, fmt.Errorf("table %s: no column %s to partition by", table, partition)
}

func window(col string, typ tsql.Type, t time.Time, grain string) tsql.Window {
	return tsql.Window{Column: col, Type: typ, Start: t, End: tsql.NextGrain(t, grain)}
}

func (pl Planner) scopePartitions(ctx context.Context, b *Backfill, s Scope, live views.Version) ([]time.Time, error) {
	if b.Mode == ModeFullRebuild {
		return pl.existingPartitions(ctx, live.Physical(), b.Partition, b.Grain)
	}
	if s.FromRule != "" {
		if pl.Rules == nil {
			return nil, fmt.Errorf("scope from-rule: %s: no rules are loaded", s.FromRule)
		}
		failing, err := pl.Rules.FailingPartitions(ctx, s.FromRule)
		if err != nil {
			return nil, fmt.Errorf("scope from-rule: %s: %w", s.FromRule, err)
		}
		var out []time.Time
		for _, f := range failing {
			t, err := parsePartition(f, b.Grain)
			if err != nil {
				return nil, fmt.Errorf("scope from-rule: %s: %w", s.FromRule, err)
			}
			if !slices.ContainsFunc(out, t.Equal) {
				out = append(out, t)
			}
		}
		slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
		return out, nil
	}
	if s.From.IsZero() {
		return nil, errors.New("no scope: give scope: FROM..TO or scope: from-rule: NAME (or --from/--to)")
	}
	return partitionsBetween(s.From, s.To, b.Grain), nil
}

// existingPartitions lists the partitions a relation holds, oldest first.
func (pl Planner) existingPartitions(ctx context.Context, rel, col, grain string) ([]time.Time, error) {
	d := pl.Engine.Dialect()
	p := d.TruncTime(d.Quote(col), grain)
	res, err := pl.Engine.Query(ctx, "SELECT DISTINCT "+p+" AS p FROM "+d.QuoteRelation(rel)+" ORDER BY p")
	if err != nil {
		return nil, fmt.Errorf("partitions of %s: %w", rel, err)
	}
	var out []time.Time
	for _, r := range res.Rows {
		out = append(out, tsql.TruncGrain(tsql.AsTime(r[0]), grain))
	}
	return out, nil
}

// checkInputs checks that every relation the transform reads has rows in every partition of
// the scope (when it has the partition column) or at all (when it does not).
func (pl Planner) checkInputs(ctx context.Context, b *Backfill, p *Plan, typ tsql.Type) {
	p.InputsOK = true
	rels, err := pl.Engine.Relations(ctx)
	if err != nil {
		p.block("input check: %v", err)
		p.InputsOK = false
		return
	}
	known := map[string]bool{}
	for _, r := range rels {
		known[r.Name] = true
	}
	d := pl.Engine.Dialect()
	first, last := p.windows[0], p.windows[len(p.windows)-1]
	for _, ref := range tsql.TableRefs(b.SQL) {
		if !known[ref] {
			p.block("input %s does not exist in target %s", ref, pl.Target)
			p.InputsOK = false
			continue
		}
		in := Input{Relation: ref}
		cols, err := pl.Engine.Columns(ctx, ref)
		if err != nil {
			p.block("input %s: %v", ref, err)
			p.InputsOK = false
			continue
		}
		if slices.ContainsFunc(cols, func(c tsql.Column) bool { return c.Name == b.Partition }) {
			in.Partitioned = true
			part := d.TruncTime(d.Quote(b.Partition), b.Grain)
			q, args, err := tsql.Expand(d, "SELECT "+part+" AS p, count(*) AS n FROM "+d.QuoteRelation(ref)+
				" WHERE "+d.Quote(b.Partition)+" >= $start AND "+d.Quote(b.Partition)+" < $end GROUP BY "+part,
				tsql.Window{Type: typ, Start: first.Start, End: last.End}.Params())
			if err != nil {
				p.block("input %s: %v", ref, err)
				continue
			}
			res, err := pl.Engine.Query(ctx, q, args...)
			if err != nil {
				p.block("input %s: %v", ref, err)
				p.InputsOK = false
				continue
			}
			have := map[string]bool{}
			for _, r := range res.Rows {
				if tsql.AsInt64(r[1]) > 0 {
					have[formatPartition(tsql.TruncGrain(tsql.AsTime(r[0]), b.Grain), b.Grain)] = true
				}
			}
			for _, part := range p.Partitions {
				if !have[part] {
					in.Missing = append(in.Missing, part)
				}
			}
			if len(in.Missing) > 0 {
				p.InputsOK = false
				p.block("input %s has no rows for %d partition(s) of the scope: %s", ref, len(in.Missing), strings.Join(in.Missing, ", "))
			}
		} else {
			res, err := pl.Engine.Query(ctx, "SELECT count(*) FROM (SELECT 1 AS x FROM "+d.QuoteRelation(ref)+" LIMIT 1) AS s")
			if err != nil || tsql.AsInt64(res.Rows[0][0]) == 0 {
				in.Empty = true
				p.InputsOK = false
				p.block("input %s is empty", ref)
			}
		}
		p.Inputs = append(p.Inputs, in)
	}
}

// downstream lists the refreshes of every table built from this one, transitively.
func (pl Planner) downstream(ctx context.Context, b *Backfill, parts []time.Time, p *Plan, seen map[string]bool) error {
	for _, name := range b.Downstream {
		if seen[name] {
			return fmt.Errorf("downstream cycle through %s", name)
		}
		db := pl.Set.ForTable(name)
		if db == nil {
			return fmt.Errorf("downstream table %s has no backfill file", name)
		}
		var affected []time.Time
		for _, t := range parts {
			t = tsql.TruncGrain(t, db.Grain)
			if !slices.ContainsFunc(affected, t.Equal) {
				affected = append(affected, t)
			}
		}
		if db.Cumulative && len(affected) > 0 {
			src, err := pl.Engine.ViewSource(ctx, name)
			if err != nil {
				return fmt.Errorf("downstream table %s: %w", name, err)
			}
			existing, err := pl.existingPartitions(ctx, src, db.Partition, db.Grain)
			if err != nil {
				return err
			}
			last := affected[len(affected)-1]
			if len(existing) > 0 && existing[len(existing)-1].After(last) {
				last = existing[len(existing)-1]
			}
			affected = partitionsBetween(affected[0], last, db.Grain)
		}
		for _, t := range affected {
			p.Downstream = append(p.Downstream, Refresh{Table: name, Partition: formatPartition(t, db.Grain)})
		}
		next := map[string]bool{name: true}
		for k := range seen {
			next[k] = true
		}
		if err := pl.downstream(ctx, db, affected, p, next); err != nil {
			return err
		}
	}
	return nil
}

// score gives the backfillability score 0–4, one point each for: parameterised by window,
// idempotent write, historical inputs present, no clock or current-state dependency.
func (pl Planner) score(ctx context.Context, b *Backfill, p *Plan) {
	missing := func(why string) { p.ScoreMissing = append(p.ScoreMissing, why) }
	ph := tsql.Placeholders(b.SQL)
	if slices.Contains(ph, "start") && slices.Contains(ph, "end") {
		p.Score++
	} else {
		missing("not parameterised by window: the transform should filter on $start and $end, so each partition reads only its own inputs")
		p.warn("the transform does not use both $start and $end: every partition recomputes from all inputs")
	}
	if err := pl.checkOutput(ctx, b, p); err != nil {
		missing("write is not idempotent: " + err.Error())
		p.block("transform: %v", err)
	} else {
		p.Score++
	}
	if p.InputsOK {
		p.Score++
	} else {
		missing("historical inputs missing: some input has no rows for part of the scope")
	}
	if calls := tsql.ClockCalls(b.SQL); len(calls) > 0 {
		missing("reads the clock or current state (" + strings.Join(calls, ", ") + "): a rerun would not give the same rows")
		p.block("the transform reads the clock or current state (%s): a backfill must be a function of its window and inputs", strings.Join(calls, ", "))
	} else {
		p.Score++
	}
}

// checkOutput prepares the transform for the first partition and checks that its rows carry
// the partition column and the key, so each partition can be replaced as a whole.
func (pl Planner) checkOutput(ctx context.Context, b *Backfill, p *Plan) error {
	if len(p.windows) == 0 {
		return errors.New("no partition to prepare the transform for")
	}
	q, args, err := tsql.Expand(pl.Engine.Dialect(), b.SQL, p.windows[0].Params())
	if err != nil {
		return err
	}
	res, err := pl.Engine.Query(ctx, "SELECT * FROM ("+q+") AS q LIMIT 0", args...)
	if err != nil {
		return fmt.Errorf("does not prepare: %s", firstLine(err.Error()))
	}
	for _, c := range append([]string{b.Partition}, b.Key...) {
		if !slices.Contains(res.Columns, c) {
			return fmt.Errorf("its rows have no column %s (they have %s)", c, strings.Join(res.Columns, ", "))
		}
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TableRefreshes is how many partitions of one downstream table a plan refreshes.
type TableRefreshes struct {
	Table      string
	Partitions int
}

// RefreshesByTable counts the downstream refreshes per table, in plan order.
func (p *Plan) RefreshesByTable() []TableRefreshes {
	var out []TableRefreshes
	idx := map[string]int{}
	for _, r := range p.Downstream {
		i, ok := idx[r.Table]
		if !ok {
			i = len(out)
			idx[r.Table] = i
			out = append(out, TableRefreshes{Table: r.Table})
		}
		out[i].Partitions++
	}
	return out
}
