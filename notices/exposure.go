package notices

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"trueup/fault"
	tsql "trueup/sql"
	"trueup/sqlfile"
)

// Exposure is a report or dashboard query that stakeholders see: exposures/<name>.sql.
type Exposure struct {
	Name     string   `json:"name"`
	Path     string   `json:"path"`
	Title    string   `json:"title"`
	Owner    string   `json:"owner,omitempty"`
	Audience []string `json:"audience,omitempty"`
	// Tables are the logical tables the query reads (from the header, or found in the SQL).
	Tables []string `json:"tables"`
	Target string   `json:"target,omitempty"` // "" is the default target
	// Labels name the columns that label a row (month, region); the other numeric columns are
	// the values. Empty: the leading non-numeric columns.
	Labels []string `json:"labels,omitempty"`
	SQL    string   `json:"sql"`
	// Line is the file's line the SQL starts on, for messages about it.
	Line int `json:"-"`
}

var (
	exposureKeys     = []string{"owner", "audience", "tables", "target", "labels"}
	exposureRequired = []string{"title"}
)

// ParseExposure reads one exposure file. shown is the path used in messages.
func ParseExposure(shown, text string) (*Exposure, sqlfile.Problems) {
	f := sqlfile.Scan(shown, text)
	f.Allow(exposureKeys, exposureRequired)
	x := &Exposure{
		Name:     f.Name,
		Path:     shown,
		Title:    f.Get("title"),
		Owner:    f.Get("owner"),
		Audience: sqlfile.List(f.Get("audience")),
		Target:   f.Get("target"),
		Labels:   sqlfile.List(f.Get("labels")),
	}
	if f.Has("title") && x.Title == "" {
		f.BadKey("title", "title is empty: say what people see, e.g. Board revenue by month")
	}
	line := f.BodyLine
	if line == 0 {
		line = 1
	}
	sqlText, err := tsql.ReadOnlySelect(f.Body)
	if err != nil {
		f.Bad(line+tsql.LineOf(err), "exposure SQL: %v", err)
		return x, f.Problems()
	}
	x.SQL, x.Line = sqlText, line
	refs := tsql.TableRefs(sqlText)
	if f.Has("tables") {
		x.Tables = sqlfile.List(f.Get("tables"))
		if len(x.Tables) == 0 {
			f.BadKey("tables", "tables is empty: name the logical tables the query reads")
		}
		for _, t := range x.Tables {
			if !containsFold(refs, t) {
				f.BadKey("tables", "table %s is not read by the query (it reads %s)", t, strings.Join(refs, ", "))
			}
		}
	} else {
		x.Tables = refs
		if len(refs) == 0 {
			f.Bad(line, "the query reads no table: an exposure shows numbers from logical tables")
		}
	}
	return x, f.Problems()
}

// LoadExposures parses every *.sql file of fsys (the project's exposures/ folder). Every problem
// of every file is returned at once, as sqlfile.Problems. prefix is put before paths in messages.
func LoadExposures(fsys fs.FS, prefix string) ([]*Exposure, error) {
	var out []*Exposure
	var parsed sqlfile.Problems
	seen := map[string]string{}
	problems, err := sqlfile.ReadEach(fsys, prefix, func(shown, text string) {
		x, ps := ParseExposure(shown, text)
		parsed = append(parsed, ps...)
		if prev, dup := seen[x.Name]; dup {
			parsed = append(parsed, sqlfile.Problem{Path: shown, Line: 1, Msg: "exposure " + x.Name + " is also defined in " + prev})
		}
		seen[x.Name] = shown
		out = append(out, x)
	})
	if err != nil {
		return nil, fmt.Errorf("notices: exposures: %w", err)
	}
	problems = append(problems, parsed...)
	if err := problems.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Targets gives the engine of a named target; "" names the default target.
type Targets interface {
	Engine(name string) (tsql.Engine, error)
}

// CheckExposures asks each exposure's engine to prepare its SQL, reporting every failure at once.
func CheckExposures(ctx context.Context, xs []*Exposure, targets Targets) error {
	var problems sqlfile.Problems
	for _, x := range xs {
		e, err := targets.Engine(x.Target)
		if err != nil {
			problems = append(problems, sqlfile.Problem{Path: x.Path, Line: 1, Msg: err.Error()})
			continue
		}
		if err := e.Check(ctx, x.SQL); err != nil {
			problems = append(problems, sqlfile.Problem{Path: x.Path, Line: max(x.Line, 1), Msg: "exposure SQL does not prepare: " + fault.FirstLine(err.Error())})
		}
	}
	return problems.Err()
}

// Reading returns the exposures that read any of tables, in name order.
func Reading(xs []*Exposure, tables []string) []*Exposure {
	var out []*Exposure
	for _, x := range xs {
		for _, t := range x.Tables {
			if containsFold(tables, t) {
				out = append(out, x)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
