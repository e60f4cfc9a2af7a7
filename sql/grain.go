package sql

import "time"

// Grains are the partition steps trueup knows: day, month and hour, and the week (from Monday)
// a table's partitions may span.

// ValidGrain reports whether g is a grain a backfill, a rule or an adopted table may name: day,
// hour or month (a week is only ever a table's partition span).
func ValidGrain(g string) bool { return g == "day" || g == "hour" || g == "month" }

// TruncGrain brings t down to the start of its grain (UTC); an unknown grain is a day.
func TruncGrain(t time.Time, grain string) time.Time {
	t = t.UTC()
	switch grain {
	case "month":
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	case "hour":
		return t.Truncate(time.Hour)
	case "week":
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, -(int(d.Weekday())+6)%7)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// NextGrain is the start of the partition after the one starting at t.
func NextGrain(t time.Time, grain string) time.Time {
	switch grain {
	case "month":
		return t.AddDate(0, 1, 0)
	case "hour":
		return t.Add(time.Hour)
	case "week":
		return t.AddDate(0, 0, 7)
	}
	return t.AddDate(0, 0, 1)
}
