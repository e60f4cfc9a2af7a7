package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"trueup/ops"
	"trueup/server"
	"trueup/sql/sqltest"
)

func TestDashboard(t *testing.T) {
	ts := serve(t, server.Options{
		Targets: []server.Target{{Name: "warehouse", Engine: warehouse(t)}},
		Version: "1.2.3-test",
		Notice:  "demo: no tokens configured, listening on loopback only",
	})
	doc := getPage(t, ts.URL+"/", http.StatusOK)

	t.Run("lists_the_logical_table_with_live_version_and_rows", func(t *testing.T) {
		rows := doc.Find(`[data-testid="table-row"]`)
		if rows.Length() != 1 {
			t.Fatalf("%d table rows, want 1 (orders only): %s", rows.Length(), text(rows))
		}
		row := doc.Find(`[data-testid="table-row"][data-table="orders"]`)
		for _, c := range []struct{ testid, want string }{
			{"table-name", "orders"},
			{"table-target", "warehouse"},
			{"table-live", "v1"},
			{"table-versions", "v1"},
			{"table-rows", "1,234"},
		} {
			if got := text(row.Find(`[data-testid="` + c.testid + `"]`)); got != c.want {
				t.Errorf("%s = %q, want %q", c.testid, got, c.want)
			}
		}
		if href, _ := row.Find(`a[data-testid="table-name"]`).Attr("href"); href != "/tables/orders?target=warehouse" {
			t.Errorf("table link = %q", href)
		}
	})

	t.Run("shows_the_target_reachable", func(t *testing.T) {
		row := doc.Find(`[data-testid="target-row"][data-target="warehouse"]`)
		if got := text(row.Find(`[data-testid="target-kind"]`)); got != "duckdb" {
			t.Errorf("kind = %q, want duckdb", got)
		}
		if got := text(row.Find(`[data-testid="target-version"]`)); got == "" {
			t.Error("server version is empty")
		}
		if got := text(row.Find(`[data-testid="target-status"]`)); got != "reachable" {
			t.Errorf("status = %q, want reachable", got)
		}
	})

	t.Run("layout_has_brand_nav_notice_and_version", func(t *testing.T) {
		if got := text(doc.Find(`[data-testid="brand"]`)); got != "trueup" {
			t.Errorf("brand = %q", got)
		}
		var nav []string
		doc.Find(`[data-testid="nav"] a`).Each(func(_ int, a *goquery.Selection) {
			href, _ := a.Attr("href")
			nav = append(nav, a.Text()+" "+href)
		})
		want := []string{"Dashboard /", "Rules /rules", "Backfills /backfills", "Diffs /diffs", "Tables /tables", "Notices /notices", "Query /query", "Audit /audit"}
		if len(nav) != len(want) {
			t.Fatalf("nav = %q, want %q", nav, want)
		}
		for i := range want {
			if nav[i] != want[i] {
				t.Errorf("nav[%d] = %q, want %q", i, nav[i], want[i])
			}
		}
		if cur := text(doc.Find(`[data-testid="nav"] a[aria-current="page"]`)); cur != "Dashboard" {
			t.Errorf("current nav item = %q, want Dashboard", cur)
		}
		if got := text(doc.Find(`[data-testid="notice-banner"]`)); got != "demo: no tokens configured, listening on loopback only" {
			t.Errorf("notice banner = %q", got)
		}
		if got := text(doc.Find(`[data-testid="version"]`)); got != "trueup 1.2.3-test" {
			t.Errorf("footer = %q", got)
		}
	})

	t.Run("links_assets_and_has_no_inline_script_or_style", func(t *testing.T) {
		assets := map[string]bool{}
		doc.Find(`link[rel="stylesheet"]`).Each(func(_ int, l *goquery.Selection) {
			href, _ := l.Attr("href")
			assets[href] = true
		})
		doc.Find("script").Each(func(_ int, s *goquery.Selection) {
			src, ok := s.Attr("src")
			if !ok || s.Text() != "" {
				t.Errorf("inline script: %q", s.Text())
			}
			assets[src] = true
		})
		for _, name := range []string{"pico.min.css", "app.css", "htmx.min.js"} {
			found := false
			for href := range assets {
				if strings.HasPrefix(href, "/static/"+name+"?v=") {
					found = true
					resp, _ := get(t, ts.URL+href)
					if resp.StatusCode != http.StatusOK {
						t.Errorf("GET %s: %d", href, resp.StatusCode)
					}
				}
			}
			if !found {
				t.Errorf("no link to /static/%s?v=… in %v", name, assets)
			}
		}
		if n := doc.Find("style, [style]").Length(); n > 0 {
			t.Errorf("%d inline styles", n)
		}
	})
}

func TestDashboardWithoutNotice(t *testing.T) {
	ts := serve(t, server.Options{Targets: []server.Target{{Name: "warehouse", Engine: sqltest.DuckDB(t)}}})
	doc := getPage(t, ts.URL+"/", http.StatusOK)
	if n := doc.Find(`[data-testid="notice-banner"]`).Length(); n != 0 {
		t.Errorf("%d notice banners, want none", n)
	}
	if n := doc.Find(`[data-testid="tables-empty"]`).Length(); n != 1 {
		t.Errorf("an empty target should say there are no logical tables yet")
	}
}

func TestDashboardUnreachableTarget(t *testing.T) {
	broken := sqltest.DuckDB(t)
	broken.Close()
	ts := serve(t, server.Options{Targets: []server.Target{
		{Name: "broken", Engine: broken},
		{Name: "warehouse", Engine: warehouse(t)},
	}})
	doc := getPage(t, ts.URL+"/", http.StatusOK)

	status := text(doc.Find(`[data-testid="target-row"][data-target="broken"] [data-testid="target-status"]`))
	if !strings.HasPrefix(status, "unreachable ") || !strings.Contains(status, "closed") {
		t.Errorf("broken target status = %q, want unreachable and the reason", status)
	}
	if got := text(doc.Find(`[data-testid="target-row"][data-target="warehouse"] [data-testid="target-status"]`)); got != "reachable" {
		t.Errorf("warehouse status = %q, want reachable", got)
	}
	if n := doc.Find(`[data-testid="table-row"][data-table="orders"][data-target="warehouse"]`).Length(); n != 1 {
		t.Errorf("the reachable target's tables should still be listed")
	}
}

// TestDashboardRecentPublishes: the dashboard lists what went live lately, newest first, a
// publish of several tables once, with a link to the table it was asked for.
func TestDashboardRecentPublishes(t *testing.T) {
	e, s := versionedWarehouse(t)
	ts := serve(t, server.Options{
		Targets: []server.Target{{Name: "w", Engine: e}},
		Tables:  ops.NewTables(ops.TableServices{"w": s}, "w"),
	})
	if got := text(getPage(t, ts.URL+"/", http.StatusOK).Find(`[data-testid="recent-empty"]`)); got == "" {
		t.Error("before any swap the dashboard does not say none yet")
	}
	if resp, body := send(t, ts.URL+"/api/v1/tables/orders/swap", `{"to": "v2", "reason": "dedup fix"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("swap: %d %s", resp.StatusCode, body)
	}
	if resp, body := send(t, ts.URL+"/api/v1/tables/orders/rollback", `{"reason": "finance asked"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("rollback: %d %s", resp.StatusCode, body)
	}
	var got []string
	getPage(t, ts.URL+"/", http.StatusOK).Find(`[data-testid="recent-publish"]`).Each(func(_ int, r *goquery.Selection) {
		href, _ := r.Find("a").Attr("href")
		got = append(got, strings.Join(strings.Fields(r.Find("td").Eq(1).Text()+" "+r.Find("td").Eq(3).Text()), " ")+" "+href)
	})
	want := []string{
		"rollback #2 orders v2 → v1, daily_revenue v2 → v1 /tables/orders?target=w",
		"swap #1 orders v1 → v2, daily_revenue v1 → v2 /tables/orders?target=w",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("recent publishes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
