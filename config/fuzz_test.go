package config_test

import (
	"errors"
	"testing"

	"trueup/config"
	"trueup/fault"
)

// FuzzParse: any trueup.yaml loads or is refused with ErrInvalid, never a panic; a config that
// loads names a default target it has. Seeds: testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add("targets:\n  w:\n    url: duckdb:w.duckdb\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := config.Parse("trueup.yaml", []byte(text))
		if err != nil {
			if !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("error is not ErrInvalid: %v", err)
			}
			return
		}
		if _, ok := c.Targets[c.DefaultTarget]; !ok {
			t.Fatalf("default target %q is not a target", c.DefaultTarget)
		}
		for _, tok := range c.Auth.Tokens {
			if len(tok.SHA256) != 64 {
				t.Fatalf("token %q kept a hash of %d characters", tok.Name, len(tok.SHA256))
			}
		}
	})
}
