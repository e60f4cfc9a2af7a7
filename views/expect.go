package views

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"trueup/fault"
)

// A confirmation shows what a swap or rollback will do; by the time the operator confirms, the
// tables may have moved (a second click, a retried request, someone else's swap). A request may
// carry what was confirmed — the swap a rollback takes back (RollbackRequest.Undoes), the version
// each table of a swap moves from (SwapRequest.From) — and is then refused as stale, nothing
// changed, when that no longer holds. Without it, a request does whatever is asked now.

// staleError is a swap or rollback refused because what the operator confirmed no longer holds:
// a Conflict (409, exit 1) that a confirmation page tells apart from the others (Stale), to
// show what the request would do now.
type staleError struct{ msg string }

func (e *staleError) Error() string { return e.msg }

// Is makes errors.Is(err, fault.ErrConflict) true.
func (e *staleError) Is(target error) bool { return target == fault.ErrConflict }

// Stale reports whether err refused a swap or rollback because what was confirmed no longer holds.
func Stale(err error) bool {
	var se *staleError
	return errors.As(err, &se)
}

// ParseFrom reads a swap's expected from-versions as an operator or a form writes them, table to
// "v1" ("" or "none": the table has no view yet).
func ParseFrom(from map[string]string) (map[string]int, error) {
	if len(from) == 0 {
		return nil, nil
	}
	out := make(map[string]int, len(from))
	for table, v := range from {
		switch strings.TrimSpace(v) {
		case "", "none":
			out[table] = 0
			continue
		}
		n, err := ParseVersionArg(table, v)
		if err != nil {
			return nil, err
		}
		out[table] = n
	}
	return out, nil
}

// FromOf is what a swap's plan moves each table from, as SwapRequest.From wants it.
func FromOf(p Plan) map[string]int {
	out := make(map[string]int, len(p.Changes))
	for _, c := range p.Changes {
		out[c.Table] = c.From
	}
	return out
}

// staleSwap refuses plan when req carries expected from-versions and plan does not move exactly
// those tables from exactly those versions.
func staleSwap(req SwapRequest, n int, plan Plan) error {
	if len(req.From) == 0 {
		return nil
	}
	same := len(req.From) == len(plan.Changes)
	for _, c := range plan.Changes {
		if from, ok := req.From[c.Table]; !ok || from != c.From {
			same = false
		}
	}
	if same {
		return nil
	}
	var was []string
	for _, t := range slices.Sorted(maps.Keys(req.From)) {
		was = append(was, fmt.Sprintf("%s from %s", t, versionOrNone(req.From[t])))
	}
	return &staleError{fmt.Sprintf("swap %s to v%d was confirmed as moving %s; it would now move %s: nothing was changed, look again and confirm",
		req.Table, n, strings.Join(was, ", "), plan.Summary())}
}

// staleRollback refuses a rollback confirmed to take back swap req.Undoes when the swap it would
// take back now is another one (undo; ok false: none), saying why.
func (s *Service) staleRollback(ctx context.Context, req RollbackRequest, undo Publish, ok bool) error {
	if req.Undoes == 0 || (ok && undo.ID == req.Undoes) {
		return nil
	}
	why := fmt.Sprintf("swap #%d is not in effect on %s", req.Undoes, req.Table)
	if was, err := s.GetPublish(ctx, req.Undoes); err == nil {
		if _, moved := was.change(req.Table); !moved || was.Kind != KindSwap {
			why = fmt.Sprintf("#%d is not a swap of %s (it is a %s of %s)", req.Undoes, req.Table, was.Kind, was.Table)
		} else if was.UndoneBy != 0 {
			why = fmt.Sprintf("swap #%d was already taken back by rollback #%d", req.Undoes, was.UndoneBy)
		}
	}
	now := "there is nothing to roll back now"
	if ok {
		now = fmt.Sprintf("a rollback now would take back swap #%d (%s)", undo.ID, undo.Summary())
	}
	return staleUndo(req.Table, req.Undoes, why, now)
}

func staleUndo(table string, undoes int64, why, now string) error {
	return &staleError{fmt.Sprintf("rollback of %s was confirmed to take back swap #%d, but %s; %s: nothing was changed, look again and confirm",
		table, undoes, why, now)}
}

// StaleUndoes is the refusal (stale, a conflict) of a rollback planned as p when it was
// confirmed to take back swap undoes (0: whichever is in effect) and p takes back another; nil
// otherwise. A dry run answers by it as the rollback would.
func (p Plan) StaleUndoes(undoes int64) error {
	if p.Kind != KindRollback || undoes == 0 || undoes == p.Undoes {
		return nil
	}
	// p's changes go back; the swap it takes back moved them the other way.
	undo := Publish{Changes: make([]Change, len(p.Changes))}
	for i, c := range p.Changes {
		undo.Changes[i] = Change{Table: c.Table, From: c.To, To: c.From}
	}
	return staleUndo(p.Table, undoes, fmt.Sprintf("swap #%d is not in effect on %s", undoes, p.Table),
		fmt.Sprintf("a rollback now would take back swap #%d (%s)", p.Undoes, undo.Summary()))
}

func versionOrNone(n int) string {
	if n == 0 {
		return "(no view)"
	}
	return fmt.Sprintf("v%d", n)
}
