package views

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// VersionInfo is one version as `trueup versions` and the versions page show it.
type VersionInfo struct {
	Version
	Live           bool // the view reads it now
	RollbackTarget bool // a rollback would go back to it
	Exists         bool // its table exists in the engine
	// Diff against the live version: rows more (or fewer) than live, and whether the checksums
	// are equal (ChecksumCompared: both are of one kind, see SameChecksum). DiffID links the
	// reconcile diff the backfill recorded, when there is one.
	RowsVsLive       int64
	SameAsLive       bool
	ChecksumCompared bool
	HasLiveCompare   bool
}

// fingerprintPrefix marks a version checksum summed from its fingerprints (the engine's own row
// hash), which is not comparable with a portable one (a full scan's, as adopt and sync take).
const fingerprintPrefix = "fp:"

// FingerprintChecksum is the version checksum of a version summed from its fingerprints.
func FingerprintChecksum(sum uint64) string { return fingerprintPrefix + strconv.FormatUint(sum, 10) }

// SameChecksum compares two version checksums: equal, and whether they could be compared at all
// (both known and of one kind).
func SameChecksum(a, b string) (same, compared bool) {
	if a == "" || b == "" || strings.HasPrefix(a, fingerprintPrefix) != strings.HasPrefix(b, fingerprintPrefix) {
		return false, false
	}
	return a == b, true
}

// versionJSON is the flat shape of `trueup versions --format json`, written by MarshalJSON and
// read back by UnmarshalJSON (the CLI with --server).
type versionJSON struct {
	Version        string          `json:"version"`
	State          string          `json:"state"`
	Live           bool            `json:"live"`
	RollbackTarget bool            `json:"rollback_target"`
	Exists         bool            `json:"exists"`
	Relation       string          `json:"relation"`
	BuiltBy        string          `json:"built_by"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	Backfill       string          `json:"backfill,omitempty"`
	RunID          int64           `json:"run_id,omitempty"`
	Rows           int64           `json:"rows"`
	Checksum       string          `json:"checksum"`
	DiffVsLive     *diffVsLiveJSON `json:"diff_vs_live,omitempty"`
	Validation     json.RawMessage `json:"validation,omitempty"`
	OverrideBy     string          `json:"override_by,omitempty"`
	OverrideReason string          `json:"override_reason,omitempty"`
}

type diffVsLiveJSON struct {
	Rows          int64 `json:"rows"`
	ChecksumEqual bool  `json:"checksum_equal"`
	// ChecksumCompared is false when the checksums are of different kinds (a fingerprint sum
	// and a portable one): checksum_equal then says nothing; trueup diff does.
	ChecksumCompared bool  `json:"checksum_compared"`
	DiffID           int64 `json:"diff_id,omitempty"`
}

// MarshalJSON gives the flat shape of `trueup versions --format json`.
func (v VersionInfo) MarshalJSON() ([]byte, error) {
	out := versionJSON{
		Version: v.Name(), State: v.State, Live: v.Live, RollbackTarget: v.RollbackTarget, Exists: v.Exists,
		Relation: v.Physical(), BuiltBy: v.BuiltBy, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
		Backfill: v.Backfill, RunID: v.RunID, Rows: v.Rows, Checksum: v.Checksum, Validation: v.Validation,
		OverrideBy: v.OverrideBy, OverrideReason: v.OverrideReason,
	}
	if v.HasLiveCompare {
		out.DiffVsLive = &diffVsLiveJSON{Rows: v.RowsVsLive, ChecksumEqual: v.SameAsLive, ChecksumCompared: v.ChecksumCompared, DiffID: v.DiffID}
	}
	return json.Marshal(out)
}

// Listing is a logical table's versions and recent publishes.
type Listing struct {
	Target         string
	Table          string
	Live           int // 0: the table has no view
	RollbackTarget int // 0: nothing to roll back
	Versions       []VersionInfo
	History        []Publish // newest first
	// Busy names who holds the table right now, if anyone.
	Busy *ConflictError
	// Nodes is, on a cluster, the version each node's view reads now (NodeVersions).
	Nodes []NodeVersion
}

// Versions lists table's versions, adopting version tables the ledger does not know yet, and
// its 20 newest publishes. When the ledger disagrees with the view about which version is live
// and nobody holds the table, it is repaired first.
func (s *Service) Versions(ctx context.Context, table string) (Listing, error) {
	return s.VersionsWithHistory(ctx, table, 20)
}

// VersionsWithHistory is Versions with the newest history publishes (0: all), so a page of
// the history beyond the newest 20 can be shown.
func (s *Service) VersionsWithHistory(ctx context.Context, table string, history int) (Listing, error) {
	st, vs, err := s.sync(ctx, table, false)
	if err != nil {
		return Listing{}, err
	}
	if disagree(st, vs) {
		if _, unlock, lerr := s.lock([]string{table}, actor, "recover"); lerr == nil {
			if held, _ := s.ledgerHolder(ctx, table); held == nil {
				st, vs, err = s.sync(ctx, table, true)
			}
			unlock()
			if err != nil {
				return Listing{}, err
			}
		}
	}
	if len(vs) == 0 && st.live == 0 {
		if r, err := s.relation(ctx, table); err == nil && r.exists && !r.view && len(r.versions) == 0 {
			if name, n, ok := ParseVersion(table); ok {
				if lr, err := s.relation(ctx, name); err == nil && lr.view {
					// A version's own table: its logical table is the one to ask for.
					return Listing{}, notFoundf("%s is version v%d of the logical table %s in target %s: ask for %s (trueup versions %s)",
						table, n, name, s.target, name, name)
				}
			}
			return Listing{}, &PlainTableError{Table: table, Target: s.target}
		}
		return Listing{}, notFoundf("%s is not a logical table of target %s (no view over %s__v<N>)", table, s.target, table)
	}
	l := Listing{Target: s.target, Table: table, Live: st.live}
	if l.RollbackTarget, err = s.rollbackTarget(ctx, table); err != nil {
		return Listing{}, err
	}
	// The rows each version holds now, not as recorded when it was built or adopted: carries, a
	// catch-up and the pipeline write versions after that. A recorded checksum is shown and
	// compared only while it still describes its version (stale reports whether it does not):
	// one next to rows it was not taken of misled the reader comparing versions by it.
	stale := map[int]bool{}
	for i := range vs {
		if !st.physical[vs[i].N] {
			continue
		}
		rel := Physical(table, vs[i].N)
		n, err := rowCount(ctx, s.engine, rel)
		if err != nil {
			return Listing{}, err
		}
		if n != vs[i].Rows {
			vs[i].Rows, stale[vs[i].N] = n, true
		} else if strings.HasPrefix(vs[i].Checksum, fingerprintPrefix) {
			_, current, err := s.store.Fingerprints(ctx, s.engine, s.target, table, vs[i].N)
			if err != nil {
				return Listing{}, err
			}
			stale[vs[i].N] = !current
		}
		if stale[vs[i].N] {
			vs[i].Checksum = ""
		}
	}
	var live *Version
	for i := range vs {
		if vs[i].N == st.live {
			live = &vs[i]
		}
	}
	for _, v := range vs {
		info := VersionInfo{Version: v, Live: v.N == st.live, RollbackTarget: v.N == l.RollbackTarget, Exists: st.physical[v.N]}
		if live != nil && !info.Live && info.Exists {
			info.HasLiveCompare = true
			info.RowsVsLive = v.Rows - live.Rows
			if !stale[v.N] && !stale[live.N] {
				info.SameAsLive, info.ChecksumCompared = SameChecksum(v.Checksum, live.Checksum)
			}
		}
		l.Versions = append(l.Versions, info)
	}
	if l.History, err = s.History(ctx, table, history); err != nil {
		return Listing{}, err
	}
	if c, ok := s.Held(table); ok {
		l.Busy = c
	} else if c, err := s.ledgerHolder(ctx, table); err == nil && c != nil {
		l.Busy = c
	}
	l.Nodes = s.NodeVersions(ctx, table)
	return l, nil
}

// disagree reports whether the ledger's live version differs from the one the view reads.
func disagree(st engineState, vs []Version) bool {
	for _, v := range vs {
		if (v.State == StateLive) != (v.N == st.live) {
			return true
		}
	}
	return false
}
