package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"trueup/fault"
	"trueup/views"
)

// surveyTimeout bounds how long the dashboard and the table API wait for one target, so a
// target that hangs shows up as an error instead of holding the page.
const surveyTimeout = 5 * time.Second

// errNotConnected is reported for a target given to the server without an engine.
var errNotConnected = errors.New("not connected")

// targetTables is what one target said when asked for its logical tables.
type targetTables struct {
	Target
	Tables []views.Table
	Err    error
}

// survey asks every target for its logical tables, all at once, and returns the answers in
// target order.
func (s *Server) survey(ctx context.Context) []targetTables {
	out := make([]targetTables, len(s.opt.Targets))
	var wg sync.WaitGroup
	for i, t := range s.opt.Targets {
		wg.Go(func() {
			out[i] = targetTables{Target: t}
			if t.Engine == nil {
				out[i].Err = errNotConnected
				return
			}
			ctx, cancel := context.WithTimeout(ctx, surveyTimeout)
			defer cancel()
			tables, err := views.List(ctx, t.Name, t.Engine)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("no answer within %s", surveyTimeout)
			}
			out[i].Tables, out[i].Err = tables, err
		})
	}
	wg.Wait()
	return out
}

// sortTables orders logical tables by name, then target.
func sortTables(ts []views.Table) {
	slices.SortFunc(ts, func(a, b views.Table) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Target, b.Target))
	})
}

// oneLine flattens an error for places that show one line per problem (engines' messages often
// span several).
func oneLine(err error) string { return fault.OneLine(err) }
