package backfill

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"trueup/fault"
	"trueup/ledger"
	"trueup/views"
)

// Run states.
const (
	RunRunning          = "running"
	RunCancelled        = "cancelled"
	RunFailed           = "failed"
	RunSampled          = "sampled"
	RunValidating       = "validating"
	RunValidated        = "validated"
	RunValidationFailed = "validation-failed"
)

// Partition states.
const (
	PartPending = "pending"
	PartRunning = "running"
	PartDone    = "done"
	PartFailed  = "failed"
)

// Run is a backfill run as the ledger records it.
type Run struct {
	ID         int64           `json:"run_id"`
	Backfill   string          `json:"backfill"`
	Target     string          `json:"target"`
	Table      string          `json:"table"`
	Reason     string          `json:"reason"`
	State      string          `json:"state"`
	Actor      string          `json:"actor"`
	CodeSHA    string          `json:"code_sha256"`
	Sample     int             `json:"sample,omitempty"`
	Plan       *Plan           `json:"-"`
	CreatedAt  time.Time       `json:"created_at"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	Error      string          `json:"error,omitempty"`
	Validation json.RawMessage `json:"validation,omitempty"`
	Tables     []RunTable      `json:"tables"`
	// Owner is the process that builds (or last built) the run (see ownerAlive).
	Owner string `json:"-"`
}

// OwnerPID is the process id of the process that was building the run.
func (r *Run) OwnerPID() int { return ownerPID(r.Owner) }

// RunTable is one table a run builds: the upstream first, then its downstream tables.
type RunTable struct {
	Table    string `json:"table"`
	Backfill string `json:"backfill"`
	Version  int    `json:"version"`
	CodeSHA  string `json:"code_sha256"`
	Prepared bool   `json:"prepared"`
}

// PartitionState is one partition's checkpoint.
type PartitionState struct {
	Table      string     `json:"table"`
	Partition  string     `json:"partition"`
	State      string     `json:"state"`
	Rows       int64      `json:"rows"`
	Attempts   int        `json:"attempts"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// Store keeps plans, runs and checkpoints in the ledger.
type Store struct{ L *ledger.Ledger }

// SavePlan records a computed plan.
func (s Store) SavePlan(ctx context.Context, actor string, p *Plan) (int64, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return 0, err
	}
	var id int64
	err = s.L.DB().QueryRowContext(ctx, `INSERT INTO backfill_plans (backfill, created_at, actor, plan)
		VALUES (?, ?, ?, ?) RETURNING id`, p.Backfill, s.L.Now(), actor, string(body)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("backfill: save plan: %w", err)
	}
	return id, nil
}

// LatestPlan returns the newest stored plan of a backfill.
func (s Store) LatestPlan(ctx context.Context, backfill string) (*Plan, time.Time, error) {
	var body string
	var at time.Time
	err := s.L.DB().QueryRowContext(ctx, `SELECT CAST(plan AS VARCHAR), created_at FROM backfill_plans
		WHERE backfill = ? ORDER BY id DESC LIMIT 1`, backfill).Scan(&body, &at)
	if errors.Is(err, dbsql.ErrNoRows) {
		return nil, at, fault.New(fault.NotFound, "Backfill %s has no plan yet.", backfill)
	}
	if err != nil {
		return nil, at, err
	}
	p := &Plan{}
	return p, at.UTC(), json.Unmarshal([]byte(body), p)
}

// errTableBusy is a start that found a run of its table in progress inside its transaction.
var errTableBusy = errors.New("another run of this table is in progress")

// createRun records a new run with its tables, pending partitions and the versions it builds
// (state building) in one transaction, if no run of its table is in progress. Two of them at
// once cannot both commit: they would record the same version numbers (the versions key). A
// number another start took first, which can happen to a downstream table two upstream tables
// share, is refused as a conflict naming the version.
func (s Store) createRun(ctx context.Context, r *Run, parts map[string][]string) (int64, error) {
	plan, err := json.Marshal(r.Plan)
	if err != nil {
		return 0, err
	}
	versions := views.Store{L: s.L}
	now := s.L.Now()
	err = s.L.Tx(ctx, func(tx *dbsql.Tx) error {
		var active int64
		switch err := tx.QueryRowContext(ctx, activeRunQuery, r.Table, RunRunning, RunValidating).Scan(&active); {
		case err == nil:
			return fmt.Errorf("%w (run %d)", errTableBusy, active)
		case !errors.Is(err, dbsql.ErrNoRows):
			return err
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO backfill_runs (backfill, target, table_name, reason, state,
			actor, code_sha, sample, plan, created_at, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			r.Backfill, r.Target, r.Table, r.Reason, RunRunning, r.Actor, r.CodeSHA, r.Sample, string(plan), now, thisProcess()).Scan(&r.ID); err != nil {
			return err
		}
		for i, t := range r.Tables {
			if _, err := tx.ExecContext(ctx, `INSERT INTO backfill_tables (run_id, position, table_name, backfill, version, code_sha)
				VALUES (?, ?, ?, ?, ?, ?)`, r.ID, i, t.Table, t.Backfill, t.Version, t.CodeSHA); err != nil {
				return err
			}
			if err := versions.Add(ctx, tx, views.Version{Target: r.Target, Table: t.Table, N: t.Version,
				State: views.StateBuilding, BuiltBy: r.Actor, CreatedAt: now, Backfill: r.Backfill, RunID: r.ID}); err != nil {
				return err
			}
			for _, p := range parts[t.Table] {
				if _, err := tx.ExecContext(ctx, `INSERT INTO backfill_partitions (run_id, table_name, part, state)
					VALUES (?, ?, ?, ?)`, r.ID, t.Table, p, PartPending); err != nil {
					return err
				}
			}
		}
		_, err := s.L.AuditTx(ctx, tx, ledger.Entry{Actor: r.Actor, Action: "backfill.run", Target: r.Table,
			Params:  map[string]any{"backfill": r.Backfill, "run_id": r.ID, "partitions": len(parts[r.Table]), "sample": r.Sample, "code_sha256": r.CodeSHA},
			Outcome: ledger.OutcomeStarted})
		return err
	})
	if err != nil && !errors.Is(err, errTableBusy) {
		// A number recorded before this transaction began is refused by Add (ErrExists); one
		// recorded while it was open fails its commit. Either way the ledger now has it.
		if taken, ok := takenVersion(context.WithoutCancel(ctx), versions, r); ok {
			by := ""
			if taken.RunID != 0 {
				by = fmt.Sprintf(" by run %d (%s)", taken.RunID, taken.Backfill)
			}
			return 0, fault.New(fault.Conflict, "%s was recorded%s while this run started: start it again to build the next version.",
				views.Physical(taken.Table, taken.N), by)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("backfill: create run: %w", err)
	}
	return r.ID, nil
}

// takenVersion returns a version that r was to build and that the ledger has recorded, after
// r's transaction failed (so the record is another start's).
func takenVersion(ctx context.Context, versions views.Store, r *Run) (views.Version, bool) {
	for _, t := range r.Tables {
		if v, err := versions.Get(ctx, r.Target, t.Table, t.Version); err == nil {
			return v, true
		}
	}
	return views.Version{}, false
}

const runCols = `id, backfill, target, table_name, reason, state, actor, code_sha, sample, CAST(plan AS VARCHAR),
	created_at, finished_at, error, CAST(coalesce(validation, 'null') AS VARCHAR), coalesce(owner, '')`

func scanRun(row interface{ Scan(...any) error }) (*Run, error) {
	r := &Run{}
	var plan, validation string
	var finished dbsql.NullTime
	if err := row.Scan(&r.ID, &r.Backfill, &r.Target, &r.Table, &r.Reason, &r.State, &r.Actor, &r.CodeSHA, &r.Sample,
		&plan, &r.CreatedAt, &finished, &r.Error, &validation, &r.Owner); err != nil {
		return nil, err
	}
	if (r.State == RunRunning || r.State == RunValidating) && !ownerAlive(r.Owner) {
		r.State = RunInterrupted
	}
	r.CreatedAt = r.CreatedAt.UTC()
	if finished.Valid {
		t := finished.Time.UTC()
		r.FinishedAt = &t
	}
	r.Plan = &Plan{}
	if err := json.Unmarshal([]byte(plan), r.Plan); err != nil {
		return nil, err
	}
	if validation != "null" {
		r.Validation = json.RawMessage(validation)
	}
	return r, nil
}

// GetRun loads a run with its tables.
func (s Store) GetRun(ctx context.Context, id int64) (*Run, error) {
	r, err := scanRun(s.L.DB().QueryRowContext(ctx, "SELECT "+runCols+" FROM backfill_runs WHERE id = ?", id))
	if errors.Is(err, dbsql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "There is no backfill run %d.", id)
	}
	if err != nil {
		return nil, fmt.Errorf("backfill: run %d: %w", id, err)
	}
	rows, err := s.L.DB().QueryContext(ctx, `SELECT table_name, backfill, version, code_sha, prepared
		FROM backfill_tables WHERE run_id = ? ORDER BY position`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t RunTable
		if err := rows.Scan(&t.Table, &t.Backfill, &t.Version, &t.CodeSHA, &t.Prepared); err != nil {
			return nil, err
		}
		r.Tables = append(r.Tables, t)
	}
	return r, rows.Err()
}

// LatestRun returns the newest run of a backfill.
func (s Store) LatestRun(ctx context.Context, backfill string) (*Run, error) {
	var id int64
	err := s.L.DB().QueryRowContext(ctx, "SELECT id FROM backfill_runs WHERE backfill = ? ORDER BY id DESC LIMIT 1", backfill).Scan(&id)
	if errors.Is(err, dbsql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "Backfill %s has never run.", backfill)
	}
	if err != nil {
		return nil, err
	}
	return s.GetRun(ctx, id)
}

// failedBefore lists the runs of backfill older than id that ended failed, oldest first: each
// left a version building that nothing will finish but a retry.
func (s Store) failedBefore(ctx context.Context, backfill string, id int64) ([]int64, error) {
	rows, err := s.L.DB().QueryContext(ctx, "SELECT id FROM backfill_runs WHERE backfill = ? AND state = ? AND id < ? ORDER BY id", backfill, RunFailed, id)
	if err != nil {
		return nil, fmt.Errorf("backfill: failed runs of %s: %w", backfill, err)
	}
	return ledger.Collect(rows, func(sc ledger.Scanner) (int64, error) {
		var n int64
		return n, sc.Scan(&n)
	})
}

// LatestRunWriting returns the newest run that wrote a table with backfill's transform: a run
// of its own, or of an upstream backfill that refreshed its table as a downstream one.
func (s Store) LatestRunWriting(ctx context.Context, backfill string) (*Run, error) {
	var id dbsql.NullInt64
	err := s.L.DB().QueryRowContext(ctx, `SELECT max(id) FROM (SELECT id FROM backfill_runs WHERE backfill = ?
		UNION ALL SELECT run_id FROM backfill_tables WHERE backfill = ?)`, backfill, backfill).Scan(&id)
	if err != nil {
		return nil, fmt.Errorf("backfill: runs of %s: %w", backfill, err)
	}
	if !id.Valid {
		return nil, fault.New(fault.NotFound, "Backfill %s has never run.", backfill)
	}
	return s.GetRun(ctx, id.Int64)
}

// Runs lists runs newest first.
func (s Store) Runs(ctx context.Context, limit, offset int) ([]*Run, error) {
	if limit <= 0 || limit > 500 {
		limit = 50
	}
	rows, err := s.L.DB().QueryContext(ctx, "SELECT "+runCols+" FROM backfill_runs ORDER BY id DESC LIMIT ? OFFSET ?", limit, offset)
	if err != nil {
		return nil, err
	}
	return ledger.Collect(rows, scanRun)
}

// Partitions lists a run's checkpoints in build order.
func (s Store) Partitions(ctx context.Context, runID int64) ([]PartitionState, error) {
	rows, err := s.L.DB().QueryContext(ctx, `SELECT p.table_name, p.part, p.state, p.row_count, p.attempts,
		p.started_at, p.finished_at, p.error FROM backfill_partitions p
		JOIN backfill_tables t ON t.run_id = p.run_id AND t.table_name = p.table_name
		WHERE p.run_id = ? ORDER BY t.position, p.part`, runID)
	if err != nil {
		return nil, fmt.Errorf("backfill: partitions of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []PartitionState
	for rows.Next() {
		var p PartitionState
		var started, finished dbsql.NullTime
		if err := rows.Scan(&p.Table, &p.Partition, &p.State, &p.Rows, &p.Attempts, &started, &finished, &p.Error); err != nil {
			return nil, err
		}
		if started.Valid {
			t := started.Time.UTC()
			p.StartedAt = &t
		}
		if finished.Valid {
			t := finished.Time.UTC()
			p.FinishedAt = &t
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (s Store) markPrepared(ctx context.Context, runID int64, table string) error {
	_, err := s.L.DB().ExecContext(ctx, "UPDATE backfill_tables SET prepared = true WHERE run_id = ? AND table_name = ?", runID, table)
	return err
}

// setPartitions checkpoints several partitions in one ledger transaction; rows, when given,
// holds each one's row count.
func (s Store) setPartitions(ctx context.Context, runID int64, table string, parts []string, state string, rows []int64) error {
	return s.L.Tx(ctx, func(tx *dbsql.Tx) error {
		for i, part := range parts {
			var n int64
			if rows != nil {
				n = rows[i]
			}
			if err := s.setPartitionOn(ctx, tx, runID, table, part, state, n, ""); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s Store) setPartition(ctx context.Context, runID int64, table, part, state string, rows int64, errText string) error {
	return s.setPartitionOn(ctx, s.L.DB(), runID, table, part, state, rows, errText)
}

func (s Store) setPartitionOn(ctx context.Context, x ledger.Querier, runID int64, table, part, state string, rows int64, errText string) error {
	now := s.L.Now()
	var err error
	switch state {
	case PartRunning:
		_, err = x.ExecContext(ctx, `UPDATE backfill_partitions SET state = ?, attempts = attempts + 1,
			started_at = ?, finished_at = NULL, error = '' WHERE run_id = ? AND table_name = ? AND part = ?`, state, now, runID, table, part)
	case PartPending:
		_, err = x.ExecContext(ctx, `UPDATE backfill_partitions SET state = ?, error = ''
			WHERE run_id = ? AND table_name = ? AND part = ?`, state, runID, table, part)
	default:
		_, err = x.ExecContext(ctx, `UPDATE backfill_partitions SET state = ?, row_count = ?, finished_at = ?, error = ?
			WHERE run_id = ? AND table_name = ? AND part = ?`, state, rows, now, errText, runID, table, part)
	}
	if err != nil {
		return fmt.Errorf("backfill: checkpoint %s %s: %w", table, part, err)
	}
	return nil
}

// claim records this process as the one building run id: from now on the run reads
// interrupted only once this process is gone.
func (s Store) claim(ctx context.Context, id int64) error {
	if _, err := s.L.DB().ExecContext(ctx, `UPDATE backfill_runs SET owner = ? WHERE id = ?`, thisProcess(), id); err != nil {
		return fmt.Errorf("backfill: run %d: %w", id, err)
	}
	return nil
}

func (s Store) setRun(ctx context.Context, id int64, state, errText string, validation any) error {
	var v any
	if validation != nil {
		b, err := json.Marshal(validation)
		if err != nil {
			return err
		}
		v = string(b)
	}
	var finished any
	if state != RunRunning && state != RunValidating {
		finished = s.L.Now()
	}
	_, err := s.L.DB().ExecContext(ctx, `UPDATE backfill_runs SET state = ?, error = ?, finished_at = ?,
		validation = coalesce(?, validation) WHERE id = ?`, state, errText, finished, v, id)
	if err != nil {
		return fmt.Errorf("backfill: run %d: %w", id, err)
	}
	return nil
}

// ReasonCount is how many runs had one reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	Runs   int    `json:"runs"`
	Tables int    `json:"tables"`
}

// History counts past runs by reason, so a team sees how many were bugs monitoring should
// have caught.
func (s Store) History(ctx context.Context) ([]ReasonCount, error) {
	// the tables a run wrote are its table and the downstream ones (backfill_tables)
	rows, err := s.L.DB().QueryContext(ctx, `SELECT r.reason, count(DISTINCT r.id) AS runs, count(DISTINCT coalesce(t.table_name, r.table_name))
		FROM backfill_runs r LEFT JOIN backfill_tables t ON t.run_id = r.id
		GROUP BY r.reason ORDER BY runs DESC, r.reason`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ReasonCount{}
	for rows.Next() {
		var c ReasonCount
		if err := rows.Scan(&c.Reason, &c.Runs, &c.Tables); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// shardsDone lists, by shard and then partition, the rows of the partitions of parts a run wrote
// on each shard (backfill_shards).
func (s Store) shardsDone(ctx context.Context, runID int64, table string, parts []string) (map[int]map[string]int64, error) {
	out := map[int]map[string]int64{}
	rows, err := s.L.DB().QueryContext(ctx, "SELECT shard, part, row_count FROM backfill_shards WHERE run_id = ? AND table_name = ?", runID, table)
	if err != nil {
		return nil, fmt.Errorf("backfill: shards written of %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var shard int
		var part string
		var n int64
		if err := rows.Scan(&shard, &part, &n); err != nil {
			return nil, err
		}
		if !slices.Contains(parts, part) {
			continue
		}
		if out[shard] == nil {
			out[shard] = map[string]int64{}
		}
		out[shard][part] = n
	}
	return out, rows.Err()
}

// setShardDone checkpoints the partitions parts of table written on shard, with their rows there.
func (s Store) setShardDone(ctx context.Context, runID int64, table string, shard int, parts []string, rows []int64) error {
	now := s.L.Now()
	return s.L.Tx(ctx, func(tx *dbsql.Tx) error {
		for i, part := range parts {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO backfill_shards VALUES (?, ?, ?, ?, ?, ?)`, runID, table, part, shard, rows[i], now); err != nil {
				return fmt.Errorf("backfill: checkpoint %s %s on shard %d: %w", table, part, shard, err)
			}
		}
		return nil
	})
}

// clearShards forgets the shards written of table in the run: its version is made anew.
func (s Store) clearShards(ctx context.Context, runID int64, table string) error {
	if _, err := s.L.DB().ExecContext(ctx, "DELETE FROM backfill_shards WHERE run_id = ? AND table_name = ?", runID, table); err != nil {
		return fmt.Errorf("backfill: clear the shards written of %s: %w", table, err)
	}
	return nil
}
