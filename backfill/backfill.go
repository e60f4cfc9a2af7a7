// Package backfill owns backfills: controlled rebuilds of a defined slice of history. A backfill
// file names the logical table, its partition column and grain, why it is rebuilt and for which
// partitions, and holds one transform SELECT that computes the rows of one partition window
// ($start inclusive, $end exclusive). trueup plans it (scope, input check, downstream refreshes,
// backfillability score), dry-runs it (a diff against the live version, nothing written), builds
// <table>__v<N+1> beside the live version partition by partition — idempotent, checkpointed,
// resumable, throttled — then refreshes the downstream tables into their own new versions and
// validates the result. It never touches the live view: publishing is the views package's job.
package backfill

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"trueup/cron"
	"trueup/fault"
	tsql "trueup/sql"
)

// Errors carry their kind (fault) and the sentence the user reads: a backfill, plan or run that
// does not exist is a fault.NotFound; a file, a scope or a plan blocked by its findings that
// cannot be run as asked a fault.Invalid; a table another run holds a fault.Conflict. No caller
// tells a blocked plan from other bad input (the plan's findings say why), so there is no
// sentinel of the package's own.

// NotFound is the error of a backfill name there is no file of.
func NotFound(name string) error { return fault.New(fault.NotFound, "There is no backfill %s.", name) }

// Reasons a backfill is run (the seeds' taxonomy).
var Reasons = []string{"bug", "schema-change", "new-data", "migration", "late-data"}

// Modes of writing the new version.
const (
	ModePartitionReplace = "partition-replace"
	ModeFullRebuild      = "full-rebuild"
)

// Backfill is one parsed backfill file.
type Backfill struct {
	Name        string // file name without .sql
	Path        string // as shown in messages
	Table       string // logical table rebuilt
	Partition   string // partition column
	Grain       string // day, month or hour
	Key         []string
	Reason      string
	Objective   string
	Description string // what the file's transform computes, as its header says
	Scope       Scope
	Mode        string
	Downstream  []string // logical tables built from this one
	Validate    []string // rule names or tags run on the new version
	Expect      string   // the intended change, in reconcile's expectation grammar
	Concurrency int
	Throttle    time.Duration
	Window      *HourWindow
	Owner       string
	Contact     string
	Target      string // target name ("" = default)
	Cumulative  bool   // each partition depends on every earlier one
	// Schedule, when set, runs the transform as the pipeline under trueup serve: at each slot,
	// for the SchedulePartitions newest partitions (the one holding the slot and those before).
	Schedule           *cron.Schedule
	SchedulePartitions int
	SQL                string // the transform
	SQLLine            int
	lines              map[string]int // header lines, for messages found after parsing
}

// CodeSHA is the SHA-256 of the transform: the code version recorded with every run.
func (b *Backfill) CodeSHA() string {
	sum := sha256.Sum256([]byte(b.SQL))
	return hex.EncodeToString(sum[:])
}

// Scope is the partitions a backfill rebuilds: a closed date range, or the partitions a rule
// currently fails on.
type Scope struct {
	// From and To are inclusive. An end given as a date (2026-07-11, in a file or --to) is the
	// last instant of that day, so an hourly backfill takes all of its hours, as a daily one
	// takes the day.
	From, To time.Time
	FromRule string
}

// ParseScope reads a date range given as from and to (the flags --from and --to, the API's
// query parameters of those names), both ends inclusive: days, months (2026-11: every day of
// it) or hours (2026-11-30T05:00); nil when neither is given.
func ParseScope(from, to string) (*Scope, error) {
	if from == "" && to == "" {
		return nil, nil
	}
	if from == "" || to == "" {
		return nil, fault.New(fault.Invalid, "scope: give both from and to (YYYY-MM-DD)")
	}
	f, _, err := parseScopeEnd(from)
	if err != nil {
		return nil, fault.New(fault.Invalid, "from %q: want YYYY-MM-DD (a day), YYYY-MM (a month) or YYYY-MM-DDTHH:MM (an hour)", from)
	}
	t, grain, err := parseScopeEnd(to)
	if err != nil {
		return nil, fault.New(fault.Invalid, "to %q: want YYYY-MM-DD (a day), YYYY-MM (a month) or YYYY-MM-DDTHH:MM (an hour)", to)
	}
	if t.Before(f) {
		return nil, fault.New(fault.Invalid, "scope %s..%s ends before it starts", from, to)
	}
	return &Scope{From: f, To: tsql.NextGrain(t, grain).Add(-time.Nanosecond)}, nil
}

// partitionLayouts are how a partition, or an end of a scope, is written, and the grain each
// names.
var partitionLayouts = []struct{ layout, grain string }{
	{"2006-01-02", "day"}, {"2006-01", "month"}, {"2006-01-02T15:04", "hour"}, {"2006-01-02 15:04:05", "hour"}, {"2006-01-02 15:04", "hour"},
}

// parseScopeEnd reads one end of a scope given as a flag or parameter: a day, a month (every
// day of it) or an hour, and the grain it names.
func parseScopeEnd(s string) (time.Time, string, error) {
	for _, f := range partitionLayouts {
		if t, err := time.Parse(f.layout, strings.TrimSpace(s)); err == nil {
			return t, f.grain, nil
		}
	}
	return time.Time{}, "", fmt.Errorf("not a day, month or hour: %q", s)
}

// endOfDay is the last instant of t's day (UTC).
func endOfDay(t time.Time) time.Time {
	return tsql.TruncGrain(t, "day").AddDate(0, 0, 1).Add(-time.Nanosecond)
}

// dated reports whether the scope is a date range. The zero time is 0001-01-01, a date a user may
// give (--from 0001-01-01), so a range is told from no range by either end being set: the end of
// a range given as dates is the last instant of its day, never the zero time.
func (s Scope) dated() bool { return !s.From.IsZero() || !s.To.IsZero() }

func (s Scope) String() string { return s.Format("day") }

// Format is the scope as a plan shows it for a backfill of grain: its first and last partitions
// (2026-02..2026-03, 2026-03-05T10:00..2026-03-05T11:00). To is the last instant the scope
// takes (the end of a day given as a date), so it is brought down to the partition holding it.
func (s Scope) Format(grain string) string {
	if s.FromRule != "" {
		return "from-rule: " + s.FromRule
	}
	if !s.dated() {
		return ""
	}
	return formatPartition(tsql.TruncGrain(s.From, grain), grain) + ".." + formatPartition(tsql.TruncGrain(s.To, grain), grain)
}

// HourWindow is the time of day a run may write, e.g. 22:00-06:00 (UTC). End before start
// wraps over midnight.
type HourWindow struct {
	Start, End int // minutes after midnight
}

// check refuses a window no time of day falls in (a run would wait for it forever) and an end
// past midnight (write 22:00-02:00 for a window over midnight, not 22:00-26:00).
func (w HourWindow) check() error {
	switch {
	case w.Start < 0 || w.Start >= 24*60:
		return errors.New("the start is not a time of day")
	case w.End < 0 || w.End > 24*60:
		return errors.New("the end is past 24:00 (a window over midnight ends before it starts, e.g. 22:00-06:00)")
	case w.Start == w.End:
		return errors.New("it starts and ends at the same time, so no time of day is in it (leave window: out to allow every hour)")
	}
	return nil
}

// Contains reports whether t (UTC) falls in the window.
func (w HourWindow) Contains(t time.Time) bool {
	m := t.UTC().Hour()*60 + t.UTC().Minute()
	if w.Start <= w.End {
		return m >= w.Start && m < w.End
	}
	return m >= w.Start || m < w.End
}

// Until returns how long from t until the window opens (0 when inside it).
func (w HourWindow) Until(t time.Time) time.Duration {
	if w.Contains(t) {
		return 0
	}
	t = t.UTC()
	open := time.Date(t.Year(), t.Month(), t.Day(), w.Start/60, w.Start%60, 0, 0, time.UTC)
	if !open.After(t) {
		open = open.Add(24 * time.Hour)
	}
	return open.Sub(t)
}

func (w HourWindow) String() string {
	return fmt.Sprintf("%02d:%02d-%02d:%02d", w.Start/60, w.Start%60, w.End/60, w.End%60)
}

// formatPartition renders a partition's start as people and JSON read it (tsql.FormatGrain).
func formatPartition(t time.Time, grain string) string { return tsql.FormatGrain(t, grain) }

// ParsePartition reads a partition as a plan lists it (formatPartition), or a plain date, as the
// start of its grain.
func ParsePartition(s, grain string) (time.Time, error) {
	if t, _, err := parseScopeEnd(s); err == nil {
		return tsql.TruncGrain(t, grain), nil
	}
	return time.Time{}, fmt.Errorf("partition %q: want YYYY-MM-DD (or YYYY-MM, YYYY-MM-DDTHH:00)", s)
}

// partitionsBetween lists the partitions from..to inclusive.
func partitionsBetween(from, to time.Time, grain string) []time.Time {
	var out []time.Time
	for t := tsql.TruncGrain(from, grain); !t.After(to); t = tsql.NextGrain(t, grain) {
		out = append(out, t)
	}
	return out
}
