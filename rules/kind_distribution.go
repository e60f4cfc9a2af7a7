package rules

import (
	"context"
	"fmt"
	"math"
	"strings"

	tsql "trueup/sql"
)

// distribution: the share of rows (or of a measure) each dimension value takes in a partition
// stays within threshold of its mean share over the trailing baseline partitions. The counts
// come from one group-by of partition and dimension, which also carries the relation's other
// partition aggregates when they add up.
func (c *check) distribution() {
	r := c.rule
	keys := append(c.partitionKey(), c.d.Quote(r.Dimension))
	main := c.scan(keys, aggExpr{r.Measure, rollupOf(r.Measure)})
	c.judge = func(_ context.Context, j *judgeEnv) verdict { return c.judgeDistribution(j, main) }
}

func (c *check) judgeDistribution(j *judgeEnv, main *need) verdict {
	r := c.rule
	parts := newPartitions()
	dims := newPartitions()
	amount := map[string]map[string]float64{}
	for _, row := range main.rows {
		if row[0] == nil {
			continue // rows whose partition is NULL belong to none: not a baseline, not judged
		}
		p, d := parts.add(row[0]), dims.add(row[1])
		if amount[p] == nil {
			amount[p] = map[string]float64{}
		}
		amount[p][d] += tsql.AsFloat(row[3])
	}
	order := parts.sorted()
	values := dims.sorted()
	share := make([]map[string]float64, len(order))
	small := make([]bool, len(order)) // below min_rows: too few to have a share, not judged
	for i, p := range order {
		var total float64
		for _, x := range amount[p] {
			total += x
		}
		small[i] = r.MinRows > 0 && total < float64(r.MinRows)
		share[i] = map[string]float64{}
		for d, x := range amount[p] {
			if total != 0 {
				share[i][d] = x / total
			}
		}
	}
	var v verdict
	var rows []Row
	judged := 0
	skipped := 0
	for i := r.Baseline; i < len(order); i++ {
		if small[i] {
			skipped++
			continue
		}
		judged++
		flagged := false
		for _, d := range values {
			var base float64
			for k := i - r.Baseline; k < i; k++ {
				base += share[k][d]
			}
			base /= float64(r.Baseline)
			now := share[i][d]
			if math.Abs(now-base) <= r.Threshold+1e-12 {
				continue
			}
			flagged = true
			v.violations++
			rows = append(rows, Row{{Name: "partition", Value: order[i]}, {Name: r.Dimension, Value: sampleValue(dims.vals[d])},
				{Name: "share_pct", Value: pct(now)}, {Name: "baseline_pct", Value: pct(base)}, {Name: "change_pct", Value: pct(now - base)}})
		}
		if flagged {
			v.failing = append(v.failing, order[i])
		}
	}
	v.failed = v.violations > 0
	v.sample = limitSample(rows, j.sample)
	if v.failed {
		v.message = fmt.Sprintf("%s of %d judged moved more than %g points from the mean share of the %d before",
			plural(int64(len(v.failing)), "partition", "partitions"), judged, r.Threshold*100, r.Baseline)
	} else if judged == 0 && skipped == 0 {
		v.message = fmt.Sprintf("fewer than %d partitions: nothing to judge yet", r.Baseline+1)
	}
	if skipped > 0 {
		v.message = strings.TrimSpace(v.message + fmt.Sprintf(" (%s below min_rows %d not judged)", plural(int64(skipped), "partition", "partitions"), r.MinRows))
	}
	return v
}

func pct(x float64) float64 { return math.Round(x*1e4) / 1e2 }
