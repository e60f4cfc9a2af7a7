package config

// Retention says which old versions of a logical table may be dropped. The live version and the
// rollback target are never dropped, whatever it says.
type Retention struct {
	// KeepVersions is how many versions besides the live one and the rollback target are kept
	// (0: keep everything).
	KeepVersions int `yaml:"keep_versions"`
	// Auto retires versions beyond KeepVersions after each swap.
	Auto bool `yaml:"auto"`
}

func (r *Retention) validate(bad func(key, format string, args ...any) error) error {
	if r.KeepVersions < 0 {
		return bad("keep_versions", "retention.keep_versions %d: want 0 or more", r.KeepVersions)
	}
	if r.Auto && r.KeepVersions == 0 {
		// keep_versions 0 keeps everything: auto would never retire anything, which is surely
		// not what was meant.
		return bad("auto", "retention.auto needs keep_versions: how many older versions to keep (1 or more)")
	}
	return nil
}
