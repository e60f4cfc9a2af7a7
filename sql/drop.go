package sql

import "context"

// DropView drops view if it exists, wherever the engine keeps views: on one server, or on every
// node of a cluster target (each node has a view of its own; every node must answer).
func DropView(ctx context.Context, e Engine, view string) error {
	if c, ok := e.(*chCluster); ok {
		nodes, err := c.ready(ctx, "drop view "+view)
		if err != nil {
			return err
		}
		return onEvery(ctx, nodes, []string{c.dialect.Drop(view, true)})
	}
	return e.Exec(ctx, e.Dialect().Drop(view, true))
}
