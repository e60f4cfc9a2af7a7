package backfill

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
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
	// Killed, and not reaped yet (a zombie: kill -9 of a child whose parent has not waited),
	// it builds nothing: it is gone (it counted as alive, so a run was started afresh).
	other.Process.Kill()
	for dead := false; !dead; {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", other.Process.Pid))
		dead = err != nil || strings.Contains(string(stat), ") Z ")
		runtime.Gosched()
	}
	if ownerAlive(owner) {
		t.Errorf("the owner %q is alive as a zombie", owner)
	}
	other.Wait()
	if ownerAlive(owner) {
		t.Errorf("the owner %q is alive after its process exited", owner)
	}
}
