package reconcile

import (
	"time"

	tsql "trueup/sql"
)

// Verdicts of a partition against the expectations.
const (
	VerdictUnchanged  = "unchanged"  // no difference
	VerdictExpected   = "expected"   // differs, within what the expectations allow
	VerdictUnexpected = "unexpected" // breaks an expectation (a difference nobody announced, or not the one announced)
)

// Presence of a partition on the two sides.
const (
	PresenceBoth    = "both"
	PresenceOldOnly = "old_only" // the partition is missing from new
	PresenceNewOnly = "new_only" // the partition is new
)

// WholeRelation is the partition label of a diff without a partition column.
const WholeRelation = "(all)"

// Result is a finished diff. It is what the CLI prints, the ledger keeps and the swap gate reads.
type Result struct {
	ID int64 `json:"id,omitempty"`
	// Label says what a stored diff was for ("backfill fix_dedup_bug run 1: orders"), as it was
	// saved; empty for a diff not read back from the store.
	Label           string   `json:"label,omitempty"`
	Old             SideInfo `json:"old"`
	New             SideInfo `json:"new"`
	Key             []string `json:"key"`
	PartitionColumn string   `json:"partition_column,omitempty"`
	Grain           string   `json:"grain,omitempty"` // Spec.Grain when it made a partition a span of values
	Measures        []string `json:"measures,omitempty"`
	Compared        []string `json:"compared_columns"`
	// Renamed are the columns compared under another name in new (--map): old name → new name.
	Renamed map[string]string `json:"renamed,omitempty"`
	// Where is the condition both sides were filtered by (--where): only those rows were compared.
	Where     string               `json:"where,omitempty"`
	Tolerance map[string]Tolerance `json:"tolerance,omitempty"`
	// Precision says, per timestamp, float and decimal column, the precision it was compared at
	// (the coarser of its sides' declared types, or --precision): "seconds", "3 decimals", …
	Precision       map[string]string `json:"precision,omitempty"`
	Schema          Schema            `json:"schema"`
	Partitions      []*Partition      `json:"partitions"`
	Rows            RowCounts         `json:"rows"`
	ChangedColumns  map[string]int64  `json:"changed_columns"`
	Samples         Samples           `json:"samples"`
	Expectations    string            `json:"expectations,omitempty"`
	ExpectationsMet bool              `json:"expectations_met"`
	// Differs is true when any partition or the schema differs.
	Differs bool `json:"differs"`
	// Fingerprints names the sides ("old", "new") whose recorded fingerprints stood in for
	// reading them (see Partition.ConfirmedBy); empty when every side was read.
	Fingerprints []string `json:"fingerprints,omitempty"`
	// RowsTransferred counts table rows read out of the engines into trueup (row-level diff and
	// samples); partition and bucket checksums are not rows.
	RowsTransferred int64     `json:"rows_transferred"`
	CrossEngine     bool      `json:"cross_engine"`
	Started         time.Time `json:"started"`
	ElapsedMS       int64     `json:"elapsed_ms"`
	// Notes say what could not be compared and why.
	Notes []string `json:"notes,omitempty"`
}

// SideInfo names one compared relation.
type SideInfo struct {
	Target   string `json:"target"`
	Engine   string `json:"engine"`
	Relation string `json:"relation"`
}

// Schema is how the two relations' columns differ.
type Schema struct {
	Added   []ColumnInfo `json:"added,omitempty"`   // in new only
	Removed []ColumnInfo `json:"removed,omitempty"` // in old only
	Changed []TypeChange `json:"changed,omitempty"` // in both, of different types (values still compared)
}

// Differs reports a column added or removed that the diff was not told to ignore.
func (s Schema) Differs() bool {
	for _, c := range append(append([]ColumnInfo(nil), s.Added...), s.Removed...) {
		if !c.Ignored {
			return true
		}
	}
	return false
}

// ColumnInfo is a column present on one side only.
type ColumnInfo struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Ignored bool   `json:"ignored,omitempty"`
}

// TypeChange is a column whose type differs between the sides.
type TypeChange struct {
	Name    string `json:"name"`
	OldType string `json:"old_type"`
	NewType string `json:"new_type"`
}

// Partition is one partition's comparison.
type Partition struct {
	Partition string `json:"partition"`
	value     any
	Presence  string `json:"presence"`
	OldCount  int64  `json:"old_count"`
	NewCount  int64  `json:"new_count"`
	Delta     int64  `json:"delta"`
	// PctChange is rounded to one decimal as a person reads it; PctChangeExact is not. Both are
	// null when old_count is 0.
	PctChange      *float64 `json:"pct_change"`
	PctChangeExact *float64 `json:"pct_change_exact"`
	ChecksumMatch  bool     `json:"checksum_match"`
	// ConfirmedBy says how a matching partition was confirmed without reading both sides:
	// "fingerprint" (trueup's recorded fingerprints, see Fingerprints); empty when both were read.
	ConfirmedBy string             `json:"confirmed_by,omitempty"`
	Measures    map[string]Measure `json:"measures,omitempty"`
	// Rows is the row-level comparison; nil where it was not needed (checksums match) or not possible.
	Rows           *RowCounts       `json:"rows,omitempty"`
	ChangedColumns map[string]int64 `json:"changed_columns,omitempty"`
	OldNullKeys    int64            `json:"old_null_keys,omitempty"`
	NewNullKeys    int64            `json:"new_null_keys,omitempty"`
	Verdict        string           `json:"verdict"`
	// Reasons say which expectation an unexpected partition breaks.
	Reasons []string `json:"reasons,omitempty"`
	Samples *Samples `json:"samples,omitempty"`
	// Shards are the shards of a ClickHouse cluster (numbers as in system.clusters) on which the
	// partition differs, when the diff compared shard by shard (see shards.go).
	Shards []int `json:"shards,omitempty"`

	nullKeysAlike bool   // the rows with a NULL key are the same on both sides
	oldSum        uint64 // each side's row-hash sum from the partition summary (accountsFor)
	newSum        uint64
}

// Unchanged reports whether the partition holds the same rows on both sides (within tolerance).
func (p *Partition) Unchanged() bool {
	if p.ChecksumMatch {
		return true
	}
	return p.Presence == PresenceBoth && p.Rows != nil && p.Rows.Zero() &&
		p.OldCount == p.NewCount && (p.OldNullKeys == 0 && p.NewNullKeys == 0 || p.nullKeysAlike)
}

// Measure is one measure's totals in a partition. A float column's total is NaN or infinite
// when one of its values is: JSON has those by name (tsql.Number). Equal totals, NaN and NaN too,
// have a Delta and a change of 0.
type Measure struct {
	Old            tsql.Number  `json:"old"`
	New            tsql.Number  `json:"new"`
	Delta          tsql.Number  `json:"delta"`
	PctChange      *tsql.Number `json:"pct_change"`
	PctChangeExact *tsql.Number `json:"pct_change_exact"`
}

// RowCounts classifies rows by key. A key with more than one row on either side, whose rows
// differ between the sides, is counted once as a duplicate key and not as added, removed or
// changed; a key repeated alike on both sides is no difference.
type RowCounts struct {
	Added         int64 `json:"added"`
	Removed       int64 `json:"removed"`
	Changed       int64 `json:"changed"`
	DuplicateKeys int64 `json:"duplicate_keys"`
	// NullKeyAdded and NullKeyRemoved count the rows with a NULL key one side holds and the other
	// does not, matched whole (by row hash) since a key with a NULL matches nothing: apart from
	// Added and Removed, as the partition's old_null_keys and new_null_keys are.
	NullKeyAdded   int64 `json:"null_key_added,omitempty"`
	NullKeyRemoved int64 `json:"null_key_removed,omitempty"`
}

// Zero reports whether no row differs.
func (r *RowCounts) Zero() bool {
	return r.Added == 0 && r.Removed == 0 && r.Changed == 0 && r.DuplicateKeys == 0
}

func (r *RowCounts) add(o RowCounts) {
	r.Added += o.Added
	r.Removed += o.Removed
	r.Changed += o.Changed
	r.DuplicateKeys += o.DuplicateKeys
	r.NullKeyAdded += o.NullKeyAdded
	r.NullKeyRemoved += o.NullKeyRemoved
}

// Samples are bounded examples of each kind of row difference.
type Samples struct {
	Added      []Row       `json:"added"`
	Removed    []Row       `json:"removed"`
	Changed    []Change    `json:"changed"`
	Duplicates []Duplicate `json:"duplicate_keys"`
}

func (s *Samples) empty() bool {
	return len(s.Added) == 0 && len(s.Removed) == 0 && len(s.Changed) == 0 && len(s.Duplicates) == 0
}

// Row is an added or removed row: its key and the values of the compared columns.
type Row struct {
	Partition string `json:"partition"`
	Key       Fields `json:"key"`
	Values    Fields `json:"values"`
}

// Change is a row whose key is on both sides with different values.
type Change struct {
	Partition string         `json:"partition"`
	Key       Fields         `json:"key"`
	Columns   []ColumnChange `json:"columns"`
}

// ColumnChange is one changed value.
type ColumnChange struct {
	Column string `json:"column"`
	Old    any    `json:"old"`
	New    any    `json:"new"`
}

// Duplicate is a key with more than one row on a side.
type Duplicate struct {
	Partition string `json:"partition"`
	Key       Fields `json:"key"`
	OldRows   int64  `json:"old_rows"`
	NewRows   int64  `json:"new_rows"`
	// Surplus are the key's rows that one side holds more times than the other (at the columns'
	// precisions): what would have to go from old, or came with new, for the sides to agree. A
	// row on both sides as many times is not listed.
	Surplus []Surplus `json:"surplus"`
}

// Surplus is a row one side holds Times more often than the other.
type Surplus struct {
	Side   string `json:"side"` // "old" or "new"
	Times  int64  `json:"times"`
	Values Fields `json:"values"`
}

// RowLine is one differing row as Spec.Rows receives it (trueup diff --rows): Sign "-" for a
// row of old that new does not hold, "+" for one of new that old does not hold (a changed row
// is both), its partition's label, and the compared columns' values, the key first.
type RowLine struct {
	Sign      string `json:"sign"`
	Partition string `json:"partition"`
	Values    Fields `json:"values"`
	// Surplus marks a copy of a row whose key both sides hold, one of them more often: a
	// difference of multisets, not of sets.
	Surplus bool `json:"surplus,omitempty"`
}

// Partition returns the partition with the given label, or nil.
func (r *Result) Partition(label string) *Partition {
	for _, p := range r.Partitions {
		if p.Partition == label {
			return p
		}
	}
	return nil
}

// Counts tallies the partitions by verdict.
func (r *Result) Counts() map[string]int {
	out := map[string]int{}
	for _, p := range r.Partitions {
		out[p.Verdict]++
	}
	return out
}
