package backfill

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOwnerAlive: a run's owner is alive while its process runs — this one or another — and
// gone once it has exited, or when its pid now belongs to a process that started at another
// time (a reused pid), or when no owner was recorded.
func TestOwnerAlive(t *testing.T) {
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	owner := processIdentity(other.Process.Pid)
	if owner == "" {
		t.Fatal("no identity for a running process")
	}
	pid, start, _ := strings.Cut(owner, ":")
	start, boot, _ := strings.Cut(start, ":")
	for _, tc := range []struct {
		name  string
		owner string
		alive bool
	}{
		{"this_process", thisProcess(), true},
		{"live_other_process", owner, true},
		{"reused_pid", pid + ":" + start + "1:" + boot, false},
		{"other_boot", pid + ":" + start + ":00000000-0000-0000-0000-000000000000", false},
		{"no_owner", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownerAlive(tc.owner); got != tc.alive {
				t.Errorf("ownerAlive(%q) = %v, want %v", tc.owner, got, tc.alive)
			}
		})
	}
	other.Process.Kill()
	other.Wait()
	if ownerAlive(owner) {
		t.Errorf("the owner %q is alive after its process exited", owner)
	}
}
