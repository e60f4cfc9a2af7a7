package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"trueup/fault"
	"trueup/notices"
	tsql "trueup/sql"
	"trueup/views"
)

// Queries is time travel for people: read logical tables as they were.
type Queries interface {
	// Query runs one read-only SELECT (or a named exposure) with the logical tables it reads at
	// the versions asked for — named versions, or the ones live at a time — and, with
	// CompareToLive, again on the live tables, compared number by number.
	Query(ctx context.Context, req QueryRequest) (QueryResult, error)
}

// QueryRequest is the body of POST /api/v1/query. Give SQL or Exposure. Versions names
// versions of logical tables ({"orders": "v1"}); AsOf (a time: 2026-07-20T09:00:00Z,
// "2026-07-20 09:00", 2026-07-20; UTC unless it says otherwise) reads every other logical table
// the query names at the version live then. Limit bounds the rows (0: DefaultQueryLimit).
type QueryRequest struct {
	Target        string            `json:"target" form:"target"`
	SQL           string            `json:"sql" form:"sql"`
	Exposure      string            `json:"exposure" form:"exposure"`
	Versions      map[string]string `json:"versions" form:"-"`
	AsOf          string            `json:"as_of" form:"as_of"`
	CompareToLive bool              `json:"compare_to_live" form:"compare_to_live"`
	Limit         int               `json:"limit" form:"limit"`
}

// Row bounds of a query's answer.
const (
	DefaultQueryLimit = 1000
	MaxQueryLimit     = 10000
)

// QueryResult is a query's answer with the versions each logical table was read at.
type QueryResult struct {
	Target   string    `json:"target"`
	Exposure string    `json:"exposure,omitempty"`
	Title    string    `json:"title,omitempty"` // the exposure's
	SQL      string    `json:"sql"`
	AsOf     time.Time `json:"as_of,omitzero"`
	// Read is each logical table the query names and the version it was read at, by name.
	Read   []TableRead `json:"read"`
	Answer Answer      `json:"answer"`
	// Live is the same query on the live tables (CompareToLive), compared with Answer.
	Live *LiveAnswer `json:"live,omitempty"`
}

// TableRead is the version a logical table was read at.
type TableRead struct {
	Table   string `json:"table"`
	Version string `json:"version"`
	// Live: the version is the live one now.
	Live bool `json:"live"`
	// Since, Publish and Kind say which swap, rollback or adopt made it live (an as-of read);
	// Since alone: it was live as trueup first knew the table, from then.
	Since   time.Time `json:"since,omitzero"`
	Publish int64     `json:"publish,omitempty"`
	Kind    string    `json:"kind,omitempty"`
}

// Answer is the rows of a query. Each cell is its JSON value (numbers as numbers, times and
// text as strings, NULL as null), so an answer reads the same through a server.
type Answer struct {
	Columns   []string            `json:"columns"`
	Rows      [][]json.RawMessage `json:"rows"`
	Truncated bool                `json:"truncated"` // more rows than the limit: the first Limit are here
}

// LiveAnswer is the query on the live tables and how its numbers differ: the comparison's
// before side is the answer as asked, its after side the live one.
type LiveAnswer struct {
	Read       []TableRead        `json:"read"`
	Answer     Answer             `json:"answer"`
	Comparison notices.Comparison `json:"comparison"`
}

// NewQueries is Queries over the views services of a project's targets; exposures are the
// project's exposures/ files, runnable by name. A request that names no target goes to the
// default one, else to the only one.
func NewQueries(services TableServices, defaultTarget string, exposures []*notices.Exposure) Queries {
	return &queries{services: services, def: defaultTarget, exposures: exposures}
}

type queries struct {
	services  TableServices
	def       string
	exposures []*notices.Exposure
}

func (q *queries) Query(ctx context.Context, req QueryRequest) (QueryResult, error) {
	text, labels, res, err := q.source(req)
	if err != nil {
		return res, err
	}
	limit := cmp.Or(req.Limit, DefaultQueryLimit)
	if limit < 0 || limit > MaxQueryLimit {
		return res, fault.New(fault.Invalid, "limit %d: want 1 to %d rows", req.Limit, MaxQueryLimit)
	}
	if res.AsOf, err = ParseAsOf(req.AsOf); err != nil {
		return res, err
	}
	s, err := q.service(cmp.Or(req.Target, res.Target))
	if err != nil {
		return res, err
	}
	res.Target = s.Target()
	sqlText, err := tsql.ReadOnlySelect(text)
	if err != nil {
		return res, fault.New(fault.Invalid, "query: %v", err)
	}
	res.SQL = sqlText
	logical, err := logicalTables(ctx, s, sqlText)
	if err != nil {
		return res, err
	}
	at, err := versionsAt(ctx, s, logical, req.Versions, res.AsOf)
	if err != nil {
		return res, err
	}
	for _, t := range logical {
		res.Read = append(res.Read, at[t.name])
	}
	// every logical table is pointed at its version, the live one too: the answer is of the
	// versions printed above it even when a swap lands while it runs
	pick := map[string]string{}
	for t, r := range at {
		pick[t] = r.Version
	}
	asked, err := s.AsOf(ctx, sqlText, pick)
	if err != nil {
		return res, err
	}
	before, err := run(ctx, s.Engine(), asked, limit)
	if err != nil {
		return res, err
	}
	if res.Answer, err = answerOf(before, limit); err != nil {
		return res, err
	}
	if !req.CompareToLive {
		return res, nil
	}
	after, err := run(ctx, s.Engine(), sqlText, limit)
	if err != nil {
		return res, err
	}
	live := &LiveAnswer{}
	for _, t := range logical {
		live.Read = append(live.Read, TableRead{Table: t.name, Version: t.live, Live: true})
	}
	if live.Answer, err = answerOf(after, limit); err != nil {
		return res, err
	}
	if live.Comparison, err = notices.Compare(trim(before, limit), trim(after, limit), labels); err != nil {
		return res, fault.New(fault.Invalid, "compare with live: %v", err)
	}
	res.Live = live
	return res, nil
}

// source is the SQL of a request: its own, or its exposure's (with the exposure's labels).
func (q *queries) source(req QueryRequest) (string, []string, QueryResult, error) {
	var res QueryResult
	switch {
	case req.SQL != "" && req.Exposure != "":
		return "", nil, res, fault.New(fault.Invalid, "give SQL or an exposure, not both")
	case req.Exposure != "":
		for _, x := range q.exposures {
			if x.Name == req.Exposure {
				res.Exposure, res.Title, res.Target = x.Name, x.Title, x.Target
				return x.SQL, x.Labels, res, nil
			}
		}
		var names []string
		for _, x := range q.exposures {
			names = append(names, x.Name)
		}
		if len(names) == 0 {
			return "", nil, res, fault.New(fault.NotFound, "there is no exposure %q: the project has no exposures/", req.Exposure)
		}
		return "", nil, res, fault.New(fault.NotFound, "there is no exposure %q (there are %s)", req.Exposure, strings.Join(names, ", "))
	case strings.TrimSpace(req.SQL) == "":
		return "", nil, res, fault.New(fault.Invalid, "give a query: one SELECT, or an exposure by name")
	}
	return req.SQL, nil, res, nil
}

func (q *queries) service(target string) (*views.Service, error) {
	if len(q.services) == 0 {
		return nil, fault.New(fault.NotFound, "Queries are not set up here: the project has no targets.")
	}
	return q.services.pick(target, q.def)
}

// logicalTable is a logical table a query names, with its live version.
type logicalTable struct{ name, live string }

// logicalTables lists the logical tables of s that sqlText names, in order of first mention. A
// name qualified by a schema (main.orders) counts by its last part; views.AsOf refuses one
// qualified by another schema.
func logicalTables(ctx context.Context, s *views.Service, sqlText string) ([]logicalTable, error) {
	var out []logicalTable
	for _, ref := range tsql.TableRefs(sqlText) {
		name := ref[strings.LastIndexByte(ref, '.')+1:]
		if slices.ContainsFunc(out, func(t logicalTable) bool { return t.name == name }) {
			continue
		}
		_, live, err := s.RetainedVersions(ctx, name)
		if errors.Is(err, fault.ErrNotFound) {
			continue // a plain table or a view of another kind: read as it is
		}
		if err != nil {
			return nil, err
		}
		out = append(out, logicalTable{name: name, live: live})
	}
	return out, nil
}

// versionsAt decides the version each logical table is read at: the one named, else the one
// live at asOf, else the live one.
func versionsAt(ctx context.Context, s *views.Service, logical []logicalTable, named map[string]string, asOf time.Time) (map[string]TableRead, error) {
	for _, t := range slices.Sorted(maps.Keys(named)) {
		if !slices.ContainsFunc(logical, func(l logicalTable) bool { return l.name == t }) {
			if _, _, err := s.RetainedVersions(ctx, t); err != nil {
				return nil, fault.New(fault.Invalid, "%s is not a logical table of target %s: versions can be named for logical tables only", t, s.Target())
			}
			return nil, fault.New(fault.Invalid, "the query does not read %s: name versions of the tables it reads", t)
		}
	}
	out := map[string]TableRead{}
	for _, t := range logical {
		r := TableRead{Table: t.name, Version: t.live, Live: true}
		switch v, ok := named[t.name]; {
		case ok:
			if _, err := s.Retained(ctx, t.name, v); err != nil {
				if k := fault.Of(err); k == fault.Invalid || k == fault.NotFound {
					retained, _, _ := s.RetainedVersions(ctx, t.name)
					return nil, fault.New(k, "%s (retained: %s)", fault.Message(err), strings.Join(retained, ", "))
				}
				return nil, err
			}
			n, _ := views.ParseVersionArg(t.name, v)
			r = TableRead{Table: t.name, Version: views.VersionName(n)}
		case !asOf.IsZero():
			lv, err := s.LiveAt(ctx, t.name, asOf)
			if err != nil {
				return nil, err
			}
			r = TableRead{Table: t.name, Version: lv.Version, Since: lv.Since, Publish: lv.Publish, Kind: lv.Kind}
		}
		r.Live = r.Version == t.live
		out[t.name] = r
	}
	return out, nil
}

// run reads at most limit+1 rows of query (one more tells a truncated answer). It is
// cancelled with ctx; on ClickHouse the engine runs it with readonly=1, and DuckDB targets
// are opened with external access off (sql/sandbox.go).
func run(ctx context.Context, e tsql.Engine, query string, limit int) (*tsql.Result, error) {
	res := &tsql.Result{}
	errEnough := errors.New("enough rows")
	cols, err := e.Describe(ctx, query)
	if err != nil {
		return nil, fault.New(fault.Invalid, "query: %s", fault.FirstLine(err.Error()))
	}
	for _, c := range cols {
		res.Columns = append(res.Columns, c.Name)
		res.Kinds = append(res.Kinds, c.Kind)
	}
	err = e.Each(ctx, query, nil, func(row []any) error {
		res.Rows = append(res.Rows, slices.Clone(row))
		if len(res.Rows) > limit {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fault.New(fault.Invalid, "query: %s", fault.FirstLine(err.Error()))
	}
	return res, nil
}

func trim(r *tsql.Result, limit int) *tsql.Result {
	if len(r.Rows) <= limit {
		return r
	}
	return &tsql.Result{Columns: r.Columns, Rows: r.Rows[:limit], Kinds: r.Kinds}
}

// answerOf is r's first limit rows as JSON cells.
func answerOf(r *tsql.Result, limit int) (Answer, error) {
	a := Answer{Columns: r.Columns, Rows: [][]json.RawMessage{}, Truncated: len(r.Rows) > limit}
	for _, row := range trim(r, limit).Rows {
		cells := make([]json.RawMessage, len(row))
		for i, v := range row {
			if t, ok := v.(time.Time); ok && i < len(r.Kinds) && r.Kinds[i] == tsql.TypeTimestamp {
				v = t.Format("2006-01-02 15:04:05.999999999") // midnight too, and to the digit it has
			}
			raw, err := cell(v)
			if err != nil {
				return a, fmt.Errorf("query: column %s: %w", r.Columns[i], err)
			}
			cells[i] = raw
		}
		a.Rows = append(a.Rows, cells)
	}
	return a, nil
}

func cell(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case time.Time, []byte:
		return json.Marshal(tsql.ShownText(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return json.Marshal(tsql.AsText(x))
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return json.Marshal(tsql.AsText(x))
		}
	case tsql.Decimal:
		return json.RawMessage(x.String()), nil
	case string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
	default:
		return json.Marshal(tsql.AsText(x))
	}
	return json.Marshal(v)
}

// CellText is how a cell reads in a table: text as it is, NULL for null, numbers as JSON
// writes them.
func CellText(raw json.RawMessage) string {
	s := string(raw)
	switch {
	case s == "null":
		return "NULL"
	case strings.HasPrefix(s, `"`):
		var out string
		if json.Unmarshal(raw, &out) == nil {
			return out
		}
	}
	return s
}

// ParseAsOf reads a time: RFC 3339, or "2006-01-02 15:04[:05]" / "2006-01-02T15:04[:05]" /
// 2006-01-02 in UTC. "" is no time.
func ParseAsOf(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, strings.TrimSuffix(s, " UTC")); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fault.New(fault.Invalid, "as of %q: want a time such as 2026-07-20T09:00:00Z, 2026-07-20 09:00 (UTC) or 2026-07-20", s)
}
