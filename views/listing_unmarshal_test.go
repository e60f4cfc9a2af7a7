package views

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestVersionInfoJSONRoundTrip: what the API sends is what a client reads back, so the CLI
// prints the same versions through a server as locally.
func TestVersionInfoJSONRoundTrip(t *testing.T) {
	at := time.Date(2026, 7, 20, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		v    VersionInfo
	}{
		{"live", VersionInfo{Version: Version{Table: "orders", N: 1, State: StateLive, BuiltBy: "ann", CreatedAt: at, UpdatedAt: at,
			Rows: 5000, Checksum: "123"}, Live: true, Exists: true}},
		{"candidate_with_diff", VersionInfo{Version: Version{Table: "daily_revenue", N: 12, State: "validation-failed", CreatedAt: at,
			UpdatedAt: at, Backfill: "fix_dedup_bug", RunID: 3, Rows: 90, Checksum: "9", DiffID: 7, Validation: json.RawMessage(`{"passed":false}`),
			OverrideBy: "ann", OverrideReason: "known"}, Exists: true, HasLiveCompare: true, RowsVsLive: -4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			var got VersionInfo
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.v, got); d != "" {
				t.Errorf("round trip (-sent +read):\n%s", d)
			}
		})
	}
}
