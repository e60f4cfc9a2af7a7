// Package cron parses the 5-field cron expressions of rule schedules and finds their next slot.
// It knows minute, hour, day of month, month and day of week; lists, ranges, steps, names
// (jan…dec, sun…sat) and the macros @hourly, @daily, @midnight, @weekly, @monthly, @yearly,
// @annually. As in Vixie cron, when both day fields are restricted a day matching either runs.
//
// Why not github.com/robfig/cron/v3 (checked at v3.0.1, its ParseStandard): it is close but
// not a drop-in, and swapping would change what users see.
//   - Syntax: it refuses 7 for Sunday ("0 0 * * 7", "mon-7": a rule that loads today would be
//     refused), and it accepts more than we schedule: "@every 5m" and a CRON_TZ=/TZ= prefix, a
//     time zone the monitor does not have (slots are kept and compared in UTC). It also treats
//     "*/1" in a day field as "*" (day of month AND day of week), where we treat it as restricted.
//   - Errors: neither says at which column an expression is wrong (the rule loader adds
//     path:line), but ours name the field and say what is allowed ("minute: 60 is out of range
//     0-59"); its say "end of range (60) above maximum (59): 60" or pass strconv's text through
//     ("failed to parse int from funday: strconv.Atoi: …").
//   - DST: none today, since the monitor calls Next with UTC times. In a zone with daylight
//     saving both run a slot twice when clocks go back; when they go forward it skips a slot in
//     the missing hour, while our Next never returns (time.Date gives back the hour before the
//     gap, so the search does not advance). Whoever adds per-schedule time zones must fix that
//     first, or switch to the library then, when the time zone is the feature that pays for it.
//
// The parser is some 150 lines of code with no dependency; keeping it costs less than those changes.
package cron

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed cron expression.
type Schedule struct {
	text                          string
	minute, hour, dom, month, dow uint64 // bit i set when value i matches
	domStar, dowStar              bool
}

type field struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	months = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
	days = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

	fields = [5]field{
		{"minute", 0, 59, nil},
		{"hour", 0, 23, nil},
		{"day of month", 1, 31, nil},
		{"month", 1, 12, months},
		{"day of week", 0, 7, days}, // 7 is Sunday too
	}

	macros = map[string]string{
		"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
		"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
	}
)

// Parse reads a 5-field expression or a macro.
func Parse(text string) (*Schedule, error) {
	expr := strings.TrimSpace(text)
	if m, ok := macros[strings.ToLower(expr)]; ok {
		expr = m
	} else if strings.HasPrefix(expr, "@") {
		return nil, fmt.Errorf("unknown macro %q (want @hourly, @daily, @weekly, @monthly or @yearly)", expr)
	}
	parts := strings.Fields(expr)
	if len(parts) != 5 {
		return nil, fmt.Errorf("%q has %d fields, want 5 (minute hour day-of-month month day-of-week)", text, len(parts))
	}
	s := &Schedule{text: strings.TrimSpace(text)}
	dst := [5]*uint64{&s.minute, &s.hour, &s.dom, &s.month, &s.dow}
	for i, p := range parts {
		bits, err := parseField(p, fields[i])
		if err != nil {
			return nil, err
		}
		*dst[i] = bits
	}
	if s.dow&(1<<7) != 0 {
		s.dow |= 1
	}
	s.domStar = parts[2] == "*" || parts[2] == "?"
	s.dowStar = parts[4] == "*" || parts[4] == "?"
	return s, nil
}

func parseField(text string, f field) (uint64, error) {
	var bits uint64
	for _, item := range strings.Split(text, ",") {
		lo, hi, step := f.min, f.max, 1
		rng := item
		if r, s, ok := strings.Cut(item, "/"); ok {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("%s: bad step %q in %q", f.name, s, text)
			}
			rng, step = r, n
		}
		switch {
		case rng == "*" || rng == "?":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = value(a, f); err != nil {
				return 0, err
			}
			if hi, err = value(b, f); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("%s: range %q runs backwards", f.name, rng)
			}
		default:
			v, err := value(rng, f)
			if err != nil {
				return 0, err
			}
			lo = v
			if step == 1 || !strings.Contains(item, "/") {
				hi = v
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << v
		}
	}
	return bits, nil
}

func value(s string, f field) (int, error) {
	if v, ok := f.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", f.name, s)
	}
	if v < f.min || v > f.max {
		return 0, fmt.Errorf("%s: %d is out of range %d-%d", f.name, v, f.min, f.max)
	}
	return v, nil
}

// String returns the expression as written.
func (s *Schedule) String() string { return s.text }

// Next returns the first slot strictly after t, in t's location, at a whole minute. It returns
// the zero time when there is none within five years (e.g. 30 February). t must be in UTC or a
// zone without daylight saving: see the package comment.
func (s *Schedule) Next(t time.Time) time.Time {
	loc := t.Location()
	t = t.Truncate(time.Minute).Add(time.Minute)
	limit := t.AddDate(5, 0, 0)
	for t.Before(limit) {
		if s.month&(1<<uint(t.Month())) == 0 {
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
			continue
		}
		if !s.dayMatches(t) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
			continue
		}
		if s.hour&(1<<uint(t.Hour())) == 0 {
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, loc)
			continue
		}
		if s.minute&(1<<uint(t.Minute())) == 0 {
			t = t.Add(time.Minute)
			continue
		}
		return t
	}
	return time.Time{}
}

func (s *Schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<uint(t.Day())) != 0
	dow := s.dow&(1<<uint(t.Weekday())) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}
