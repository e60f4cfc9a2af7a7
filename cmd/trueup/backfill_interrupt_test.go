package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBackfillRunInterrupted: an interrupt (Ctrl-C) of a local `backfill run` stops the build,
// which is this process's, after the partitions in flight: the run is reported cancelled (exit 1),
// and a resume builds the rest.
func TestBackfillRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a backfill")
	}
	cfg := filepath.Join(demoDir(t), "trueup.yaml")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	errb := &lockedBuffer{}
	go func() {
		for !strings.Contains(errb.String(), "building") {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	code := run(ctx, []string{"--config", cfg, "backfill", "run", "fix_dedup_bug"}, &out, errb)
	if code != exitFailed || !strings.Contains(out.String(), "run 1 of fix_dedup_bug: cancelled") ||
		!strings.Contains(errb.String(), "resume with: trueup backfill resume fix_dedup_bug") {
		t.Fatalf("interrupted run: exit %d, want %d and cancelled:\n%s%s", code, exitFailed, out.String(), errb.String())
	}
	code, stdout, errs := cli(t, "--config", cfg, "backfill", "resume", "fix_dedup_bug")
	if code != exitOK || !strings.Contains(stdout, "run 1 of fix_dedup_bug: validated") ||
		!strings.Contains(errs, "resuming run 1 (cancelled)") {
		t.Fatalf("resume: exit %d:\n%s%s", code, stdout, errs)
	}
}
