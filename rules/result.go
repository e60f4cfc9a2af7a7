package rules

import (
	"encoding/json"
	"math"
	"time"

	"trueup/reconcile"
	tsql "trueup/sql"
)

// Status is the outcome of one rule in one run.
type Status string

// Statuses.
const (
	StatusPass  Status = "pass"
	StatusFail  Status = "fail"
	StatusError Status = "error" // the rule could not be evaluated
)

// Result is one rule's outcome in a run.
type Result struct {
	RunID             int64     `json:"run_id,omitempty"`
	Rule              string    `json:"rule"`
	Kind              Kind      `json:"kind"`
	Severity          Severity  `json:"severity"`
	Status            Status    `json:"status"`
	Violations        int64     `json:"violations"`
	FailingPartitions []string  `json:"failing_partitions"`
	Sample            []Row     `json:"sample"`
	Message           string    `json:"message,omitempty"`
	Target            string    `json:"target,omitempty"`
	Table             string    `json:"table,omitempty"`
	SQL               string    `json:"sql,omitempty"`
	DurationMS        float64   `json:"duration_ms"`
	At                time.Time `json:"at"`
}

// Failed reports whether the rule ran and found violations, or could not run.
func (r Result) Failed() bool { return r.Status != StatusPass }

// FailsCheck reports whether r fails a check: an error-severity rule that found violations or
// could not run. trueup check counts these (Run.Failed) and the dashboard lists them.
func (r Result) FailsCheck() bool { return r.Severity == SeverityError && r.Failed() }

// Warns reports whether r is a warning, as trueup check prints it (WARN): a warn-severity rule
// that found violations, never a failure of the check.
func (r Result) Warns() bool { return r.Status == StatusFail && r.Severity == SeverityWarn }

// Triggers of a run.
const (
	TriggerCLI      = "cli"
	TriggerSchedule = "schedule"
	TriggerManual   = "manual" // run now, from a page or the API
)

// Run is one evaluation of a set of rules.
type Run struct {
	ID       int64     `json:"run_id"`
	Trigger  string    `json:"trigger,omitempty"` // cli, schedule, manual
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Queries  int       `json:"queries"`
	// Target is the target chosen instead of the configured default (trueup --target): the run
	// is kept in the history but moves no rule's state and raises no alert.
	Target  string   `json:"target,omitempty"`
	Results []Result `json:"results"`
	// Statements is every query the run issued with what it cost, for profiling.
	Statements []Statement `json:"-"`
}

// Statement is one query a run issued.
type Statement struct {
	Target  string
	SQL     string
	Rules   []string
	Seconds float64
	Rows    int
	Err     string
}

// Failed reports whether an error-severity rule failed or could not run.
func (r *Run) Failed() bool {
	for _, res := range r.Results {
		if res.FailsCheck() {
			return true
		}
	}
	return false
}

// Counts returns how many results passed, failed and errored.
func (r *Run) Counts() (pass, fail, errs int) {
	for _, res := range r.Results {
		switch res.Status {
		case StatusPass:
			pass++
		case StatusFail:
			fail++
		default:
			errs++
		}
	}
	return
}

// Warned is how many results failed at warn severity: counted among Counts' failed (the ledger
// keeps them so), but neither a failure of the run nor a JUnit failure.
func (r *Run) Warned() int {
	n := 0
	for _, res := range r.Results {
		if res.Warns() {
			n++
		}
	}
	return n
}

// Field is one named value of a sample row: the field of a reconcile sample row.
type Field = reconcile.Field

// Row is a sample row: named values in the order of its columns. It is a JSON object whose
// keys keep that order (as reconcile.Fields, whose code it uses).
type Row []Field

// Get returns the value of a field, or nil.
func (r Row) Get(name string) any { return reconcile.Fields(r).Get(name) }

// MarshalJSON writes the row as an object in column order.
func (r Row) MarshalJSON() ([]byte, error) { return reconcile.Fields(r).MarshalJSON() }

// UnmarshalJSON reads an object keeping its key order; a whole number is an int64, another a
// float64.
func (r *Row) UnmarshalJSON(data []byte) error {
	fs, err := reconcile.DecodeFields(data, "sample row", func(n json.Number) any {
		if i, err := n.Int64(); err == nil {
			return i
		}
		v, _ := n.Float64()
		return v
	})
	if err != nil {
		return err
	}
	*r = append((*r)[:0], fs...)
	return nil
}

// sampleValue makes an engine value fit for a sample: times as text, floats rounded to the
// digits people read (engines disagree in the last ones), decimals as the float they equal when
// a double holds them, exactly when none does (a sample loaded from the ledger is the same).
func sampleValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return tsql.ShownText(x)
	case float64:
		return round6(x)
	case tsql.Decimal:
		if f, ok := x.ExactFloat(); ok {
			return f
		}
	}
	return v
}

func round6(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1e12 {
		return x
	}
	return math.Round(x*1e6) / 1e6
}

func rowOf(names []string, vals []any) Row {
	r := make(Row, len(names))
	for i, n := range names {
		r[i] = Field{Name: n, Value: sampleValue(vals[i])}
	}
	return r
}
