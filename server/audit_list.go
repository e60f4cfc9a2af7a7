package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/ledger"
	"trueup/server/page"
)

// AuditLog is the ledger's audit log, as the audit page reads it and logins append to it
// (ledger.Ledger).
type AuditLog interface {
	Audit(ctx context.Context, e ledger.Entry) (int64, error)
	AuditLog(ctx context.Context, f ledger.AuditFilter) ([]ledger.Entry, error)
}

const auditPerPage = 50

// auditEntries reads one window of the log, filtered by ?actor=, ?action= and ?target=, and
// whether there is more after it.
func (s *Server) auditEntries(c echo.Context, w window) (ledger.AuditFilter, []ledger.Entry, bool, error) {
	f := ledger.AuditFilter{Actor: c.QueryParam("actor"), Action: c.QueryParam("action"), Target: c.QueryParam("target")}
	if s.opt.Audit == nil {
		return f, nil, false, echo.NewHTTPError(http.StatusNotFound, "The audit log is not set up on this server.")
	}
	f.Limit, f.Offset = w.Limit+1, w.Offset
	es, err := s.opt.Audit.AuditLog(c.Request().Context(), f)
	if err != nil {
		return f, nil, false, err
	}
	more := len(es) > w.Limit
	if more {
		es = es[:w.Limit]
	}
	return f, es, more, nil
}

// auditList answers GET /audit: the audit log, newest first, 50 to a page.
func (s *Server) auditList(c echo.Context) error {
	w, err := pageWindow(c, auditPerPage, auditPerPage)
	if err != nil {
		return err
	}
	f, es, more, err := s.auditEntries(c, w)
	if err != nil {
		return err
	}
	d := page.Audit{Chrome: s.chrome("Audit log", "Audit"), Actor: f.Actor, Action: f.Action, Target: f.Target,
		Pager: pager(c, w, more)}
	for _, e := range es {
		row := page.AuditRow{ID: e.ID, At: minuteTime(e.At), AtFull: shortTime(e.At), Actor: e.Actor, Action: e.Action,
			Target: strings.ReplaceAll(e.Target, ",", ", "), Outcome: e.Outcome, Detail: e.Detail}
		if len(e.Params) > 0 {
			b, _ := json.MarshalIndent(e.Params, "", "  ")
			row.Params, row.Summary = string(b), auditSummary(e.Params)
		}
		d.Rows = append(d.Rows, row)
	}
	return render(c, http.StatusOK, page.AuditPage(d))
}

// auditSummary is an entry's parameters as a line to read: "rows 368 · state live · version v1",
// keys in order, a long value cut short (the whole is in the details beside it).
func auditSummary(params map[string]any) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		var v string
		switch x := params[k].(type) {
		case string:
			v = x
		case nil:
			continue
		default:
			b, _ := json.Marshal(x)
			v = strings.NewReplacer(`"`, "", "{", "", "}", "", "[", "", "]", "").Replace(string(b))
		}
		if v == "" {
			continue
		}
		if r := []rune(v); len(r) > 24 {
			v = string(r[:20]) + "…"
		}
		parts = append(parts, strings.ReplaceAll(k, "_", " ")+" "+v)
	}
	return strings.Join(parts, " · ")
}

// auditJSON is one audit entry in the API.
type auditJSON struct {
	ID      int64          `json:"id"`
	At      string         `json:"at"`
	Actor   string         `json:"actor"`
	Action  string         `json:"action"`
	Target  string         `json:"target"`
	Params  map[string]any `json:"params"`
	Outcome string         `json:"outcome"`
	Detail  string         `json:"detail,omitempty"`
}

// apiAuditList answers GET /api/v1/audit?limit=&offset=&actor=&action=&target=.
func (s *Server) apiAuditList(c echo.Context) error {
	w, err := pageWindow(c, 100, ledger.MaxAuditLimit)
	if err != nil {
		return err
	}
	_, es, more, err := s.auditEntries(c, w)
	if err != nil {
		return err
	}
	out := []auditJSON{}
	for _, e := range es {
		out = append(out, auditJSON{ID: e.ID, At: e.At.UTC().Format("2006-01-02T15:04:05.000Z"), Actor: e.Actor,
			Action: e.Action, Target: e.Target, Params: e.Params, Outcome: e.Outcome, Detail: e.Detail})
	}
	nextLink(c, w, more)
	return c.JSON(http.StatusOK, out)
}
