package config

import (
	"errors"
	"strings"
	"testing"

	"trueup/fault"
)

func TestRetention(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, err string
		want            Retention
	}{
		{"default_keeps_everything", "", "", Retention{}},
		{"keep_and_auto", "retention:\n  keep_versions: 2\n  auto: true\n", "", Retention{KeepVersions: 2, Auto: true}},
		{"negative", "retention:\n  keep_versions: -1\n", "trueup.yaml:5: retention.keep_versions -1: want 0 or more", Retention{}},
		{"auto_without_keep", "retention:\n  auto: true\n", "trueup.yaml:5: retention.auto needs keep_versions", Retention{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("trueup.yaml", []byte("targets:\n  w:\n    url: duckdb:w.duckdb\n"+tc.yaml))
			if tc.err != "" {
				if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Retention != tc.want {
				t.Errorf("retention = %+v, want %+v", c.Retention, tc.want)
			}
		})
	}
}
