package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/server/page"
	"trueup/views"
)

// tableSwap answers POST /tables/{table}/swap. Without confirm=yes it shows what would change
// and the validation gate; with it, it swaps and redirects to the versions page.
func (s *Server) tableSwap(c echo.Context) error {
	return s.tablePublish(c, views.KindSwap)
}

// tableRollback answers POST /tables/{table}/rollback, with the same confirmation step.
func (s *Server) tableRollback(c echo.Context) error {
	return s.tablePublish(c, views.KindRollback)
}

// tablePublish shows the confirmation step or, confirmed, carries it out. The confirmation's form
// posts back what it showed — the swap a rollback takes back (undoes), the version each table of
// a swap moves from (from=table=vN) — so that a second click, or a confirmation made stale by
// someone else's swap, is refused (409, the confirmation shown again as it stands now) instead of
// taking back or moving something the operator never saw.
func (s *Server) tablePublish(c echo.Context, kind string) error {
	table := c.Param("table")
	target, svc, err := s.tableService(c, table)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	to := c.FormValue("to")
	if kind == views.KindSwap && to == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "Say which version to swap to (to=vN).")
	}
	confirmed := c.FormValue("confirm") == "yes"
	exp, err := formExpectation(c)
	if err != nil {
		return err
	}
	var plan views.Plan
	if kind == views.KindSwap {
		plan, err = svc.PlanSwap(ctx, table, to)
	} else {
		plan, err = svc.PlanRollback(ctx, table)
	}
	if err != nil && confirmed && exp.set() {
		// Nothing can be planned now (a second click after the only swap was taken back, say):
		// the request itself says whether that is because what was confirmed no longer holds (409).
		p, perr := publishNow(ctx, svc, kind, table, to, s.tableActor(c), c.FormValue("reason"), c.FormValue("override"), exp)
		if perr != nil {
			return tableError(perr)
		}
		return c.Redirect(http.StatusSeeOther, tableHref(table, target)+"&done="+strconv.FormatInt(p.ID, 10))
	}
	if err != nil {
		return tableError(err)
	}
	confirm := s.confirmView(ctx, target, plan, to)
	confirm.Reason, confirm.Override = c.FormValue("reason"), c.FormValue("override")
	confirm.From = fromFields(plan)
	if !confirmed {
		return render(c, http.StatusOK, page.TableConfirmPage(confirm))
	}
	p, err := publishNow(ctx, svc, kind, table, to, s.tableActor(c), confirm.Reason, confirm.Override, exp)
	switch {
	case errors.Is(err, views.ErrValidationFailed):
		// Ask again, saying why: the override needs a written reason.
		confirm.Error = strings.TrimPrefix(err.Error(), "views: ")
		return render(c, http.StatusUnprocessableEntity, page.TableConfirmPage(confirm))
	case errors.Is(err, views.ErrStale):
		// Show what it would do now, to be confirmed again (or not).
		confirm.Error = "This changed since you confirmed it: " + strings.TrimPrefix(err.Error(), "views: ")
		return render(c, http.StatusConflict, page.TableConfirmPage(confirm))
	case err != nil:
		return tableError(err)
	}
	return c.Redirect(http.StatusSeeOther, tableHref(table, target)+"&done="+strconv.FormatInt(p.ID, 10))
}

// expectation is what a confirmed swap or rollback carries of what the operator saw.
type expectation struct {
	undoes int64          // rollback: the swap it takes back
	from   map[string]int // swap: the version each table moves from
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
	from := map[string]string{}
	for _, f := range params["from"] {
		i := strings.LastIndexByte(f, '=')
		if i <= 0 {
			return x, echo.NewHTTPError(http.StatusBadRequest, "from="+f+": want table=vN.")
		}
		from[f[:i]] = f[i+1:]
	}
	if x.from, err = views.ParseFrom(from); err != nil {
		return x, tableError(err)
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

// publishNow carries out a swap or rollback with what the operator confirmed.
func publishNow(ctx context.Context, svc TableService, kind, table, to, actor, reason, override string, x expectation) (views.Publish, error) {
	if kind == views.KindSwap {
		return svc.Swap(ctx, views.SwapRequest{Table: table, To: to, Actor: actor, Reason: reason, Override: override, From: x.from})
	}
	return svc.Rollback(ctx, views.RollbackRequest{Table: table, Actor: actor, Reason: reason, Undoes: x.undoes})
}

// publishRequest is the body of POST /api/v1/tables/{table}/swap and …/rollback (JSON or form).
// Undoes (rollback) and From (swap, {"orders": "v1", …}; a form says from=orders=v1 per table)
// are what the caller confirmed; without them the request does what it asks as things stand.
type publishRequest struct {
	Target   string            `json:"target" form:"target"`
	To       string            `json:"to" form:"to"`
	Reason   string            `json:"reason" form:"reason"`
	Override string            `json:"override" form:"override"`
	DryRun   bool              `json:"dry_run" form:"dry_run"`
	Undoes   int64             `json:"undoes" form:"undoes"`
	From     map[string]string `json:"from" form:"-"`
}

// apiTableSwap answers POST /api/v1/tables/{table}/swap: the publish, or with dry_run the plan.
func (s *Server) apiTableSwap(c echo.Context) error { return s.apiTablePublish(c, views.KindSwap) }

// apiTableRollback answers POST /api/v1/tables/{table}/rollback.
func (s *Server) apiTableRollback(c echo.Context) error {
	return s.apiTablePublish(c, views.KindRollback)
}

func (s *Server) apiTablePublish(c echo.Context, kind string) error {
	var req publishRequest
	what := `a swap request {"to": "v2", "reason": …}`
	if kind == views.KindRollback {
		what = `a rollback request {"reason": …}`
	}
	if err := bindBody(c, &req, what); err != nil {
		return err
	}
	table := c.Param("table")
	_, svc, err := s.tableServiceNamed(c, table, req.Target)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if kind == views.KindSwap && req.To == "" {
		return echo.NewHTTPError(http.StatusBadRequest, `Say which version to swap to: {"to": "v2"}.`)
	}
	if req.DryRun {
		var plan views.Plan
		if kind == views.KindSwap {
			plan, err = svc.PlanSwap(ctx, table, req.To)
		} else {
			plan, err = svc.PlanRollback(ctx, table)
		}
		if err != nil {
			return tableError(err)
		}
		return c.JSON(http.StatusOK, plan)
	}
	if req.Undoes < 0 {
		return echo.NewHTTPError(http.StatusBadRequest, "undoes: want the number of the swap the rollback takes back.")
	}
	x := expectation{undoes: req.Undoes}
	if len(req.From) > 0 {
		if x.from, err = views.ParseFrom(req.From); err != nil {
			return tableError(err)
		}
	} else if !strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
		form, ferr := formExpectation(c)
		if ferr != nil {
			return ferr
		}
		x.from = form.from
	}
	p, err := publishNow(ctx, svc, kind, table, req.To, s.tableActor(c), req.Reason, req.Override, x)
	if err != nil {
		return tableError(err)
	}
	return c.JSON(http.StatusOK, p)
}
