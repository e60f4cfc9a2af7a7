package backfill

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tsql "trueup/sql"
)

// A table whose partitions are coarser than its backfill's grain (days in a ClickHouse table
// PARTITION BY toYYYYMM) is rebuilt one coarse partition at a time: each partition the scope
// touches is built whole from its rows outside the scope, as they are, and the transform's rows
// for the scoped ones, then replaced atomically (see tsql.Engine.ReplacePartitions). A coarse
// partition's days are one unit of work: built, and checkpointed, together. A table with no
// partitions at all is one such partition: every run rewrites the whole table, which the plan
// says, and which above FullRewriteRows rows it does only when asked (--allow-full-rewrite).

// DefaultFullRewriteRows is the size, in rows, above which a run rewrites a table with no
// partitions only when asked, when the Planner does not say otherwise.
const DefaultFullRewriteRows = 1_000_000

// Layout is how one table's partitions meet its backfill's grain, when they are coarser.
type Layout struct {
	Table string `json:"table"`
	Key   string `json:"partition_key,omitempty"`
	// Grain is the span of one partition (week, month, …); "" for a whole table.
	Grain      string            `json:"partition_grain,omitempty"`
	WholeTable bool              `json:"whole_table,omitempty"`
	Rows       int64             `json:"rows,omitempty"`  // the whole table's, carried from live
	Bytes      int64             `json:"bytes,omitempty"` // on disk
	Partitions []CoarsePartition `json:"coarse_partitions"`
	// NeedsAllow is a whole-table rewrite above the planner's limit: a run needs
	// AllowFullRewrite.
	NeedsAllow bool   `json:"needs_allow_full_rewrite,omitempty"`
	Text       string `json:"text"`
}

// CoarsePartition is one partition a scope touches: how many of its backfill-grain partitions
// are rebuilt from the transform and how many carried over from live as they are.
type CoarsePartition struct {
	Partition string `json:"partition"`
	Rebuilt   int    `json:"rebuilt"`
	Carried   int    `json:"carried"`
}

func (pl Planner) fullRewriteRows() int64 {
	if pl.FullRewriteRows > 0 {
		return pl.FullRewriteRows
	}
	return DefaultFullRewriteRows
}

// byTable lists the tables the plan writes, table (the backfill's) first, then its downstream
// ones in order, and each one's partitions.
func (p *Plan) byTable(table string) ([]string, map[string][]string) {
	parts := map[string][]string{table: p.Partitions}
	tables := []string{table}
	for _, r := range p.Downstream {
		if _, ok := parts[r.Table]; !ok {
			tables = append(tables, r.Table)
		}
		parts[r.Table] = append(parts[r.Table], r.Partition)
	}
	return tables, parts
}

// layouts states, for the planned table and each downstream one, the coarse partitions its
// partitions of the scope fall in; a partition key the partitions cannot be placed in, or whose
// partitions do not hold whole partitions of the grain, blocks the plan.
func (pl Planner) layouts(ctx context.Context, b *Backfill, live string, p *Plan) {
	tables, parts := p.byTable(b.Table)
	for _, table := range tables {
		tb, rel := b, live
		if table != b.Table {
			if tb = pl.Set.ForTable(table); tb == nil {
				continue // the downstream check has said so
			}
			src, err := pl.Engine.ViewSource(ctx, table)
			if err != nil {
				continue // likewise
			}
			rel = src
		}
		l, err := pl.layout(ctx, tb, rel, parts[table])
		if err != nil {
			p.block("%v", err)
			continue
		}
		if l == nil {
			continue
		}
		if l.NeedsAllow {
			p.warn("%s has no PARTITION BY: a run rewrites all of its %s rows (%s), more than the %s it rewrites unasked: run it with --allow-full-rewrite",
				rel, count(l.Rows), byteSize(l.Bytes), count(pl.fullRewriteRows()))
		}
		p.Layouts = append(p.Layouts, *l)
	}
}

// layout is the coarse partitions of one table's partitions in the scope (partitions, at tb's
// grain), or nil when the table's partitions are no coarser than the grain.
func (pl Planner) layout(ctx context.Context, tb *Backfill, rel string, partitions []string) (*Layout, error) {
	pt, err := pl.Engine.Partitioning(ctx, rel, tb.Partition)
	if err != nil {
		return nil, err
	}
	if !pt.Nests(tb.Grain) {
		return nil, fmt.Errorf("table %s is partitioned by %s: its %ss and the backfill's %ss do not line up (a week holds days of two months), so one partition would be rebuilt by two %ss; use grain: day",
			rel, pt.Key, pt.Grain, tb.Grain, tb.Grain)
	}
	if !pt.Coarser(tb.Grain) || len(partitions) == 0 {
		return nil, nil
	}
	l := &Layout{Table: tb.Table, Key: pt.Key, Grain: pt.Grain, WholeTable: pt.Whole, Partitions: []CoarsePartition{}}
	unit := grainWord(tb.Grain, len(partitions))
	if pt.Whole {
		l.Rows, l.Bytes = pt.Rows, pt.Bytes
		l.NeedsAllow = tb.Mode != ModeFullRebuild && pt.Rows > pl.fullRewriteRows()
		l.Partitions = append(l.Partitions, CoarsePartition{Partition: "all", Rebuilt: len(partitions)})
		l.Text = fmt.Sprintf("%d %s in 1 partition, the whole table (%s has no PARTITION BY): a whole-table rebuild, %s rows (%s) carried from live",
			len(partitions), unit, rel, count(pt.Rows), byteSize(pt.Bytes))
		return l, nil
	}
	var starts []time.Time
	for _, s := range partitions {
		t, err := ParsePartition(s, tb.Grain)
		if err != nil {
			return nil, err
		}
		c := tsql.TruncGrain(t, pt.Grain)
		i := slices.IndexFunc(starts, c.Equal)
		if i < 0 {
			starts = append(starts, c)
			l.Partitions = append(l.Partitions, CoarsePartition{Partition: coarseName(c, pt.Grain),
				Carried: countBetween(c, tsql.NextGrain(c, pt.Grain).Add(-time.Nanosecond), tb.Grain, MaxScopePartitions)})
			i = len(starts) - 1
		}
		l.Partitions[i].Rebuilt++
		l.Partitions[i].Carried--
	}
	var each []string
	for _, c := range l.Partitions {
		each = append(each, fmt.Sprintf("%s (%d %s rebuilt, %d carried from live)", c.Partition, c.Rebuilt, grainWord(tb.Grain, c.Rebuilt), c.Carried))
	}
	l.Text = fmt.Sprintf("%d %s in %d %s %s: %s", len(partitions), unit, len(l.Partitions), pt.Grain,
		pluralOf("partition", len(l.Partitions)), strings.Join(each, ", "))
	return l, nil
}

// coarseName names a coarse partition by its start: 2026-07 for a month, the Monday of a week.
func coarseName(t time.Time, grain string) string {
	if grain == "week" {
		return "week of " + t.Format("2006-01-02")
	}
	return formatPartition(t, grain)
}

func grainWord(grain string, n int) string { return pluralOf(grain, n) }

func pluralOf(word string, n int) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// count writes n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func byteSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, u := float64(n), 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[u])
}

// fullRewritesRefused is the refusal of a run that would rewrite a whole table above the limit
// unasked; nil when there is none.
func (p *Plan) fullRewritesRefused() []string {
	var out []string
	for _, l := range p.Layouts {
		if l.NeedsAllow {
			out = append(out, fmt.Sprintf("%s has no PARTITION BY and %s rows (%s): a run rewrites all of them", l.Table, count(l.Rows), byteSize(l.Bytes)))
		}
	}
	return out
}

// unitsOf groups a table's partitions to build (at grain) into the units built and checkpointed
// together: those of one coarse partition of pt each (all of them for a whole table), in order;
// nil when the table's partitions are no coarser than the grain.
func unitsOf(parts []string, grain string, pt tsql.Partitioning) [][]string {
	if !pt.Coarser(grain) {
		return nil
	}
	var units [][]string
	var keys []time.Time
	for _, part := range parts {
		key := time.Time{}
		if !pt.Whole {
			t, err := ParsePartition(part, grain)
			if err == nil {
				key = tsql.TruncGrain(t, pt.Grain)
			}
		}
		i := slices.IndexFunc(keys, key.Equal)
		if i < 0 {
			keys = append(keys, key)
			units = append(units, nil)
			i = len(units) - 1
		}
		units[i] = append(units[i], part)
	}
	return units
}
