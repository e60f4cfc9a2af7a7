package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

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
		if res.Severity == SeverityError && res.Failed() {
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

// Field is one named value of a sample row.
type Field struct {
	Name  string
	Value any
}

// Row is a sample row: named values in the order of its columns. It is a JSON object whose
// keys keep that order.
type Row []Field

// Get returns the value of a field, or nil.
func (r Row) Get(name string) any {
	for _, f := range r {
		if f.Name == name {
			return f.Value
		}
	}
	return nil
}

// MarshalJSON writes the row as an object in column order.
func (r Row) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object keeping its key order.
func (r *Row) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("sample row: want an object")
	}
	*r = (*r)[:0]
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				v = i
			} else {
				v, _ = n.Float64()
			}
		}
		*r = append(*r, Field{Name: t.(string), Value: v})
	}
	return nil
}

// sampleValue makes an engine value fit for a sample: times as text, floats rounded to the
// digits people read (engines disagree in the last ones).
func sampleValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return tsql.AsText(x)
	case float64:
		return round6(x)
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
