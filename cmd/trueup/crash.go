package main

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"trueup/views"
)

// crashEnv names a crash point for tests that kill trueup at an exact moment, as kill -9 would,
// rather than at a moment timing luck picks: TRUEUP_CRASH_AT=POINT kills the process with SIGKILL
// the first time it reaches POINT, TRUEUP_CRASH_AT=POINT:N the N-th time. Unset, nothing happens.
// The points: swap.after-outcome, rollback.after-outcome (the outcome is in the ledger, the
// notices have not heard of it) and backfill.partition-done (a partition's checkpoint is written).
const crashEnv = "TRUEUP_CRASH_AT"

// crashPoint returns the function to call at point: it kills the process when crashEnv names
// point and this is the time it names; nil when crashEnv does not name point.
func crashPoint(point string) func() {
	at, nth, _ := strings.Cut(os.Getenv(crashEnv), ":")
	if at != point {
		return nil
	}
	n, err := strconv.Atoi(nth)
	if err != nil || n < 1 {
		n = 1
	}
	var reached atomic.Int64
	return func() {
		if reached.Add(1) == int64(n) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way; nothing more may run
		}
	}
}

// crashHooks are the views' hooks for the crash points of swaps and rollbacks.
func crashHooks() views.Hooks {
	swap, rollback := crashPoint("swap.after-outcome"), crashPoint("rollback.after-outcome")
	if swap == nil && rollback == nil {
		return views.Hooks{}
	}
	return views.Hooks{AfterOutcome: func(p views.Publish) {
		if p.Kind == views.KindSwap && swap != nil {
			swap()
		}
		if p.Kind == views.KindRollback && rollback != nil {
			rollback()
		}
	}}
}
