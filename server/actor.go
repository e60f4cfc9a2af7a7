package server

import "github.com/labstack/echo/v4"

// actor is who a request acts as, for the audit log. Until API tokens are configured the server
// listens on loopback only and every visitor is the local operator.
func (s *Server) actor(c echo.Context) string { return localActor }
