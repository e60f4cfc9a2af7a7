package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"trueup/sql/sqltest"
)

// TestDiffUsesFingerprints builds the demo's fix on both engines and diffs the live version
// with the new one: the new version's partitions carried from live are confirmed from the
// fingerprints trueup recorded as it built it (live read once), the rebuilt ones are read and
// differ. --rescan reads everything and finds the same. A write to the new version behind
// trueup's back (an insert on both engines, an update on DuckDB) moves the engine's write mark:
// the fingerprints are no longer used and the diff shows the rows written.
func TestDiffUsesFingerprints(t *testing.T) {
	for _, name := range []string{"duckdb", "clickhouse"} {
		t.Run(name, func(t *testing.T) {
			var dir, url string
			if name == "duckdb" {
				dir = demoDir(t)
				url = "duckdb:" + filepath.Join(dir, "warehouse.duckdb")
			} else if url = sqltest.ClickHouseURL(t); url == "" {
				return
			} else {
				dir = demoDir(t, "--target", url)
			}
			cfg := filepath.Join(dir, "trueup.yaml")
			run := func(args ...string) (int, string, string) {
				t.Helper()
				return cli(t, append([]string{"--config", cfg}, args...)...)
			}
			if code, out, errs := run("backfill", "run", "fix_dedup_bug"); code != 0 {
				t.Fatalf("backfill run: exit %d: %s%s", code, out, errs)
			}
			type partition struct {
				Partition     string `json:"partition"`
				OldCount      int64  `json:"old_count"`
				NewCount      int64  `json:"new_count"`
				ChecksumMatch bool   `json:"checksum_match"`
				ConfirmedBy   string `json:"confirmed_by"`
			}
			diff := func(extra ...string) (fps []string, parts map[string]partition) {
				t.Helper()
				args := append([]string{"diff", "--old", "orders__v1", "--new", "orders__v2", "--key", "order_id", "--partition", "order_date", "--format", "json"}, extra...)
				_, out, errs := run(args...)
				var res struct {
					Fingerprints []string    `json:"fingerprints"`
					Partitions   []partition `json:"partitions"`
				}
				if err := json.Unmarshal([]byte(out), &res); err != nil {
					t.Fatalf("diff: %v: %s %s", err, out, errs)
				}
				parts = map[string]partition{}
				for _, p := range res.Partitions {
					parts[p.Partition] = p
				}
				return res.Fingerprints, parts
			}
			fps, parts := diff()
			if strings.Join(fps, ",") != "new" {
				t.Fatalf("diff of the built version used fingerprints of %v, want new", fps)
			}
			if p := parts["2026-08-30"]; !p.ChecksumMatch || p.ConfirmedBy != "fingerprint" || p.OldCount == 0 || p.NewCount != p.OldCount {
				t.Errorf("a carried partition: %+v, want confirmed by fingerprint", p)
			}
			if p := parts["2026-07-12"]; p.ChecksumMatch || p.ConfirmedBy != "" || p.NewCount <= p.OldCount {
				t.Errorf("a rebuilt partition: %+v, want read and more rows", p)
			}
			confirmed := 0
			for _, p := range parts {
				if p.ConfirmedBy != "" {
					confirmed++
				}
			}
			rfps, rparts := diff("--rescan")
			if len(rfps) != 0 {
				t.Errorf("diff --rescan used fingerprints of %v", rfps)
			}
			for k, p := range rparts {
				q := parts[k]
				if p.ConfirmedBy != "" || p.ChecksumMatch != q.ChecksumMatch || p.OldCount != q.OldCount || p.NewCount != q.NewCount {
					t.Errorf("--rescan %s: %+v, with fingerprints %+v", k, p, q)
				}
			}
			if confirmed != len(parts)-9 || len(rparts) != len(parts) {
				t.Errorf("%d of %d partitions confirmed by fingerprint", confirmed, len(parts))
			}

			// Behind trueup's back.
			lateRows(t, url, "orders__v2", "2026-08-30", 0, 2)
			fps, parts = diff()
			if len(fps) != 0 {
				t.Errorf("diff after a write behind trueup's back used fingerprints of %v", fps)
			}
			if p := parts["2026-08-30"]; p.ChecksumMatch || p.NewCount != p.OldCount+2 {
				t.Errorf("the partition written behind trueup's back: %+v, want 2 rows more in new", p)
			}
			if name != "duckdb" {
				return
			}
			// The rows deleted again: the version holds what was built (whether or not its
			// storage says so), then an update in place, which moves the write mark.
			execSQL(t, url, "DELETE FROM orders__v2 WHERE order_id >= 1000000000")
			if _, parts := diff(); !parts["2026-08-30"].ChecksumMatch {
				t.Errorf("after the rows written behind trueup's back are deleted: %+v, want it identical", parts["2026-08-30"])
			}
			execSQL(t, url, "UPDATE orders__v2 SET amount = amount + 1 WHERE order_id = (SELECT min(order_id) FROM orders__v2 WHERE order_date = DATE '2026-08-29')")
			fps, parts = diff()
			if len(fps) != 0 {
				t.Errorf("diff after an update behind trueup's back used fingerprints of %v", fps)
			}
			if p := parts["2026-08-29"]; p.ChecksumMatch {
				t.Errorf("the partition updated behind trueup's back: %+v, want it to differ", p)
			}
		})
	}
}

// TestVersionsDoNotCompareChecksumsOfTwoKinds: a version built by a backfill has the checksum of
// its fingerprints (the engine's own hash), an adopted v1 a portable one; the versions listing
// does not call them different, it says the diff compares them.
func TestVersionsDoNotCompareChecksumsOfTwoKinds(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	if code, out, errs := cli(t, "--config", cfg, "backfill", "run", "fix_dedup_bug"); code != 0 {
		t.Fatalf("backfill run: exit %d: %s %s", code, out, errs)
	}
	code, out, errs := cli(t, "--config", cfg, "versions", "orders", "--format", "json")
	var vs []struct {
		Version    string `json:"version"`
		DiffVsLive *struct {
			ChecksumEqual    bool `json:"checksum_equal"`
			ChecksumCompared bool `json:"checksum_compared"`
		} `json:"diff_vs_live"`
	}
	if err := json.Unmarshal([]byte(out), &vs); code != 0 || err != nil || len(vs) != 2 {
		t.Fatalf("versions --format json: exit %d, %v: %s %s", code, err, out, errs)
	}
	for _, v := range vs {
		if v.Version == "v2" && (v.DiffVsLive == nil || v.DiffVsLive.ChecksumCompared || v.DiffVsLive.ChecksumEqual) {
			t.Errorf("v2 against the adopted v1: %+v, want not compared", v.DiffVsLive)
		}
	}
	if code, out, _ := cli(t, "--config", cfg, "versions", "orders"); code != 0 || !strings.Contains(out, "trueup diff compares") || strings.Contains(out, "checksum differs") {
		t.Errorf("versions: exit %d:\n%s", code, out)
	}
}
