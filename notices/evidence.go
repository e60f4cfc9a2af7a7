package notices

import (
	"time"

	tsql "trueup/sql"
	"trueup/views"
)

// Evidence is what trueup knows about a change when it drafts a notice: the backfill's plan,
// its validation, and how the numbers people see move. The backfill fills it when a run is
// created and again as validation results arrive; fields not known yet stay empty and the
// draft says so.
type Evidence struct {
	Backfill string `json:"backfill"`
	RunID    int64  `json:"run_id"`
	Target   string `json:"target,omitempty"`
	// Reason is the plan's reason: bug, schema-change, new-data, migration or late-data.
	Reason string `json:"reason"`
	// Objective is the plan's one-paragraph statement of the problem and the fix.
	Objective string `json:"objective"`
	// Tables are every logical table whose numbers change: the rebuilt one and its downstream.
	Tables []string `json:"tables"`
	// Versions maps each table to the new version the change publishes (orders → 2).
	Versions map[string]int `json:"versions,omitempty"`
	// PartitionColumn names what the partitions are, e.g. order_date.
	PartitionColumn string `json:"partition_column,omitempty"`
	// Partitions are the rebuilt partitions, e.g. 2026-07-10 … 2026-07-18.
	Partitions []string `json:"partitions"`
	// From and To bound the rebuilt range, To exclusive; zero when not a date range.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// PlannedSwap is when the new data is planned to go live; zero when not set yet.
	PlannedSwap time.Time `json:"planned_swap"`
	// Owner is who to contact about the change.
	Owner string `json:"owner"`
	// Actor is who created the run.
	Actor string `json:"actor,omitempty"`
	// Rules are the rule results on the new version.
	Rules []RuleCheck `json:"rules,omitempty"`
	// Diff lists the partitions whose old and new versions differ (identical ones may be left
	// out: Compared counts them).
	Diff []PartitionDiff `json:"diff,omitempty"`
	// Compared says, per table, how many partitions were compared and how many are identical.
	Compared []TableComparison `json:"compared,omitempty"`
	// Expectations are the operator's declared intents, each judged against the diff.
	Expectations []Expectation `json:"expectations,omitempty"`
	// Override is set when someone published past a failed validation gate.
	Override *Override `json:"override,omitempty"`
	// Exposures are the reports reading the tables, evaluated before and after.
	Exposures []ExposureChange `json:"exposures,omitempty"`
	// LeftBehind, set when the notice is rolled back, are the rows written inside the change's
	// scope since it went live that the rollback did not carry back: readers no longer see them.
	LeftBehind []LeftBehind `json:"left_behind,omitempty"`
}

// RuleCheck is one rule's verdict on the new data.
type RuleCheck struct {
	Rule    string `json:"rule"`
	Table   string `json:"table,omitempty"`
	Passed  bool   `json:"passed"`
	Message string `json:"message,omitempty"`
}

// Verdicts of a partition diff.
const (
	VerdictExpected   = "expected"
	VerdictUnexpected = "unexpected"
	VerdictIdentical  = "identical"
)

// PartitionDiff is the old-vs-new summary of one partition.
type PartitionDiff struct {
	Table     string `json:"table,omitempty"`
	Partition string `json:"partition"`
	OldCount  int64  `json:"old_count"`
	NewCount  int64  `json:"new_count"`
	// PctChange is the change of the row count in percent. It means nothing when OldCount is 0:
	// the partition is new, and readers see "new".
	PctChange float64 `json:"pct_change"`
	// Measure names an optional summed column and its totals, e.g. sum(amount).
	Measure  string      `json:"measure,omitempty"`
	OldTotal tsql.Number `json:"old_total,omitempty"`
	NewTotal tsql.Number `json:"new_total,omitempty"`
	Verdict  string      `json:"verdict"` // expected, unexpected or identical
}

// TableComparison is how one table's old and new versions compare as a whole: the diff lists
// only the partitions that differ, so the identical ones are counted here.
type TableComparison struct {
	Table      string `json:"table"`
	Partitions int    `json:"partitions"` // compared
	Identical  int    `json:"identical"`
}

// Expectation is a declared intent and whether the diff met it.
type Expectation struct {
	Text string `json:"text"`
	Met  bool   `json:"met"`
}

// LeftBehind is what a rollback left in one table's version: its partitions written since the
// change went live, kept in Version and not visible to readers (views.Change.NotCarried).
type LeftBehind struct {
	Table      string          `json:"table"`
	Version    int             `json:"version"`
	Partitions []views.Carried `json:"partitions"`
}

// Override records who published past a failed validation gate, and why.
type Override struct {
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// reasonPhrase says a plan's reason in plain words.
func reasonPhrase(reason string) string {
	switch reason {
	case "bug":
		return "This is a correction of a bug."
	case "schema-change":
		return "This follows a change to how the data is structured."
	case "new-data":
		return "This adds data that was not available before."
	case "migration":
		return "This is part of a move to a new system."
	case "late-data":
		return "This takes in data that arrived late."
	case "":
		return ""
	}
	return "Reason: " + reason + "."
}
