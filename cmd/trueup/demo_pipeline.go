package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"trueup/backfill"
	"trueup/fixtures"
	tsql "trueup/sql"
	"trueup/views"
)

// The demo's pipeline: what keeps a production warehouse moving, inside `trueup demo`. Each
// minute it loads the orders that arrived since it last ran into orders_raw, appends them to
// orders' write target (resolved before each load, as a pipeline outside trueup would), and
// recomputes the days of daily_revenue they fall on with trueup run. So the demo's data ends now
// whatever the day, its freshness rule passes, and a swap after a backfill carries the orders
// that arrived while it was built.

// demoPipeline is the demo's pipeline over an open project.
type demoPipeline struct {
	e      tsql.Engine
	views  *views.Service
	runner *backfill.Runner
	opt    fixtures.Options
	now    func() time.Time
}

func newDemoPipeline(ctx context.Context, a *app, opt fixtures.Options, log *slog.Logger) (*demoPipeline, error) {
	target := a.Config.DefaultTarget
	e, err := a.Engine(target)
	if err != nil {
		return nil, err
	}
	r, err := a.BackfillRunner(ctx, target, nil, log)
	if err != nil {
		return nil, err
	}
	return &demoPipeline{e: e, views: views.New(target, e, a.Ledger), runner: r, opt: opt, now: time.Now}, nil
}

// load brings the warehouse up to the current minute: the orders of every whole minute since
// the last one loaded. It returns how many it loaded.
func (d *demoPipeline) load(ctx context.Context) (int, error) {
	res, err := d.e.Query(ctx, "SELECT max(ordered_at) FROM orders_raw")
	if err != nil {
		return 0, err
	}
	from := fixtures.End
	if last := tsql.AsTime(res.Rows[0][0]); !last.IsZero() && !last.Before(from) {
		from = last.Truncate(time.Minute).Add(time.Minute)
	}
	to := d.now().UTC().Truncate(time.Minute)
	if !from.Before(to) {
		return 0, nil
	}
	n, err := fixtures.Arrive(ctx, d.e, d.opt, from, to)
	if err != nil || n == 0 {
		return n, err
	}
	live, err := d.views.WriteTarget(ctx, "orders")
	if err != nil {
		return 0, err
	}
	dl := d.e.Dialect()
	lo, a := dl.Bind(tsql.Timestamp(from))
	hi, b := dl.Bind(tsql.Timestamp(to))
	cols := "order_id, order_date, ordered_at, customer_id, region, amount"
	if err := d.e.Exec(ctx, "INSERT INTO "+dl.QuoteRelation(views.Physical("orders", live))+" ("+cols+") SELECT "+cols+
		" FROM orders_raw WHERE ordered_at >= "+lo+" AND ordered_at < "+hi, a, b); err != nil {
		return 0, fmt.Errorf("demo pipeline: orders: %w", err)
	}
	window := tsql.FormatGrain(from, "day") + ".." + tsql.FormatGrain(to.Add(-time.Nanosecond), "day")
	if _, err := d.runner.RunWindows(ctx, "daily_revenue", window, "demo-pipeline"); err != nil {
		return 0, fmt.Errorf("demo pipeline: daily_revenue: %w", err)
	}
	return n, nil
}

// every runs load once a minute until ctx ends, saying on w what went wrong.
func (d *demoPipeline) every(ctx context.Context, w io.Writer) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := d.load(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(w, "demo: pipeline: %v\n", oneLine(err))
			}
		}
	}
}
