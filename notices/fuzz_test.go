package notices_test

import (
	"testing"

	"trueup/notices"
)

// FuzzParseExposure: any exposure file parses without a panic, and one that is refused says
// why. Seeds: testdata/fuzz/FuzzParseExposure (the demo project's exposures and variants).
func FuzzParseExposure(f *testing.F) {
	f.Add("-- title: Board revenue\n-- audience: finance\n-- tables: daily_revenue\nSELECT 1 AS x\n")
	f.Fuzz(func(t *testing.T, text string) {
		x, problems := notices.ParseExposure("exposures/fuzz.sql", text)
		if x == nil && len(problems) == 0 {
			t.Fatal("no exposure and no problem")
		}
		for _, p := range problems {
			if p.Line < 1 || p.Msg == "" {
				t.Errorf("problem without a line or a message: %+v", p)
			}
		}
	})
}
