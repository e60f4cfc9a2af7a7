package server

import (
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

func (s *Server) tablePublish(c echo.Context, kind string) error {
	table := c.Param("table")
	target, svc, err := s.tableService(c, table)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	to := c.FormValue("to")
	var plan views.Plan
	if kind == views.KindSwap {
		if to == "" {
			return echo.NewHTTPError(http.StatusBadRequest, "Say which version to swap to (to=vN).")
		}
		plan, err = svc.PlanSwap(ctx, table, to)
	} else {
		plan, err = svc.PlanRollback(ctx, table)
	}
	if err != nil {
		return tableError(err)
	}
	confirm := s.confirmView(ctx, target, plan, to)
	confirm.Reason, confirm.Override = c.FormValue("reason"), c.FormValue("override")
	if c.FormValue("confirm") != "yes" {
		return render(c, http.StatusOK, page.TableConfirmPage(confirm))
	}
	var p views.Publish
	if kind == views.KindSwap {
		p, err = svc.Swap(ctx, views.SwapRequest{Table: table, To: to, Actor: s.tableActor(c), Reason: confirm.Reason, Override: confirm.Override})
	} else {
		p, err = svc.Rollback(ctx, views.RollbackRequest{Table: table, Actor: s.tableActor(c), Reason: confirm.Reason})
	}
	if errors.Is(err, views.ErrValidationFailed) {
		// Ask again, saying why: the override needs a written reason.
		confirm.Error = strings.TrimPrefix(err.Error(), "views: ")
		return render(c, http.StatusUnprocessableEntity, page.TableConfirmPage(confirm))
	}
	if err != nil {
		return tableError(err)
	}
	return c.Redirect(http.StatusSeeOther, tableHref(table, target)+"&done="+strconv.FormatInt(p.ID, 10))
}

// publishRequest is the body of POST /api/v1/tables/{table}/swap and …/rollback (JSON or form).
type publishRequest struct {
	Target   string `json:"target" form:"target"`
	To       string `json:"to" form:"to"`
	Reason   string `json:"reason" form:"reason"`
	Override string `json:"override" form:"override"`
	DryRun   bool   `json:"dry_run" form:"dry_run"`
}

// apiTableSwap answers POST /api/v1/tables/{table}/swap: the publish, or with dry_run the plan.
func (s *Server) apiTableSwap(c echo.Context) error { return s.apiTablePublish(c, views.KindSwap) }

// apiTableRollback answers POST /api/v1/tables/{table}/rollback.
func (s *Server) apiTableRollback(c echo.Context) error {
	return s.apiTablePublish(c, views.KindRollback)
}

func (s *Server) apiTablePublish(c echo.Context, kind string) error {
	var req publishRequest
	if err := c.Bind(&req); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The request body is not a swap request: "+err.Error())
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
	var p views.Publish
	if kind == views.KindSwap {
		p, err = svc.Swap(ctx, views.SwapRequest{Table: table, To: req.To, Actor: s.tableActor(c), Reason: req.Reason, Override: req.Override})
	} else {
		p, err = svc.Rollback(ctx, views.RollbackRequest{Table: table, Actor: s.tableActor(c), Reason: req.Reason})
	}
	if err != nil {
		return tableError(err)
	}
	return c.JSON(http.StatusOK, p)
}
