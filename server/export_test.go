package server

// Routes lists "METHOD path" of every route s answers, for the tests that walk them all.
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.echo.Routes() {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}
