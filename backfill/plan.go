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
	Backfill   string    `json:"backfill"`
	Table      string    `json:"table"`
	Target     string    `json:"target"`
	Reason     string    `json:"reason"`
	Objective  string    `json:"objective"`
	Scope      string    `json:"scope"`
	Grain      string    `json:"grain"`
	Column     string    `json:"partition_column"`
	Partitions []string  `json:"partitions"`
	Mode       string    `json:"mode"`
	Write      string    `json:"write"`
	Live       string    `json:"live_version"`
	Inputs     []Input   `json:"inputs"`
	InputsOK   bool      `json:"inputs_ok"`
	Downstream []Refresh `json:"downstream_refreshes"`
	// Layouts are the tables whose partitions are coarser than their grain, and how the scope
	// falls in them.
	Layouts      []Layout  `json:"partition_layouts,omitempty"`
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
	// Description is the file's description: header, what its transform computes.
	Description string `json:"description,omitempty"`
	// RefreshedBy names the backfills that refresh this one's table as a downstream table;
	// DownstreamOnly says it has no reason and no scope of its own: it runs only with them.
	RefreshedBy    []string `json:"refreshed_by,omitempty"`
	DownstreamOnly bool     `json:"downstream_only,omitempty"`

	windows []tsql.Window
}

// Input is one relation the transform reads, checked for the whole scope.
type Input struct {
	Relation string `json:"relation"`
	// Table is the downstream table whose transform reads it ("" for the planned backfill's).
	Table       string   `json:"table,omitempty"`
	Partitioned bool     `json:"partitioned"`
	Missing     []string `json:"missing_partitions,omitempty"`
	Empty       bool     `json:"empty"`
}

// Presence says in words whether the input holds rows for the plan's partitions, as the plan's
// page and `trueup backfill plan` say it; missing says the partitions that have none (Missing),
// in the words of the one asking.
func (in Input) Presence(missing func([]string) string) string {
	switch {
	case in.Empty:
		return "empty"
	case len(in.Missing) > 0:
		return missing(in.Missing)
	case !in.Partitioned:
		return "present (not partitioned)"
	}
	return "present for every partition"
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
	// FullRewriteRows is the size above which a run rewrites a table with no partitions only
	// when asked (RunOptions.AllowFullRewrite); 0 is DefaultFullRewriteRows.
	FullRewriteRows int64
	// Versions numbers the version a run builds, as the run will (NewRunner sets it to the
	// ledger's); without it the plan names the one after the live version.
	Versions Numbering
}

// Numbering gives the number of a table's next version (views.Store).
type Numbering interface {
	NextNumber(ctx context.Context, target, table string, physical []int) (int, error)
}

// nextVersion is the physical table a run started now would build for table, whose live
// version is live: one more than any version the ledger or the engine knows, as the run
// reserves it.
func (pl Planner) nextVersion(ctx context.Context, table string, live views.Version) (string, error) {
	if pl.Versions == nil {
		return views.Physical(table, live.N+1), nil
	}
	rels, err := pl.Engine.Relations(ctx)
	if err != nil {
		return "", err
	}
	n, err := pl.Versions.NextNumber(ctx, pl.Target, table, versionsIn(rels, table))
	if err != nil {
		return "", err
	}
	return views.Physical(table, n), nil
}

// versionsIn are the numbers of the versions of table among the engine's relations.
func versionsIn(rels []tsql.Relation, table string) []int {
	var out []int
	for _, rel := range rels {
		if name, n, ok := views.ParseVersion(rel.Name); ok && name == table {
			out = append(out, n)
		}
	}
	return out
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
	p.Description = b.Description
	scope := b.Scope
	if override != nil {
		scope = *override
	}
	p.Scope = scope.Format(b.Grain)
	p.RefreshedBy = pl.Set.RefreshedBy(b)
	p.DownstreamOnly = len(p.RefreshedBy) > 0 && b.Reason == "" && !scope.dated() && scope.FromRule == ""
	if p.DownstreamOnly {
		// One finding that says what to do, not four about a header it need not have.
		p.block("%s is refreshed as a downstream table of %s and has no scope of its own: plan, dry-run or run %s, which rebuilds %s with it "+
			"(to run it on its own, give it reason:, objective: and scope:)",
			b.Table, strings.Join(p.RefreshedBy, ", "), p.RefreshedBy[0], b.Table)
	}
	if b.Reason == "" && !p.DownstreamOnly {
		p.block("no reason: say why in the header (reason: %s)", strings.Join(Reasons, "|"))
	}
	if b.Objective == "" && !p.DownstreamOnly {
		p.block("no objective: say in one or two sentences what this backfill fixes (objective: …)")
	}
	live, liveType, err := pl.liveVersion(ctx, b.Table, b.Partition)
	if err != nil {
		p.block("%v", err)
		return p, nil
	}
	p.Live = live.Name()
	if p.DownstreamOnly {
		return p, nil
	}
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
	next, err := pl.nextVersion(ctx, b.Table, live)
	if err != nil {
		return nil, fmt.Errorf("backfill: plan %s: next version of %s: %w", b.Name, b.Table, err)
	}
	// The number is taken when the run starts: a version of the table made before that (another
	// run, by hand) moves this one's to the next.
	build := next + " (its number is taken when the run starts: a later one if another version of " + b.Table + " is made first)"
	p.Write = fmt.Sprintf("build %s beside the live %s: carry over the partitions outside the scope unchanged, "+
		"rebuild the %d in scope one by one (each replaced atomically, rerunning replaces it again); the live view is not touched",
		build, live.Physical(), len(parts))
	if b.Mode == ModeFullRebuild {
		p.Write = fmt.Sprintf("build %s from the transform for every partition; the live %s is not touched", build, live.Physical())
	}
	p.Rollback = fmt.Sprintf("nothing to undo before the swap: the live %s stays as it is; after a swap, rollback repoints %s back to %s", live.Physical(), b.Table, live.Name())
	p.Notice = "a change notice is drafted from this plan and the validation evidence when the run is created"
	if b.Contact != "" {
		p.Notice += "; contact: " + b.Contact
	}
	closure := []transform{{b: b, windows: p.windows}}
	if len(parts) > 0 {
		p.InputsOK = true
		pl.checkInputs(ctx, closure[0], p, nil)
		if err := pl.downstream(ctx, b, parts, p, map[string]bool{b.Table: true}); err != nil {
			p.block("%v", err)
		} else {
			closure = append(closure, pl.downstreamTransforms(ctx, b, p)...)
		}
	}
	if len(parts) > 0 {
		pl.layouts(ctx, b, live.Physical(), p)
		if len(p.Layouts) > 0 && p.Layouts[0].Table == b.Table && b.Mode != ModeFullRebuild {
			l := p.Layouts[0]
			in := fmt.Sprintf("%d %s %s", len(l.Partitions), l.Grain, pluralOf("partition", len(l.Partitions)))
			if l.WholeTable {
				in = "the table's one partition"
			}
			p.Write = fmt.Sprintf("build %s beside the live %s: carry over the rows outside the scope unchanged; "+
				"the %d %s in scope fall in %s (%s), each rebuilt whole from its rows outside the scope as carried from live "+
				"and the transform's rows, then replaced atomically (rerunning rebuilds it again); the live view is not touched",
				build, live.Physical(), len(parts), pluralOf(b.Grain, len(parts)), in, orKey(l.Key))
		}
	}
	for _, t := range closure {
		if t.b.Window != nil {
			if err := t.b.Window.check(); err != nil {
				p.block("%swindow %s: %v", t.label(), t.b.Window, err)
			}
		}
	}
	pl.score(ctx, closure, p)
	return p, nil
}

// liveVersion finds the physical table the logical table's view reads and its partition type.
func (pl Planner) liveVersion(ctx context.Context, table, partition string) (views.Version, tsql.Type, error) {
	src, err := pl.Engine.ViewSource(ctx, table)
	if err != nil {
		if _, cerr := pl.Engine.Columns(ctx, table); cerr == nil {
			return views.Version{}, 0, fmt.Errorf("table %s is a plain table in target %s, not a logical table yet: run trueup adopt %s", table, pl.Target, table)
		}
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
		// every partition live holds (rows whose partition is NULL lie in none: no window
		// rebuilds them), and those of a scope given too (a day the inputs hold that live does
		// not yet)
		out, err := tsql.ExistingPartitions(ctx, pl.Engine, live.Physical(), b.Partition, b.Grain)
		if err != nil || !s.dated() {
			return out, err
		}
		for _, t := range partitionsBetween(s.From, s.To, b.Grain) {
			if !slices.ContainsFunc(out, t.Equal) {
				out = append(out, t)
			}
		}
		slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
		return out, nil
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
			t, err := ParsePartition(f, b.Grain)
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
	if !s.dated() {
		return nil, errors.New("no scope: give scope: FROM..TO or scope: from-rule: NAME (or --from/--to)")
	}
	if n := countBetween(s.From, s.To, b.Grain, MaxScopePartitions+1); n > MaxScopePartitions {
		return nil, fmt.Errorf("the scope %s covers more than %d partitions of grain %s: split the backfill", s.Format(b.Grain), MaxScopePartitions, b.Grain)
	}
	return partitionsBetween(s.From, s.To, b.Grain), nil
}

// MaxScopePartitions bounds the partitions one plan covers (55 years of days, 2 of hours): a
// plan is checked, stored and shown partition by partition.
const MaxScopePartitions = 20000

// countBetween counts the partitions from..to inclusive, stopping at limit.
func countBetween(from, to time.Time, grain string, limit int) int {
	n := 0
	for t := tsql.TruncGrain(from, grain); !t.After(to) && n < limit; t = tsql.NextGrain(t, grain) {
		n++
	}
	return n
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
			existing, err := tsql.ExistingPartitions(ctx, pl.Engine, src, db.Partition, db.Grain)
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

// orKey names a partition key, or its absence.
func orKey(key string) string {
	if key == "" {
		return "no PARTITION BY"
	}
	return "PARTITION BY " + key
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

// pointAt points a transform written against logical tables at the versions being built
// (logical name → physical table); with none, the transform is returned as written.
func (pl Planner) pointAt(ctx context.Context, sql string, to map[string]string) (string, error) {
	if len(to) == 0 {
		return sql, nil
	}
	current, err := tsql.CurrentQualifiers(ctx, pl.Engine)
	if err != nil {
		return "", err
	}
	return tsql.RewriteTables(pl.Engine.Dialect(), sql, to, current), nil
}
