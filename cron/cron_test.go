package cron

import (
	"strings"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestNext(t *testing.T) {
	tests := []struct {
		name, expr, from, want string
	}{
		{"daily_at_six", "0 6 * * *", "2026-07-10 05:59", "2026-07-10 06:00"},
		{"daily_at_six_after", "0 6 * * *", "2026-07-10 06:00", "2026-07-11 06:00"},
		{"every_15_minutes", "*/15 * * * *", "2026-07-10 06:01", "2026-07-10 06:15"},
		{"hourly_macro", "@hourly", "2026-07-10 06:30", "2026-07-10 07:00"},
		{"weekdays", "30 9 * * mon-fri", "2026-07-10 10:00", "2026-07-13 09:30"}, // Fri → Mon
		{"sunday_as_7", "0 0 * * 7", "2026-07-10 00:00", "2026-07-12 00:00"},
		{"month_names", "0 0 1 jan,jul *", "2026-07-10 00:00", "2027-01-01 00:00"},
		{"dom_or_dow", "0 0 13 * fri", "2026-07-10 00:01", "2026-07-13 00:00"},
		{"leap_day", "0 0 29 2 *", "2026-03-01 00:00", "2028-02-29 00:00"},
		{"range_with_step", "0 8-18/4 * * *", "2026-07-10 12:00", "2026-07-10 16:00"},
		{"seconds_are_dropped", "* * * * *", "2026-07-10 06:00", "2026-07-10 06:01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Next(at(tt.from)); !got.Equal(at(tt.want)) {
				t.Errorf("Next(%s) = %s, want %s", tt.from, got.Format("2006-01-02 15:04 Mon"), tt.want)
			}
		})
	}
}

func TestNextNever(t *testing.T) {
	s, err := Parse("0 0 30 2 *")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Next(at("2026-01-01 00:00")); !got.IsZero() {
		t.Errorf("30 February: got %s, want none", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, expr, want string }{
		{"too_few_fields", "0 6 * *", "has 4 fields"},
		{"minute_out_of_range", "60 * * * *", "minute: 60 is out of range"},
		{"bad_name", "0 0 * * funday", `day of week: "funday" is not a number`},
		{"bad_step", "*/0 * * * *", "bad step"},
		{"backwards", "0 5-2 * * *", "runs backwards"},
		{"unknown_macro", "@sometimes", "unknown macro"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.expr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %v, want error containing %q", tt.expr, err, tt.want)
			}
		})
	}
}
