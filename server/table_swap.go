package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/fault"
	"trueup/notices"
	"trueup/ops"
	"trueup/server/page"
	"trueup/views"
)

// tableSwap answers POST /tables/{table}/swap. Without confirm=yes it shows what would change
// and the validation gate; with it, it swaps and redirects to the versions page.
func (s *Server) tableSwap(c echo.Context, t ops.Tables) error {
	return s.tablePublish(c, t, views.KindSwap)
}

// tableRollback answers POST /tables/{table}/rollback, with the same confirmation step.
func (s *Server) tableRollback(c echo.Context, t ops.Tables) error {
	return s.tablePublish(c, t, views.KindRollback)
}

// tablePublish shows the confirmation step or, confirmed, carries it out. The confirmation's form
// posts back what it showed — the swap a rollback takes back (undoes), the version each table of
// a swap moves from (from=table=vN) — so that a second click, or a confirmation made stale by
// someone else's swap, is refused (409, the confirmation shown again as it stands now) instead of
// taking back or moving something the operator never saw.
func (s *Server) tablePublish(c echo.Context, t ops.Tables, kind string) error {
	ctx := c.Request().Context()
	req := ops.PublishRequest{Subject: s.tableWrite(c, requestTarget(c)), To: c.FormValue("to"),
		Reason: c.FormValue("reason"), Override: c.FormValue("override")}
	if kind == views.KindSwap && req.To == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "Say which version to swap to (to=vN).")
	}
	confirmed := c.FormValue("confirm") == "yes"
	exp, err := formExpectation(c)
	if err != nil {
		return err
	}
	req.Undoes, req.From = exp.undoes, exp.from
	if kind == views.KindRollback {
		// A rollback confirmed from a swap's button posts that swap's version back: it takes none.
		req.To, req.Override = "", ""
	}
	plan, err := ops.PlanPublish(ctx, t, kind, req)
	set := ""
	if err == nil && !confirmed && kind == views.KindSwap {
		// Swapping one table of a set back to what it read before would leave the others where
		// the set's swap put them: the confirmation offers the rollback of the set instead.
		rbReq := req
		rbReq.To, rbReq.Override = "", ""
		if rb, rerr := ops.PlanPublish(ctx, t, views.KindRollback, rbReq); rerr == nil && views.SplitsSet(plan, rb) {
			set = fmt.Sprintf("%s went live together with %s in swap #%d. Swapping %s alone to %s would leave %s on the versions that swap made live, so this rolls back the whole set.",
				req.Table, others(rb, req.Table), rb.Undoes, req.Table, req.To, pluralThem(len(rb.Changes)-1))
			plan, kind = rb, views.KindRollback
		}
	}
	if err != nil && confirmed && exp.set() {
		// Nothing can be planned now (a second click after the only swap was taken back, say):
		// the request itself says whether that is because what was confirmed no longer holds (409).
		p, perr := ops.PublishNow(ctx, t, kind, req)
		if perr != nil {
			return perr
		}
		return c.Redirect(http.StatusSeeOther, tableHref(p.Table, p.Target)+"&done="+strconv.FormatInt(p.ID, 10))
	}
	if err != nil {
		return err
	}
	confirm := s.confirmView(ctx, plan.Target, plan, req.To)
	confirm.Reason, confirm.Override, confirm.Set = req.Reason, req.Override, set
	confirm.From = fromFields(plan)
	if !confirmed {
		return render(c, http.StatusOK, page.TableConfirmPage(confirm))
	}
	p, err := ops.PublishNow(ctx, t, kind, req)
	switch {
	case errors.Is(err, fault.ErrFailed):
		// Ask again, saying why: the override needs a written reason.
		confirm.Error = fault.Message(err)
		return render(c, http.StatusUnprocessableEntity, page.TableConfirmPage(confirm))
	case errors.Is(err, fault.ErrRefused):
		// A rule of the tool said no (four eyes): the confirmation again, saying who may, with
		// what was typed kept for them or for later.
		confirm.Refused = fault.Message(err)
		return render(c, http.StatusForbidden, page.TableConfirmPage(confirm))
	case views.Stale(err):
		// Show what it would do now, to be confirmed again (or not).
		confirm.Error = "This changed since you confirmed it: " + fault.Message(err)
		return render(c, http.StatusConflict, page.TableConfirmPage(confirm))
	case err != nil:
		return err
	}
	return c.Redirect(http.StatusSeeOther, tableHref(req.Table, plan.Target)+"&done="+strconv.FormatInt(p.ID, 10))
}

// others names the tables of plan besides table: "daily_revenue, customer_ltv and region_summary".
func others(plan views.Plan, table string) string {
	var names []string
	for _, c := range plan.Changes {
		if c.Table != table {
			names = append(names, c.Table)
		}
	}
	return notices.JoinNames(names, "and")
}

func pluralThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// expectation is what a confirmed swap or rollback carries of what the operator saw.
type expectation struct {
	undoes int64             // rollback: the swap it takes back
	from   map[string]string // swap: the version each table moves from
}

func (x expectation) set() bool { return x.undoes != 0 || len(x.from) > 0 }

// formExpectation reads undoes=N and from=table=vN (one per table) from a form.
func formExpectation(c echo.Context) (expectation, error) {
	var x expectation
	if u := strings.TrimSpace(c.FormValue("undoes")); u != "" {
		n, err := strconv.ParseInt(strings.TrimPrefix(u, "#"), 10, 64)
		if err != nil || n <= 0 {
			return x, echo.NewHTTPError(http.StatusBadRequest, "undoes="+u+": want the number of the swap the rollback takes back.")
		}
		x.undoes = n
	}
	params, err := c.FormParams()
	if err != nil {
		return x, echo.NewHTTPError(http.StatusBadRequest, "The form cannot be read: "+err.Error())
	}
	for _, f := range params["from"] {
		i := strings.LastIndexByte(f, '=')
		if i <= 0 {
			return x, echo.NewHTTPError(http.StatusBadRequest, "from="+f+": want table=vN.")
		}
		if x.from == nil {
			x.from = map[string]string{}
		}
		x.from[f[:i]] = f[i+1:]
	}
	return x, nil
}

// fromFields is what the confirmation of plan posts back as from=…: each table and the version it
// reads now.
func fromFields(plan views.Plan) []string {
	if plan.Kind != views.KindSwap {
		return nil
	}
	out := make([]string, len(plan.Changes))
	for i, c := range plan.Changes {
		v := views.VersionName(c.From)
		if v == "" {
			v = "none"
		}
		out[i] = c.Table + "=" + v
	}
	return out
}

// apiTableSwap answers POST /api/v1/tables/{table}/swap: the publish, or with dry_run the plan.
func (s *Server) apiTableSwap(c echo.Context, t ops.Tables) error {
	return s.apiTablePublish(c, t, views.KindSwap)
}

// apiTableRollback answers POST /api/v1/tables/{table}/rollback.
func (s *Server) apiTableRollback(c echo.Context, t ops.Tables) error {
	return s.apiTablePublish(c, t, views.KindRollback)
}

func (s *Server) apiTablePublish(c echo.Context, t ops.Tables, kind string) error {
	var req ops.PublishRequest
	what := `a swap request {"to": "v2", "reason": …}`
	if kind == views.KindRollback {
		what = `a rollback request {"reason": …}`
	}
	if err := bindBody(c, &req, what); err != nil {
		return err
	}
	req.Subject = s.tableWrite(c, req.Target)
	if kind == views.KindSwap && req.To == "" {
		return echo.NewHTTPError(http.StatusBadRequest, `Say which version to swap to: {"to": "v2"}.`)
	}
	ctx := c.Request().Context()
	if req.DryRun {
		// The plan, even when the rollback would be refused as stale: the CLI prints it and then
		// exits as the rollback would (views.Plan.StaleUndoes), locally and through a server.
		plan, err := ops.PlanPublish(ctx, t, kind, req)
		return answer(c, plan, err)
	}
	if len(req.From) == 0 && !strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
		form, ferr := formExpectation(c)
		if ferr != nil {
			return ferr
		}
		req.From = form.from
	}
	p, err := ops.PublishNow(ctx, t, kind, req)
	return answer(c, p, err)
}
