package backfill_test

import (
	"testing"

	"trueup/backfill"
)

// FuzzParse: any backfill file parses without a panic, and a file that is refused says why.
// Seeds: testdata/fuzz/FuzzParse (the demo project's backfills and broken variants).
func FuzzParse(f *testing.F) {
	f.Add("-- table: orders\n-- partition: order_date\n-- grain: day\n-- reason: bug\n-- objective: x\n-- scope: 2026-07-10..2026-07-18\nSELECT * FROM orders_raw WHERE order_date >= $start AND order_date < $end\n")
	f.Fuzz(func(t *testing.T, text string) {
		b, problems := backfill.Parse("backfills/fuzz.sql", text)
		if b == nil && len(problems) == 0 {
			t.Fatal("no backfill and no problem")
		}
		for _, p := range problems {
			if p.Line < 1 || p.Msg == "" {
				t.Errorf("problem without a line or a message: %+v", p)
			}
		}
	})
}
