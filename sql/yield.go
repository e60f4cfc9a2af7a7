package sql

import "context"

type yieldKey struct{}

// Yielding marks ctx's reads as background work beside readers of the same tables (a swap's
// measuring scan while readers query the live view): when others' queries are running, the
// engine gives it less of the server than a reader's query gets, so the readers' latency holds;
// alone, it runs at full speed. On ClickHouse such a read runs with one thread while
// system.processes lists other queries; DuckDB's threads are per connection, and its readers
// already keep their pace beside such a scan.
func Yielding(ctx context.Context) context.Context { return context.WithValue(ctx, yieldKey{}, true) }

func yielding(ctx context.Context) bool {
	y, _ := ctx.Value(yieldKey{}).(bool)
	return y
}

// yielder is an engine that can tell whether others' queries are running now.
type yielder interface {
	othersRunning(ctx context.Context) bool
}

// yieldIfBusy is ctx for a yielding read on e: still yielding only while others are running.
func yieldIfBusy(ctx context.Context, e Engine) context.Context {
	if !yielding(ctx) {
		return ctx
	}
	if y, ok := e.(yielder); ok && y.othersRunning(ctx) {
		return ctx
	}
	return context.WithValue(ctx, yieldKey{}, false)
}
