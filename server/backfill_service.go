package server

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"trueup/backfill"
	"trueup/notices"
	"trueup/ops"
	"trueup/server/page"
)

func backfillHref(name string) string { return "/backfills/" + url.PathEscape(name) }

func (s *Server) backfills() (ops.Backfills, error) {
	if s.opt.Backfills == nil {
		return nil, echo.NewHTTPError(http.StatusNotFound, "no backfills are loaded")
	}
	return s.opt.Backfills, nil
}

// progressView turns a run's status into the progress fragment's view model.
func progressView(name string, st *backfill.Status) *page.BackfillProgress {
	base := backfillHref(name)
	p := &page.BackfillProgress{
		Href: base + "/progress", Base: base, Name: name, RunID: st.RunID, State: st.State,
		Done: st.PartitionsDone, Total: st.PartitionsTotal, Failed: st.PartitionsFailed, Percent: st.Percent(),
		Rows: st.RowsWritten, Error: st.Error,
		Polling: st.State == backfill.RunRunning || st.State == backfill.RunValidating,
		// an interrupted run (its process is gone) is resumed or cancelled before a new run starts
		CanCancel:     (st.State == backfill.RunRunning || st.State == backfill.RunInterrupted) && st.CancelAskedBy == "",
		CancelAskedBy: st.CancelAskedBy,
		CanResume: st.State == backfill.RunCancelled || st.State == backfill.RunFailed || st.State == backfill.RunSampled ||
			st.State == backfill.RunInterrupted,
	}
	if st.ETASeconds != nil {
		p.ETA = (time.Duration(*st.ETASeconds) * time.Second).String()
	}
	idx := map[string]int{}
	for _, t := range st.Tables {
		if p.Versions != "" {
			p.Versions += ", "
		}
		p.Versions += t.Table + "__" + t.Version
		idx[t.Table] = len(p.Tables)
		p.Tables = append(p.Tables, page.ProgressTable{Table: t.Table, Version: t.Version, Done: t.Done, Total: t.Total})
	}
	for _, c := range st.Partitions {
		t := &p.Tables[idx[c.Table]]
		t.Cells = append(t.Cells, page.Cell{Partition: c.Partition, State: c.State, Rows: c.Rows, Error: c.Error})
	}
	p.Doing = runDoing(st.State, p.Versions)
	if st.Run != nil && (st.State == backfill.RunValidated || st.State == backfill.RunValidationFailed) {
		p.PublishHref = "/tables/" + url.PathEscape(st.Table) + "?target=" + url.QueryEscape(st.Run.Target)
	}
	if st.Run != nil && len(st.Run.Validation) > 0 {
		var v backfill.Validation
		if err := jsonUnmarshal(st.Run.Validation, &v); err == nil {
			p.Validation = validationView(&v)
		}
	}
	return p
}

// runDoing says what a run is doing, or did, to the versions it builds, in the words of its
// state: only a running run is still building.
func runDoing(state, versions string) string {
	switch state {
	case backfill.RunRunning:
		return "building " + versions
	case backfill.RunValidating:
		return "built " + versions + ", checking them"
	case backfill.RunValidated, backfill.RunValidationFailed:
		return "built " + versions
	case backfill.RunSampled:
		return "built a sample of " + versions
	case backfill.RunCancelled:
		return "stopped building " + versions
	case backfill.RunFailed, backfill.RunInterrupted:
		return "stopped while building " + versions
	default:
		return versions
	}
}

func validationView(v *backfill.Validation) *page.ValidationView {
	out := &page.ValidationView{Passed: v.Passed, Failures: v.Failures(), Errors: v.Errors}
	for _, r := range v.Rules {
		out.Rules = append(out.Rules, page.ValidationRule{Rule: r.Rule, Table: r.Table, Status: r.Status, Severity: r.Severity, Violations: r.Violations})
	}
	for _, t := range v.Tables {
		d := page.DiffTable{Table: t.Table, Live: t.Live, New: t.New, ExpectationsMet: t.ExpectationsMet, Expect: t.Expect}
		if t.DiffID > 0 {
			d.Href = fmt.Sprintf("/diffs/%d", t.DiffID)
		}
		measure := ""
		for _, c := range t.Changed {
			measure = cmp.Or(measure, c.Measure)
		}
		if measure != "" {
			d.Measures = []string{measure}
		}
		for _, c := range t.Changed {
			row := page.ChangedRow{Partition: c.Partition, OldCount: c.OldCount, NewCount: c.NewCount,
				Delta: c.NewCount - c.OldCount, Pct: pct(c.PctChange), Verdict: c.Verdict}
			if measure != "" {
				row.Measures = []string{measureChange(float64(c.OldTotal), float64(c.NewTotal))}
			}
			d.Changed = append(d.Changed, row)
		}
		chartAndHeadline(&d, summaryPartitions(t))
		out.Tables = append(out.Tables, d)
	}
	return out
}

// pct is a change in percent as every page writes one (notices.Pct: +5.3%); "new" where there
// was nothing before to compare with, as the notices say.
func pct(p *float64) string {
	if p == nil {
		return "new"
	}
	return notices.Pct(*p)
}
