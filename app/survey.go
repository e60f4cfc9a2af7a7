package app

import (
	"context"
	"fmt"

	tsql "trueup/sql"
	"trueup/views"
)

// Survey is what a target holds, as `trueup init --target` shows it: the logical tables already
// there (a view over <name>__vN), the plain tables a project could adopt, and the other views.
type Survey struct {
	Info    tsql.Info
	Logical []views.Table
	// Tables are the tables that are not a version of a logical table listed in Logical.
	Tables []string
	// Adoptable are those of Tables that trueup adopt takes (no AdoptRefusal): not a cluster's
	// local table behind a Distributed one, not a ReplacingMergeTree, …
	Adoptable []string
	// Views are the views that are not logical tables.
	Views []string
}

// SurveyTarget reads what e holds; name is how the logical tables name their target.
func SurveyTarget(ctx context.Context, name string, e tsql.Engine) (*Survey, error) {
	rels, err := e.Relations(ctx)
	if err != nil {
		return nil, fmt.Errorf("survey %s: %w", e.Info().Target, err)
	}
	logical, err := views.List(ctx, name, e)
	if err != nil {
		return nil, err
	}
	s := &Survey{Info: e.Info(), Logical: logical}
	isLogical, isVersion := map[string]bool{}, map[string]bool{}
	for _, t := range logical {
		isLogical[t.Name] = true
		for _, v := range t.Versions {
			isVersion[t.Name+"__"+v] = true
		}
	}
	for _, r := range rels {
		switch {
		case r.View && !isLogical[r.Name]:
			s.Views = append(s.Views, r.Name)
		case !r.View && !isVersion[r.Name]:
			s.Tables = append(s.Tables, r.Name)
			why, err := e.AdoptRefusal(ctx, r.Name)
			if err != nil {
				return nil, fmt.Errorf("survey %s: %w", e.Info().Target, err)
			}
			if why == "" {
				s.Adoptable = append(s.Adoptable, r.Name)
			}
		}
	}
	return s, nil
}
