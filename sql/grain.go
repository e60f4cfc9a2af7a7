package sql

import "time"

// Grains are the partition steps trueup knows: day, month and hour.

// TruncGrain brings t down to the start of its grain (UTC); an unknown grain is a day.
func TruncGrain(t time.Time, grain string) time.Time {
	t = t.UTC()
	switch grain {
	case "month":
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	case "hour":
		return t.Truncate(time.Hour)
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
	}
	return t.AddDate(0, 0, 1)
}
