package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/backfill"
	"trueup/reconcile"
	"trueup/server/page"
)

// dryRunLabel heads the labels of the diffs a backfill's dry run keeps, one per table:
// "backfill fix_dedup_bug dry run: orders".
func dryRunLabel(name string) string { return "backfill " + name + " dry run: " }

// latestDryRun is the diffs of the newest dry run of a backfill kept, in the order they were
// saved: the newest diffs so labelled, up to the first table seen twice.
func (s *Server) latestDryRun(ctx context.Context, name string) ([]reconcile.Saved, error) {
	if s.opt.Diffs == nil {
		return nil, nil
	}
	list, err := s.opt.Diffs.List(ctx, 200)
	if err != nil {
		return nil, err
	}
	var out []reconcile.Saved
	seen := map[string]bool{}
	for _, x := range list {
		table, ok := strings.CutPrefix(x.Label, dryRunLabel(name))
		if !ok {
			if len(out) > 0 {
				break
			}
			continue
		}
		if seen[table] {
			break
		}
		seen[table] = true
		out = append(out, x)
	}
	slices.Reverse(out)
	return out, nil
}

// backfillDryRunShow answers GET /backfills/:name/dry-run: the backfill's latest dry run, as kept.
func (s *Server) backfillDryRunShow(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	kept, err := s.latestDryRun(ctx, name)
	if err != nil {
		return err
	}
	if len(kept) == 0 {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Backfill %s has no dry run kept: run one from its page.", name))
	}
	d := page.DryRun{Chrome: s.chrome("Dry run of "+name, "Backfills"), Name: name, Href: backfillHref(name), OK: true,
		At: formatTime(kept[0].CreatedAt), By: kept[0].Actor}
	for _, x := range kept {
		r, err := s.opt.Diffs.Get(ctx, x.ID)
		if err != nil {
			return err
		}
		d.OK = d.OK && r.ExpectationsMet
		d.Tables = append(d.Tables, previewTable(backfill.PreviewTable{
			Table: strings.TrimPrefix(x.Label, dryRunLabel(name)), Live: r.Old.Relation, Result: r}))
	}
	return render(c, http.StatusOK, page.DryRunPage(d))
}

// dryRunLink is the plan's line about the latest dry run kept, nil when there is none.
func (s *Server) dryRunLink(ctx context.Context, name string) (*page.DryRunLink, error) {
	kept, err := s.latestDryRun(ctx, name)
	if err != nil || len(kept) == 0 {
		return nil, err
	}
	l := &page.DryRunLink{Href: backfillHref(name) + "/dry-run", At: formatTime(kept[0].CreatedAt), OK: true}
	for _, x := range kept {
		l.OK = l.OK && x.ExpectationsMet
	}
	return l, nil
}
