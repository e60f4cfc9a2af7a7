package views

import (
	"encoding/json"
	"fmt"
)

// UnmarshalJSON reads the flat shape MarshalJSON writes, so that a client of the JSON API (the
// CLI with --server) gets back the VersionInfo a local command prints. Target is not part of
// that shape and stays empty.
func (v *VersionInfo) UnmarshalJSON(data []byte) error {
	var in versionJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	table, n, ok := ParseVersion(in.Relation)
	if !ok {
		return fmt.Errorf("views: version %q: relation %q is not TABLE__vN", in.Version, in.Relation)
	}
	*v = VersionInfo{
		Version: Version{Table: table, N: n, State: in.State, BuiltBy: in.BuiltBy, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt,
			Backfill: in.Backfill, RunID: in.RunID, Rows: in.Rows, Checksum: in.Checksum, Validation: in.Validation,
			OverrideBy: in.OverrideBy, OverrideReason: in.OverrideReason},
		Live: in.Live, RollbackTarget: in.RollbackTarget, Exists: in.Exists,
	}
	if d := in.DiffVsLive; d != nil {
		v.HasLiveCompare, v.RowsVsLive, v.SameAsLive, v.ChecksumCompared, v.DiffID = true, d.Rows, d.ChecksumEqual, d.ChecksumCompared, d.DiffID
	}
	return nil
}

// ListingJSON is a table's listing as the JSON API answers it (GET /api/v1/tables/{table}), and
// as a client of it (the CLI with --server) reads it back.
type ListingJSON struct {
	Target         string        `json:"target"`
	Table          string        `json:"table"`
	Live           string        `json:"live"`
	RollbackTarget string        `json:"rollback_target,omitempty"`
	Versions       []VersionInfo `json:"versions"`
	History        []Publish     `json:"history"`
	Busy           string        `json:"busy,omitempty"`  // who holds the table, as a sentence
	Nodes          []NodeVersion `json:"nodes,omitempty"` // a cluster's nodes and the version each reads
}

// JSON is l in the JSON API's shape.
func (l Listing) JSON() ListingJSON {
	out := ListingJSON{Target: l.Target, Table: l.Table, Live: VersionName(l.Live), RollbackTarget: VersionName(l.RollbackTarget),
		Versions: append([]VersionInfo{}, l.Versions...), History: append([]Publish{}, l.History...), Nodes: l.Nodes}
	if l.Busy != nil {
		out.Busy = l.Busy.Error()
	}
	return out
}

// Listing reads j back (Busy stays in j.Busy: the sentence, not who).
func (j ListingJSON) Listing() Listing {
	l := Listing{Target: j.Target, Table: j.Table, Versions: j.Versions, History: j.History, Nodes: j.Nodes}
	l.Live, _ = ParseVersionArg(j.Table, j.Live)
	l.RollbackTarget, _ = ParseVersionArg(j.Table, j.RollbackTarget)
	for i := range l.Versions {
		l.Versions[i].Target = j.Target
	}
	return l
}

// VersionName names version n as an operator writes it, "v2" ("" for 0: none).
func VersionName(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("v%d", n)
}
