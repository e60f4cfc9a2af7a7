package app

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"trueup/monitor"
	"trueup/rules"
	tsql "trueup/sql"
	"trueup/views"
)

// listeners tells each of its listeners of a publish, in order; their errors are joined (the
// publish has happened all the same: the views service logs and audits them).
type listeners []views.Listener

func (ls listeners) Published(ctx context.Context, p views.Publish) ([]views.NoticeMove, error) {
	return ls.each(func(l views.Listener) ([]views.NoticeMove, error) { return l.Published(ctx, p) })
}

func (ls listeners) RolledBack(ctx context.Context, p views.Publish, reason string) ([]views.NoticeMove, error) {
	return ls.each(func(l views.Listener) ([]views.NoticeMove, error) { return l.RolledBack(ctx, p, reason) })
}

// each tells every listener by tell, gathering the notices they moved and their errors.
func (ls listeners) each(tell func(views.Listener) ([]views.NoticeMove, error)) ([]views.NoticeMove, error) {
	var out []views.NoticeMove
	var errs []error
	for _, l := range ls {
		moves, err := tell(l)
		out = append(out, moves...)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// Foresee is what the listeners that can say (the notices) will do when they hear of p.
func (ls listeners) Foresee(ctx context.Context, p views.Publish) ([]views.NoticeMove, error) {
	var out []views.NoticeMove
	for _, l := range ls {
		if f, ok := l.(views.Foreseer); ok {
			moves, err := f.Foresee(ctx, p)
			if err != nil {
				return out, err
			}
			out = append(out, moves...)
		}
	}
	return out, nil
}

// rerun runs, after a swap or rollback, the rules of the tables it moved, in the background of
// the process: the rules' latest results — the dashboard's — then speak of the versions readers
// see now, where they went on failing for the fixed table until someone pressed Run now. A run
// that cannot start (one of its rules is running) or fails is logged; the next scheduled run
// catches up.
type rerun struct {
	mon *monitor.Monitor
	log *slog.Logger
	wg  *sync.WaitGroup // the project's background work (Project.Wait)
	ctx context.Context // ends when the project closes
}

func (r *rerun) Published(ctx context.Context, p views.Publish) ([]views.NoticeMove, error) {
	r.start(ctx, p)
	return nil, nil
}

func (r *rerun) RolledBack(ctx context.Context, p views.Publish, _ string) ([]views.NoticeMove, error) {
	r.start(ctx, p)
	return nil, nil
}

func (r *rerun) start(ctx context.Context, p views.Publish) {
	tables := p.Tables()
	var names []string
	for _, rule := range r.mon.Rules() {
		if slices.ContainsFunc(tables, func(t string) bool { return reads(rule, t) }) {
			names = append(names, rule.Name)
		}
	}
	if len(names) == 0 {
		return
	}
	ctx = r.ctx
	r.wg.Go(func() {
		if _, err := r.mon.RunSelected(ctx, names, nil, p.Actor); err != nil {
			r.log.Warn("rules not rerun after the publish; the next scheduled run checks them", "publish", p.ID, "rules", names, "err", err)
		}
	})
}

// reads reports whether a rule reads table: its table or parent, or for a custom rule a
// relation its SELECT names (qualified or not).
func reads(r *rules.Rule, table string) bool {
	if r.Table == table || r.Parent == table {
		return true
	}
	for _, ref := range tsql.TableRefs(r.Body) {
		if ref == table || strings.HasSuffix(ref, "."+table) {
			return true
		}
	}
	return false
}
