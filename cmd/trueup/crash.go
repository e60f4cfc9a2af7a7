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
	swap, rollback := crashPoint("swap.after-outcome"), crashPoint("rollback.after-outcome")
	adoptIntent, adoptDone := crashPoint("adopt.after-intent"), crashPoint("adopt.after-rename")
	carried, repointed := crashPoint("swap.after-carry"), crashPoint("swap.after-repoint")
	var h views.Hooks
	if carried != nil {
		h.AfterCarry = func(views.Publish) { carried() }
	}
	if swap != nil || rollback != nil {
		h.AfterOutcome = func(p views.Publish) {
			if p.Kind == views.KindSwap && swap != nil {
				swap()
			}
			if p.Kind == views.KindRollback && rollback != nil {
				rollback()
			}
		}
	}
	if adoptIntent != nil {
		h.AfterIntent = func(p views.Publish) {
			if p.Kind == views.KindAdopt {
				adoptIntent()
			}
		}
	}
	if adoptDone != nil || repointed != nil {
		h.AfterRepoint = func(p views.Publish) {
			if p.Kind == views.KindAdopt && adoptDone != nil {
				adoptDone()
			}
			if p.Kind == views.KindSwap && repointed != nil {
				repointed()
			}
		}
	}
	return h
}
