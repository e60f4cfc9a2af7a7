package backfill

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// RunInterrupted is how a run reads whose ledger state is running or validating while the process
// that was building it is gone (killed, or its machine restarted): nothing builds it, and nothing
// will until it is resumed or cancelled. It is never written: it is derived from the run's owner
// each time the run is read, so a start-up and every status read agree without a sweep.
const RunInterrupted = "interrupted"

// A run's owner is the process building it, recorded as "pid:start:boot": the process id, the
// process's start time (clock ticks since boot, from /proc) and the boot's id. A pid alone would
// make a dead run look alive once the pid is reused; a heartbeat would need a clock and a
// staleness guess, and would call a paused process dead. A process on the same machine is alive
// for a run when its pid, start time and boot all match.

// processIdentity is the owner string of process pid, or "" when it does not exist, has exited
// (a zombie its parent has not reaped: field 3, the state, is Z), or /proc cannot tell.
func processIdentity(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces: fields are counted after
	// the last ')'. The start time is field 22, the 20th after it.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "" // a zombie (killed, not reaped yet) or dead process builds nothing
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%s:%s", pid, f[19], strings.TrimSpace(string(boot)))
}

// thisProcess is this process's owner string. Where /proc cannot tell, it is the pid alone: this
// process knows it for its own, other processes take it for gone.
// It is read once: every status poll asks it of each running run.
var thisProcess = sync.OnceValue(func() string {
	if id := processIdentity(os.Getpid()); id != "" {
		return id
	}
	return strconv.Itoa(os.Getpid())
})

// ownerAlive reports whether the process owner names is still running.
func ownerAlive(owner string) bool {
	if owner == "" {
		return false // recorded before runs had owners: its process is long gone
	}
	if owner == thisProcess() {
		return true
	}
	pid := ownerPID(owner)
	if pid <= 0 {
		return false
	}
	return processIdentity(pid) == owner
}

// ownerPID is the process id in owner, or 0.
func ownerPID(owner string) int {
	pidText, _, _ := strings.Cut(owner, ":")
	pid, _ := strconv.Atoi(pidText)
	return pid
}
