package backfill

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"trueup/cron"
	"trueup/fault"
	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sqlfile"
)

var (
	required = []string{"table", "partition", "key"}
	optional = []string{"grain", "reason", "objective", "scope", "mode", "downstream", "validate", "expect",
		"concurrency", "throttle", "window", "owner", "contact", "target", "cumulative", "description",
		"schedule", "schedule_partitions"}
	identRe  = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_$]*$`)
	windowRe = regexp.MustCompile(`^(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})$`)
)

// Set is every backfill of a project. A serving process replaces it when its files are edited
// (Replace, on SIGHUP); each look-up reads one version of it.
type Set struct {
	all atomic.Pointer[[]*Backfill]
}

// NewSet is the set of bs, in file order.
func NewSet(bs ...*Backfill) *Set {
	s := &Set{}
	s.all.Store(&bs)
	return s
}

// All is every backfill of the set, in file order.
func (s *Set) All() []*Backfill {
	if p := s.all.Load(); p != nil {
		return *p
	}
	return nil
}

// Replace makes s the backfills of from, for every look-up from now on.
func (s *Set) Replace(from *Set) {
	all := from.All()
	s.all.Store(&all)
}

// Load parses every backfills/**/*.sql file of fsys; prefix is shown before paths in messages.
// The error lists every problem of every file, as path:line: message.
func Load(fsys fs.FS, prefix string) (*Set, error) {
	var all []*Backfill
	var parsed sqlfile.Problems
	byName := map[string]*Backfill{}
	problems, err := sqlfile.ReadEach(fsys, prefix, func(shown, text string) {
		b, ps := Parse(shown, text)
		parsed = append(parsed, ps...)
		if b == nil {
			return
		}
		if prev, dup := byName[b.Name]; dup {
			parsed = append(parsed, sqlfile.Problem{Path: b.Path, Line: 1, Msg: "backfill " + b.Name + " is already defined in " + prev.Path})
			return
		}
		byName[b.Name] = b
		all = append(all, b)
	})
	if err != nil {
		return nil, fmt.Errorf("backfill: %w", err)
	}
	problems = append(problems, parsed...)
	set := NewSet(all...)
	// Every downstream table needs a backfill file that builds it.
	for _, b := range all {
		for _, d := range b.Downstream {
			if set.ForTable(d) == nil {
				problems = append(problems, sqlfile.Problem{Path: b.Path, Line: b.line("downstream"),
					Msg: fmt.Sprintf("downstream table %s has no backfill file (add backfills/%s.sql with table: %s)", d, d, d)})
			}
		}
	}
	if err := problems.Err(); err != nil {
		return set, fault.Mark(fault.Invalid, err) // the problems, one a line, are the message
	}
	return set, nil
}

// Get returns a backfill by name.
func (s *Set) Get(name string) (*Backfill, error) {
	for _, b := range s.All() {
		if b.Name == name {
			return b, nil
		}
	}
	return nil, NotFound(name)
}

// ForTable returns the backfill that refreshes a table as a downstream: the file named after the
// table, else the only file for it.
func (s *Set) ForTable(table string) *Backfill { return forTable(s.All(), table) }

func forTable(all []*Backfill, table string) *Backfill {
	var found []*Backfill
	for _, b := range all {
		if b.Table == table {
			if b.Name == table {
				return b
			}
			found = append(found, b)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return nil
}

// RefreshedBy names the backfills that refresh b's table as one of their downstream tables (b is
// the file that builds it for them), in file order.
func (s *Set) RefreshedBy(b *Backfill) []string {
	all := s.All()
	if forTable(all, b.Table) != b {
		return nil
	}
	var out []string
	for _, up := range all {
		if up != b && slices.Contains(up.Downstream, b.Table) {
			out = append(out, up.Name)
		}
	}
	return out
}

// Writes lists the tables a run of b writes: its table, then the downstream tables, transitively,
// each once.
func (s *Set) Writes(b *Backfill) []string {
	all := s.All()
	out := []string{b.Table}
	for i := 0; i < len(out); i++ {
		d := forTable(all, out[i])
		if i == 0 {
			d = b
		}
		if d == nil {
			continue
		}
		for _, t := range d.Downstream {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

func (b *Backfill) line(key string) int {
	if l, ok := b.lines[key]; ok {
		return l
	}
	return 1
}

// Parse parses one backfill file's text; shown is its path in messages.
func Parse(shown, text string) (*Backfill, sqlfile.Problems) {
	f := sqlfile.Scan(shown, text)
	f.Allow(optional, required)
	b := &Backfill{
		Name: f.Name, Path: shown, Table: f.Get("table"), Partition: f.Get("partition"),
		Grain: "day", Mode: ModePartitionReplace, Concurrency: 1,
		Reason: f.Get("reason"), Objective: f.Get("objective"), Description: f.Get("description"), Expect: f.Get("expect"),
		Owner: f.Get("owner"), Contact: f.Get("contact"), Target: f.Get("target"),
		Downstream: sqlfile.List(f.Get("downstream")), Validate: sqlfile.List(f.Get("validate")),
		Key: sqlfile.List(f.Get("key")), lines: map[string]int{},
	}
	for k, v := range f.Keys {
		b.lines[k] = v.Line
	}
	if !sqlfile.ValidName(b.Name) {
		f.Bad(1, "backfill name %q: %s (rename the file)", b.Name, sqlfile.NameChars)
	}
	for _, k := range []string{"table", "partition"} {
		if v := f.Get(k); f.Has(k) && !identRe.MatchString(v) {
			f.BadKey(k, "%s %q: want a plain name", k, v)
		}
	}
	for _, c := range append(append([]string{}, b.Key...), b.Downstream...) {
		if !identRe.MatchString(c) {
			f.BadKey("key", "%q: want plain names separated by commas", c)
		}
	}
	if f.Has("key") && len(b.Key) == 0 {
		f.BadKey("key", "key: name the columns that identify a row, e.g. key: order_id")
	}
	if f.Has("grain") {
		b.Grain = f.Get("grain")
		if !tsql.ValidGrain(b.Grain) {
			f.BadKey("grain", "grain %q: want day, month or hour", b.Grain)
		}
	}
	if f.Has("reason") && !slices.Contains(Reasons, b.Reason) {
		f.BadKey("reason", "reason %q: want one of %s", b.Reason, strings.Join(Reasons, ", "))
	}
	if f.Has("mode") {
		b.Mode = f.Get("mode")
		if b.Mode != ModePartitionReplace && b.Mode != ModeFullRebuild {
			f.BadKey("mode", "mode %q: want partition-replace or full-rebuild", b.Mode)
		}
	}
	if f.Has("scope") {
		s, err := parseScope(f.Get("scope"), b.Grain)
		if err != nil {
			f.BadKey("scope", "%v", err)
		}
		b.Scope = s
	}
	if f.Has("concurrency") {
		n, err := strconv.Atoi(f.Get("concurrency"))
		if err != nil || n < 1 || n > 64 {
			f.BadKey("concurrency", "concurrency %q: want a number from 1 to 64", f.Get("concurrency"))
		}
		b.Concurrency = n
	}
	if f.Has("throttle") {
		d, err := time.ParseDuration(f.Get("throttle"))
		if err != nil || d < 0 {
			f.BadKey("throttle", "throttle %q: want a duration such as 500ms or 2s", f.Get("throttle"))
		}
		b.Throttle = d
	}
	if f.Has("schedule") {
		sc, err := cron.Parse(f.Get("schedule"))
		if err != nil {
			f.BadKey("schedule", "schedule: %v", err)
		}
		b.Schedule = sc
	}
	b.SchedulePartitions = 1
	if f.Has("schedule_partitions") {
		n, err := strconv.Atoi(f.Get("schedule_partitions"))
		if err != nil || n < 1 || n > 1000 {
			f.BadKey("schedule_partitions", "schedule_partitions %q: want a number from 1 to 1000", f.Get("schedule_partitions"))
		}
		if !f.Has("schedule") {
			f.BadKey("schedule_partitions", "schedule_partitions without schedule: say when to run (schedule: 5 * * * *)")
		}
		b.SchedulePartitions = n
	}
	if f.Has("window") {
		w, err := parseHourWindow(f.Get("window"))
		if err != nil {
			f.BadKey("window", "%v", err)
		}
		b.Window = w
	}
	if f.Has("expect") {
		// the expectations judge the run at its very end: a typo must not cost the whole build
		if _, err := reconcile.ParseExpectations(b.Expect); err != nil {
			f.BadKey("expect", "expect: %v", err)
		}
	}
	if f.Has("cumulative") {
		v, err := strconv.ParseBool(f.Get("cumulative"))
		if err != nil {
			f.BadKey("cumulative", "cumulative %q: want true or false", f.Get("cumulative"))
		}
		b.Cumulative = v
	}
	if f.Body == "" {
		f.Bad(1, "no transform: after the header, write the SELECT that computes one partition window ($start to $end)")
	} else if body, err := tsql.ReadOnlySelect(f.Body); err != nil {
		f.Bad(f.BodyLine+tsql.LineOf(err), "%v", err)
	} else {
		b.SQL, b.SQLLine = body, f.BodyLine
		for _, p := range tsql.Placeholders(body) {
			if p != "start" && p != "end" {
				f.Bad(f.BodyLine, "unknown parameter $%s: a transform takes $start and $end", p)
			}
		}
	}
	if ps := f.Problems(); len(ps) > 0 {
		return nil, ps
	}
	return b, nil
}

func parseScope(v, grain string) (Scope, error) {
	if rule, ok := strings.CutPrefix(v, "from-rule:"); ok {
		rule = strings.TrimSpace(rule)
		if rule == "" {
			return Scope{}, fmt.Errorf("scope: from-rule: needs a rule name")
		}
		return Scope{FromRule: rule}, nil
	}
	from, to, ok := strings.Cut(v, "..")
	if !ok {
		return Scope{}, fmt.Errorf("scope %q: want FROM..TO (e.g. 2026-07-10..2026-07-18) or from-rule: NAME", v)
	}
	f, err := ParsePartition(from, grain)
	if err != nil {
		return Scope{}, fmt.Errorf("scope: %v", err)
	}
	t, err := ParsePartition(to, grain)
	if err != nil {
		return Scope{}, fmt.Errorf("scope: %v", err)
	}
	if _, err := time.Parse("2006-01-02", strings.TrimSpace(to)); err == nil {
		t = endOfDay(t) // a date ends with its last hour, not its first
	}
	if t.Before(f) {
		return Scope{}, fmt.Errorf("scope %q: ends before it starts", v)
	}
	return Scope{From: f, To: t}, nil
}

func parseHourWindow(v string) (*HourWindow, error) {
	m := windowRe.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return nil, fmt.Errorf("window %q: want HH:MM-HH:MM (UTC), e.g. 22:00-06:00", v)
	}
	n := make([]int, 4)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	if n[0] > 23 || n[2] > 24 || n[1] > 59 || n[3] > 59 {
		return nil, fmt.Errorf("window %q: not a time of day", v)
	}
	w := &HourWindow{Start: n[0]*60 + n[1], End: n[2]*60 + n[3]}
	if err := w.check(); err != nil {
		return nil, fmt.Errorf("window %q: %w", v, err)
	}
	return w, nil
}
