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
// notices have not heard of it), backfill.partition-done (a partition's checkpoint is written),
// pipeline.window-done (trueup run: a window is written into a table and checkpointed),
// adopt.after-intent (the adopt's intent is in the ledger, the table untouched) and
// adopt.after-rename (the table is renamed and its view made, the outcome not recorded),
// swap.after-carry (ClickHouse: what live gained is carried into the new version, no intent
// recorded yet) and swap.after-repoint (the views moved, with the carry on DuckDB, the outcome not
// recorded).
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

// crashHooks are the views' hooks for the crash points of swaps, rollbacks and adopts.
func crashHooks() views.Hooks {
	var h views.Hooks
	if carried := crashPoint("swap.after-carry"); carried != nil {
		h.AfterCarry = func(views.Publish) { carried() }
	}
	h.AfterOutcome = byKind(map[string]string{views.KindSwap: "swap.after-outcome", views.KindRollback: "rollback.after-outcome"})
	h.AfterIntent = byKind(map[string]string{views.KindAdopt: "adopt.after-intent"})
	h.AfterRepoint = byKind(map[string]string{views.KindAdopt: "adopt.after-rename", views.KindSwap: "swap.after-repoint"})
	return h
}

// byKind is a hook that reaches the crash point points names for the kind of the publish it is
// called with; nil when crashEnv names none of them.
func byKind(points map[string]string) func(views.Publish) {
	at := map[string]func(){}
	for kind, point := range points {
		if f := crashPoint(point); f != nil {
			at[kind] = f
		}
	}
	if len(at) == 0 {
		return nil
	}
	return func(p views.Publish) {
		if f := at[p.Kind]; f != nil {
			f()
		}
	}
}
