package server

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/notices"
	"trueup/ops"
	"trueup/reconcile"
	"trueup/server/page"
)

// DiffService is what the diff pages and API stand on (reconcile.Store); the handlers reach it
// through ops.Diffs.
type DiffService = ops.DiffStore

// errNoDiffs answers the diff routes of a server without a diff store.
var errNoDiffs = echo.NewHTTPError(http.StatusNotFound, "Diffs are not kept by this server.")

func diffHref(id int64) string { return "/diffs/" + strconv.FormatInt(id, 10) }

func diffPartitionHref(id int64, partition string) string {
	return diffHref(id) + "/partitions/" + url.PathEscape(partition)
}

// diffOf loads the diff named in the path, or a 404.
func (s *Server) diffOf(c echo.Context) (*reconcile.Result, error) {
	if s.diffs == nil {
		return nil, errNoDiffs
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return nil, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("There is no diff %s.", c.Param("id")))
	}
	return s.diffs.Get(c.Request().Context(), id)
}

// diffPartitionOf reads the diff and finds the partition named in the path, or a 404.
func (s *Server) diffPartitionOf(c echo.Context) (*reconcile.Result, *reconcile.Partition, error) {
	r, err := s.diffOf(c)
	if err != nil {
		return nil, nil, err
	}
	name, err := url.PathUnescape(c.Param("partition"))
	if err != nil {
		name = c.Param("partition")
	}
	if p := r.Partition(name); p != nil {
		return r, p, nil
	}
	return nil, nil, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Diff %d has no partition %s.", r.ID, name))
}

// validationLabel reads the label a backfill's validation gives the diffs it saves
// (backfill/validate.go: "backfill NAME run N: TABLE").
var validationLabel = regexp.MustCompile(`^backfill (\S+) run \d+: (\S+)$`)

func sideLabel(s reconcile.SideInfo) string {
	return fmt.Sprintf("%s (%s %s)", s.Relation, s.Engine, s.Target)
}

func partitionRow(r *reconcile.Result, p *reconcile.Partition) page.DiffPartitionRow {
	row := page.DiffPartitionRow{Partition: p.Partition, Href: diffPartitionHref(r.ID, p.Partition), OldCount: p.OldCount,
		NewCount: p.NewCount, Delta: p.Delta, Pct: pct(p.PctChange), Verdict: p.Verdict, Reasons: p.Reasons}
	for _, m := range r.Measures {
		row.Measures = append(row.Measures, pct((*float64)(p.Measures[m].PctChange)))
	}
	switch {
	case p.Presence == reconcile.PresenceNewOnly:
		row.Checksum = "new partition"
	case p.Presence == reconcile.PresenceOldOnly:
		row.Checksum = "missing from new"
	case p.ChecksumMatch:
		row.Checksum = "match"
	default:
		row.Checksum = "differs"
	}
	return row
}

// diffView lays a result out for its page; all lists unchanged partitions too.
func (s *Server) diffView(r *reconcile.Result, all bool) page.Diff {
	counts := r.Counts()
	d := page.Diff{
		Chrome: s.chrome(fmt.Sprintf("Diff %d", r.ID), "Diffs"), ID: r.ID,
		Old: sideLabel(r.Old), New: sideLabel(r.New), Key: strings.Join(r.Key, ", "), PartitionColumn: r.PartitionColumn,
		Expect: r.Expectations, Met: r.ExpectationsMet, Differs: r.Differs,
		Grain: r.Grain,
		Counts: fmt.Sprintf("%s: %s unchanged, %s expected, %s unexpected", page.Plural(len(r.Partitions), "partition", "partitions"),
			page.Thousands(int64(counts[reconcile.VerdictUnchanged])), page.Thousands(int64(counts[reconcile.VerdictExpected])),
			page.Thousands(int64(counts[reconcile.VerdictUnexpected]))),
		Measures: r.Measures,
		Added:    r.Rows.Added, Removed: r.Rows.Removed, Changed: r.Rows.Changed, DuplicateKeys: r.Rows.DuplicateKeys,
		NullKeyAdded: r.Rows.NullKeyAdded, NullKeyRemoved: r.Rows.NullKeyRemoved,
		Notes: r.Notes, Transferred: r.RowsTransferred, CrossEngine: r.CrossEngine,
		Took: formatMS(float64(r.ElapsedMS)), Started: formatTime(r.Started), APIHref: "/api/v1" + diffHref(r.ID),
	}
	if m := validationLabel.FindStringSubmatch(r.Label); m != nil {
		d.Backfill, d.BackfillHref, d.Table = m[1], backfillHref(m[1]), m[2]
		d.VersionsHref = "/tables/" + url.PathEscape(m[2]) + "?target=" + url.QueryEscape(r.New.Target)
	}
	ds := resultPartitions(r, "")
	d.Chart, d.Charted = notices.Chart(ds, ""), notices.Charted(ds, "")
	for _, p := range r.Partitions {
		if !all && p.Verdict == reconcile.VerdictUnchanged {
			d.Hidden++
			continue
		}
		d.Partitions = append(d.Partitions, partitionRow(r, p))
	}
	if d.Hidden > 0 {
		d.AllHref = diffHref(r.ID) + "?all=1"
	}
	for name, n := range r.ChangedColumns {
		d.ChangedColumns = append(d.ChangedColumns, page.NameCount{Name: name, Count: n})
	}
	sort.Slice(d.ChangedColumns, func(i, j int) bool { return d.ChangedColumns[i].Name < d.ChangedColumns[j].Name })
	for _, c := range r.Schema.Added {
		d.Schema = append(d.Schema, schemaLine("+", c))
	}
	for _, c := range r.Schema.Removed {
		d.Schema = append(d.Schema, schemaLine("-", c))
	}
	for _, c := range r.Schema.Changed {
		d.Schema = append(d.Schema, fmt.Sprintf("%s %s → %s", c.Name, c.OldType, c.NewType))
	}
	return d
}

func schemaLine(sign string, c reconcile.ColumnInfo) string {
	s := sign + c.Name + " " + c.Type
	if c.Ignored {
		s += " (ignored)"
	}
	return s
}

// diffPartitionView lays one partition and its samples out for the drill-down.
func (s *Server) diffPartitionView(r *reconcile.Result, p *reconcile.Partition) page.DiffPartition {
	d := page.DiffPartition{
		Chrome: s.chrome(p.Partition+" · diff "+strconv.FormatInt(r.ID, 10), "Diffs"),
		DiffID: r.ID, DiffHref: diffHref(r.ID), Row: partitionRow(r, p), Presence: p.Presence,
		Compared: p.Rows != nil, Columns: r.Compared,
		APIHref: "/api/v1" + diffPartitionHref(r.ID, p.Partition),
	}
	if p.OldNullKeys+p.NewNullKeys > 0 {
		d.NullKeys = fmt.Sprintf("Rows with a NULL key, not matched: %s old, %s new.", page.Thousands(p.OldNullKeys), page.Thousands(p.NewNullKeys))
	}
	if p.Samples == nil {
		return d
	}
	row := func(x reconcile.Row) []string {
		cells := make([]string, len(r.Compared))
		for i, c := range r.Compared {
			cells[i] = reconcile.ValueText(x.Values.Get(c))
		}
		return cells
	}
	for _, x := range p.Samples.Added {
		d.Added = append(d.Added, row(x))
	}
	for _, x := range p.Samples.Removed {
		d.Removed = append(d.Removed, row(x))
	}
	for _, x := range p.Samples.Changed {
		ch := page.DiffChange{Key: reconcile.KeyText(x.Key)}
		for _, c := range x.Columns {
			ch.Columns = append(ch.Columns, page.DiffValueChange{Column: c.Column, Old: reconcile.ValueText(c.Old), New: reconcile.ValueText(c.New)})
		}
		d.Changed = append(d.Changed, ch)
	}
	for _, x := range p.Samples.Duplicates {
		d.Duplicates = append(d.Duplicates, page.DiffDuplicate{Key: reconcile.KeyText(x.Key), OldRows: x.OldRows, NewRows: x.NewRows})
	}
	return d
}
