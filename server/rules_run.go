package server

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"trueup/ops"
)

// ruleRun answers POST /rules/{rule}/run (the run-now button): it runs the rule, records the
// run and sends the browser back to the rule's page to see the result.
func (s *Server) ruleRun(c echo.Context) error {
	name := c.Param("rule")
	run, err := s.rules.RunNow(c.Request().Context(), ops.RuleRunRequest{Rule: name, Actor: s.actor(c)})
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, ruleHref(name)+"?run="+strconv.FormatInt(run.ID, 10))
}

// apiRuleRun answers POST /api/v1/rules/{rule}/run with the run, as `trueup check --format json`
// prints it. 409 when the rule is already running.
func (s *Server) apiRuleRun(c echo.Context) error {
	run, err := s.rules.RunNow(c.Request().Context(), ops.RuleRunRequest{Rule: c.Param("rule"), Actor: s.actor(c)})
	return answer(c, run, err)
}
