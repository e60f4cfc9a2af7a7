package sql

import (
	"context"
	"fmt"
	"time"
)

// ExistingPartitions lists the partitions of grain along column that relation holds now, by
// start, oldest first: one scan of the column. Rows whose column is NULL lie in no partition and
// are not listed.
func ExistingPartitions(ctx context.Context, e Engine, relation, column, grain string) ([]time.Time, error) {
	d := e.Dialect()
	p := d.TruncTime(d.Quote(column), grain)
	res, err := e.Query(ctx, "SELECT DISTINCT "+p+" AS p FROM "+d.QuoteRelation(relation)+" ORDER BY p")
	if err != nil {
		return nil, fmt.Errorf("partitions of %s: %w", relation, err)
	}
	var out []time.Time
	for _, r := range res.Rows {
		if r[0] == nil {
			continue
		}
		out = append(out, TruncGrain(AsTime(r[0]), grain))
	}
	return out, nil
}
