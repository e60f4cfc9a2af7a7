package sql

import "context"

type yieldKey struct{}

// Yielding marks ctx's reads as background work beside readers of the same tables (a swap's
// measuring scan while readers query the live view): the engine gives them less of the server
// than a reader's query gets, so the readers' latency holds while they run. On ClickHouse such a
// read runs with one thread; DuckDB's threads are per connection, and its readers already keep
// their pace beside such a scan.
func Yielding(ctx context.Context) context.Context { return context.WithValue(ctx, yieldKey{}, true) }

func yielding(ctx context.Context) bool {
	y, _ := ctx.Value(yieldKey{}).(bool)
	return y
}
