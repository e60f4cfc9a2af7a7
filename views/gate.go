package views

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"trueup/fault"
	"trueup/ledger"
)

// The gate lets a version through without an override when its validation passed, or when it is
// `previous` and trueup saw it live: a done swap or rollback moved a view to it or away from it
// (a version adopted live when trueup took the table over, then swapped away, counts). A
// `previous` version that no publish ever touched was adopted — a table built outside trueup that
// the ledger first saw beside the live one — and nothing vouches for it: it needs an override.

// liveHistory is, by table, the versions a done publish moved a view to or from.
type liveHistory map[string]map[int]bool

// madeLive says which `previous` versions of the group trueup saw live. A version whose record
// says so (SeenLive) needs no read; for the others — the tables whose version in the group is
// `previous` in vss without it — the swaps' history is read, in one statement for all of them
// (none when there are none): every statement counts while readers load the machine, and the
// history grows with every swap.
func (s *Service) madeLive(ctx context.Context, group []Version, vss map[string][]Version) (liveHistory, error) {
	out := liveHistory{}
	var tables []string
	for _, g := range group {
		i := slices.IndexFunc(vss[g.Table], func(v Version) bool { return v.N == g.N })
		switch {
		case i < 0 || vss[g.Table][i].State != StatePrevious:
		case vss[g.Table][i].SeenLive:
			out[g.Table] = map[int]bool{g.N: true}
		default:
			tables = append(tables, g.Table)
		}
	}
	if len(tables) == 0 {
		return out, nil
	}
	read, err := s.touched(ctx, tables)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, read)
	return out, nil
}

// touched lists, by table, the versions of tables a done swap or rollback moved its view to or
// from. Only publishes whose changes mention one of the tables are read (its name as Change
// marshals it).
func (s *Service) touched(ctx context.Context, tables []string) (liveHistory, error) {
	match := make([]string, len(tables))
	args := []any{s.target, PublishDone}
	for i, t := range tables {
		name, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		match[i] = "contains(CAST(changes AS VARCHAR), ?)"
		args = append(args, `"table":`+string(name))
	}
	what := strings.Join(tables, ", ")
	st, err := s.ledger.Prepared(ctx, `SELECT CAST(changes AS VARCHAR) FROM swaps
		WHERE target = ? AND state = ? AND (`+strings.Join(match, " OR ")+`)`)
	if err != nil {
		return nil, fmt.Errorf("views: swaps of %s: %w", what, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("views: swaps of %s: %w", what, err)
	}
	all, err := ledger.Collect(rows, func(r ledger.Scanner) ([]Change, error) {
		var text string
		if err := r.Scan(&text); err != nil {
			return nil, err
		}
		var cs []Change
		return cs, json.Unmarshal([]byte(text), &cs)
	})
	if err != nil {
		return nil, fmt.Errorf("views: swaps of %s: %w", what, err)
	}
	out := liveHistory{}
	for _, t := range tables {
		out[t] = map[int]bool{}
	}
	for _, cs := range all {
		for _, c := range cs {
			if seen, ok := out[c.Table]; ok {
				seen[c.From], seen[c.To] = true, true
			}
		}
	}
	return out, nil
}

// gateCheck is the gate's verdict on version v, to be made live; seen are the versions of its
// table trueup saw live.
func gateCheck(v Version, seen map[int]bool) GateCheck {
	check := GateCheck{Table: v.Table, Version: v.N, State: v.State}
	switch v.State {
	case StateValidated:
		check.Passed, check.Why = true, "validation passed"
	case StatePrevious:
		switch {
		case v.OverrideBy != "":
			// It was live only by an override: it needs one again.
			check.Why = fmt.Sprintf("validation failed; it was live before only by %s's override", v.OverrideBy)
		case !seen[v.N]:
			check.Why = "built outside trueup and never live through a swap: nothing validated it"
		default:
			check.Passed, check.Why = true, "was live before"
		}
	case StateValidationFailed:
		check.Why = "validation failed"
		if detail := validationSummary(v.Validation); detail != "" {
			check.Why += ": " + detail
		}
	default:
		check.Why = "state " + v.State
	}
	return check
}

// validationSummary renders a version's validation record for a gate message. It reads the
// backfill runner's record (failing rules, tables whose diff missed its expectations, errors)
// and otherwise a "summary" or "message" field, else the record itself, shortened.
func validationSummary(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var rec struct {
		Rules []struct {
			Rule, Table, Severity, Status string
			Violations                    int64
		}
		Tables []struct {
			Table           string
			ExpectationsMet bool `json:"expectations_met"`
			Expect          string
		}
		Errors           []string
		Summary, Message string
	}
	if json.Unmarshal(raw, &rec) != nil {
		return shorten(string(raw))
	}
	var parts []string
	for _, r := range rec.Rules {
		if r.Status != "pass" && r.Severity != "warn" && r.Severity != "warning" {
			parts = append(parts, fmt.Sprintf("rule %s on %s: %s (%d violations)", r.Rule, r.Table, r.Status, r.Violations))
		}
	}
	for _, t := range rec.Tables {
		if !t.ExpectationsMet {
			parts = append(parts, fmt.Sprintf("%s: diff does not meet %q", t.Table, t.Expect))
		}
	}
	parts = append(parts, rec.Errors...)
	switch {
	case len(parts) > 0:
		return shorten(strings.Join(parts, ", "))
	case rec.Summary != "":
		return rec.Summary
	case rec.Message != "":
		return rec.Message
	}
	return shorten(string(raw))
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// GateRefusal is the refusal (Failed) of a swap planned as p when the gate did not pass a
// version and no approver's override is given; nil when the gate lets it through. A dry run
// answers by it as the swap would.
func (p Plan) GateRefusal(override string) error {
	if !p.NeedsOverride || strings.TrimSpace(override) != "" {
		return nil
	}
	var failed []string
	to := 0
	for _, g := range p.Gate {
		if g.Table == p.Table {
			to = g.Version
		}
		if !g.Passed {
			failed = append(failed, fmt.Sprintf("%s v%d: %s", g.Table, g.Version, g.Why))
		}
	}
	what := p.Table
	if to != 0 {
		what += fmt.Sprintf(" to v%d", to) // else the named table is live already, its run's others not
	}
	return &refusal{fmt.Sprintf("swap %s refused: %s; an approver may override with a written reason",
		what, strings.Join(failed, "; ")), fault.ErrFailed}
}
