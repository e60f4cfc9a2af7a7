package server

import (
	"strings"

	"trueup/fault"
	"trueup/reconcile"
)

// DiffRequest is an ad hoc diff as `trueup diff` takes it, flag for flag: the body of
// POST /api/v1/diffs, and what the CLI builds locally too, so both read it the same way.
type DiffRequest struct {
	Old       string   `json:"old"`
	New       string   `json:"new"`
	Key       []string `json:"key"`
	Partition string   `json:"partition,omitempty"`
	Measures  []string `json:"measure,omitempty"`
	Ignore    []string `json:"ignore,omitempty"`
	// Tolerance is COL=X, or X alone for every float or decimal column (0.01, or 0.1%).
	Tolerance []string `json:"tolerance,omitempty"`
	OldTarget string   `json:"old_target,omitempty"`
	NewTarget string   `json:"new_target,omitempty"`
	// Expect is the text of an expectations file, e.g. "inside 2026-07-10..2026-07-18 rows +0..6%".
	Expect  string   `json:"expect,omitempty"`
	Only    []string `json:"only,omitempty"`
	Samples int      `json:"samples,omitempty"` // 0 to MaxDiffSamples; 0 is the default, 10
}

// MaxDiffSamples bounds the sample rows a diff keeps per kind per partition: a diff is saved
// whole and shown on a page, so a request must not make either as large as the relations.
const MaxDiffSamples = 1000

// Spec reads the request into a reconcile spec, engines not yet set; a bad value is invalid
// (fault), saying which.
func (r DiffRequest) Spec() (reconcile.Spec, error) {
	spec := reconcile.Spec{
		Old: reconcile.Side{Relation: r.Old, Target: r.OldTarget}, New: reconcile.Side{Relation: r.New, Target: r.NewTarget},
		Key: r.Key, Partition: r.Partition, Measures: r.Measures, Ignore: r.Ignore, Partitions: r.Only, Samples: r.Samples,
	}
	if r.Old == "" || r.New == "" || len(r.Key) == 0 {
		return spec, fault.New(fault.Invalid, "old, new and key are required")
	}
	if r.Samples < 0 || r.Samples > MaxDiffSamples {
		return spec, fault.New(fault.Invalid, "samples %d: want 0 to %d", r.Samples, MaxDiffSamples)
	}
	for _, f := range r.Tolerance {
		col, x, ok := strings.Cut(f, "=")
		if !ok {
			col, x = reconcile.AnyColumn, f
		}
		t, err := reconcile.ParseTolerance(x)
		if err != nil {
			return spec, fault.New(fault.Invalid, "tolerance %s: %w", f, err)
		}
		if spec.Tolerance == nil {
			spec.Tolerance = map[string]reconcile.Tolerance{}
		}
		spec.Tolerance[strings.TrimSpace(col)] = t
	}
	if strings.TrimSpace(r.Expect) != "" {
		e, err := reconcile.ParseExpectations(r.Expect)
		if err != nil {
			return spec, fault.New(fault.Invalid, "expectations: %w", err)
		}
		spec.Expect = e
	}
	return spec, nil
}
