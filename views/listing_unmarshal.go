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
		v.HasLiveCompare, v.RowsVsLive, v.SameAsLive, v.DiffID = true, d.Rows, d.ChecksumEqual, d.DiffID
	}
	return nil
}
