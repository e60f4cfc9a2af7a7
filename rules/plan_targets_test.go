package rules

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// Two targets on one server under different credentials share a Target (it is shown without
// them) but are two engines: their rules' queries are not fused onto one of them. Two targets
// opened on the same URL are fused, as before.
func TestPlanKeepsTargetsApartByCredentials(t *testing.T) {
	url := sqltest.ClickHouseURL(t)
	if url == "" {
		t.Skip("needs ClickHouse")
	}
	// the test server's user "default" has an empty password: the only one it accepts
	withUser := strings.Replace(url, "://", "://default:@", 1)
	plain, same, other := sqltest.Open(t, url), sqltest.Open(t, url), sqltest.Open(t, withUser)
	loadShop(t, plain)
	rulesFS := fstest.MapFS{
		"a.sql": {Data: []byte("-- kind: uniqueness\n-- table: orders\n-- columns: id\n-- target: a\n")},
		"b.sql": {Data: []byte("-- kind: uniqueness\n-- table: orders\n-- columns: id\n-- target: b\n")},
	}
	for _, tc := range []struct {
		name    string
		b       tsql.Engine
		queries int
	}{
		{"same_url_fuses", same, 1},
		{"other_credentials_do_not", other, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			targets := TargetMap{Default: "a", Engines: map[string]tsql.Engine{"a": plain, "b": tc.b}}
			set, err := Load(context.Background(), rulesFS, "rules", targets)
			if err != nil {
				t.Fatal(err)
			}
			plan := NewRunner(targets).Plan(set.Rules)
			if len(plan.Queries) != tc.queries {
				t.Errorf("%d queries, want %d: %+v", len(plan.Queries), tc.queries, plan.Queries)
			}
			for _, q := range plan.Queries {
				if q.Target != url {
					t.Errorf("query on %q, want %q", q.Target, url)
				}
			}
		})
	}
}
