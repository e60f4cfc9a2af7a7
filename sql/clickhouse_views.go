package sql

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ViewTidier is implemented by engines whose repoint works through helper views that a repoint
// stopping part-way can leave behind: ClickHouse before 19.5 creates <view>__next_<suffix>, then
// renames <view> to <view>__old_<suffix> and the next one to <view> in one RENAME — which the old
// server carries out one rename after another, so a failure or a crash between them leaves no
// <view> at all — then drops the old one. Start-up recovery tidies them before it reads the views.
type ViewTidier interface {
	// LeftViews lists the views that have helper views left behind, whether or not the view
	// itself exists.
	LeftViews(ctx context.Context) ([]string, error)
	// TidyViews puts back each of views that is missing while a helper <view>__old_<suffix> of
	// it exists (it reads what the view read before the RENAME stopped), and drops the helper
	// views left. It says what it did, one line per change.
	TidyViews(ctx context.Context, views []string) ([]string, error)
}

// helperRe is the name of a repoint's helper view: <view>__next_<suffix> or <view>__old_<suffix>,
// the suffix randomSuffix's 12 hex digits.
var helperRe = regexp.MustCompile(`^(.+)__(next|old)_([0-9a-f]{12})$`)

// helperView is a helper view found in the catalog.
type helperView struct {
	name, view, kind, suffix string
}

// helpers reads the helper views of the current database, of views when given, and whether each
// of views exists. Only views that read a version of their view (<view>__v<N>) count: a view of
// someone else's that happens to match the name is left alone.
func (e *chEngine) helpers(ctx context.Context, views []string) ([]helperView, map[string]bool, error) {
	q := `SELECT name, engine = 'View', if(engine = 'View', create_table_query, '') FROM system.tables
		WHERE database = currentDatabase() AND (match(name, '__(next|old)_[0-9a-f]{12}$')`
	var args []any
	if len(views) > 0 {
		f, fargs := catalogFilter("name", "startsWith", views, nil)
		q += " OR " + f
		args = fargs
	}
	res, err := e.Query(ctx, q+")", args...)
	if err != nil {
		return nil, nil, fmt.Errorf("helper views: %w", err)
	}
	exists := map[string]bool{}
	var out []helperView
	for _, r := range res.Rows {
		name := AsText(r[0])
		exists[name] = true
		m := helperRe.FindStringSubmatch(name)
		if m == nil || AsInt64(r[1]) == 0 {
			continue
		}
		src, err := viewSource(AsText(r[2]))
		if err != nil || !isVersionOf(src, m[1]) {
			continue
		}
		if len(views) == 0 || slices.Contains(views, m[1]) {
			out = append(out, helperView{name: name, view: m[1], kind: m[2], suffix: m[3]})
		}
	}
	slices.SortFunc(out, func(a, b helperView) int { return strings.Compare(a.name, b.name) })
	return out, exists, nil
}

// isVersionOf reports whether table is <view>__v<N>.
func isVersionOf(table, view string) bool {
	n, ok := strings.CutPrefix(table, view+"__v")
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (e *chEngine) LeftViews(ctx context.Context) ([]string, error) {
	hs, _, err := e.helpers(ctx, nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range hs {
		if !slices.Contains(out, h.view) {
			out = append(out, h.view)
		}
	}
	return out, nil
}

func (e *chEngine) TidyViews(ctx context.Context, views []string) ([]string, error) {
	return e.tidy(ctx, views, "")
}

// tidy is TidyViews, for the helpers of one repoint only when suffix is given.
func (e *chEngine) tidy(ctx context.Context, views []string, suffix string) ([]string, error) {
	if len(views) == 0 {
		return nil, nil
	}
	hs, exists, err := e.helpers(ctx, views)
	if err != nil {
		return nil, err
	}
	var did []string
	d := e.dialect
	for _, h := range hs {
		if suffix != "" && h.suffix != suffix {
			continue
		}
		if h.kind == "old" && !exists[h.view] {
			// the RENAME stopped after moving the view away: put it back
			if err := e.Exec(ctx, "RENAME TABLE "+d.QuoteRelation(h.name)+" TO "+d.QuoteRelation(h.view)); err != nil {
				return did, fmt.Errorf("put back view %s from %s: %w", h.view, h.name, err)
			}
			exists[h.view] = true
			did = append(did, fmt.Sprintf("view %s was missing (a repoint stopped part-way): %s renamed back to it", h.view, h.name))
			continue
		}
		if err := e.Exec(ctx, d.Drop(h.name, true)); err != nil {
			return did, fmt.Errorf("drop helper view %s: %w", h.name, err)
		}
		did = append(did, fmt.Sprintf("helper view %s left by a repoint dropped", h.name))
	}
	return did, nil
}

// tidyAfterFailure tidies the helpers of a repoint that failed with cause, on a context of its
// own: the failure may be the caller's context ending.
func (e *chEngine) tidyAfterFailure(ctx context.Context, points []ViewPoint, suffix string, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	views := make([]string, len(points))
	for i, p := range points {
		views[i] = p.View
	}
	if _, err := e.tidy(ctx, views, suffix); err != nil {
		return fmt.Errorf("repoint views: %w; tidying its helper views failed too (%v): start-up recovery tidies them", cause, err)
	}
	return fmt.Errorf("repoint views: %w", cause)
}
