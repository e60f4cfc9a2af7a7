package backfill

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// pipelineRun is one run of a transform as the pipeline, as the ledger keeps it.
type pipelineRun struct {
	ID      int64
	CodeSHA string
	Windows []string
	Owner   string
	State   string
	Started time.Time
	// written is what the run wrote before it stopped: rows per window and table, and the
	// version each went into ("window\x00table" → its record).
	written map[string]windowWrite
}

type windowWrite struct {
	Version, Building string
	Rows              int64
}

const (
	pipelineRunning = "running"
	pipelineDone    = "done"
	pipelineFailed  = "failed"
)

func writtenKey(window, table string) string { return window + "\x00" + table }

// startPipeline records a new pipeline run of backfill name, owned by this process.
func (s Store) startPipeline(ctx context.Context, name, target, codeSHA, actor string, windows []string) (int64, error) {
	body, err := json.Marshal(windows)
	if err != nil {
		return 0, err
	}
	var id int64
	err = s.L.DB().QueryRowContext(ctx, `INSERT INTO pipeline_runs (backfill, target, code_sha, windows, actor, owner, state, started_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, name, target, codeSHA, string(body), actor, thisProcess(), pipelineRunning, s.L.Now()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("backfill: record the pipeline run: %w", err)
	}
	return id, nil
}

// windowWritten checkpoints one window of a pipeline run written into table.
func (s Store) windowWritten(ctx context.Context, runID int64, window, table string, w windowWrite) error {
	_, err := s.L.DB().ExecContext(ctx, `INSERT INTO pipeline_windows (run_id, window_start, table_name, version, building, rows, written_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, window_start, table_name) DO UPDATE SET version = excluded.version, building = excluded.building,
		rows = excluded.rows, written_at = excluded.written_at`, runID, window, table, w.Version, w.Building, w.Rows, s.L.Now())
	if err != nil {
		return fmt.Errorf("backfill: checkpoint window %s of %s: %w", window, table, err)
	}
	return nil
}

// endPipeline records how a pipeline run ended; a run ended by a canceled context is recorded
// too (it stopped), with what stopped it.
func (s Store) endPipeline(ctx context.Context, runID int64, runErr error) error {
	state, text := pipelineDone, ""
	if runErr != nil {
		state, text = pipelineFailed, runErr.Error()
	}
	_, err := s.L.DB().ExecContext(context.WithoutCancel(ctx), `UPDATE pipeline_runs SET state = ?, error = ?, finished_at = ? WHERE id = ?`,
		state, text, s.L.Now(), runID)
	return err
}

// stoppedPipeline is the newest pipeline run of backfill name on target if it stopped without
// ending (its process is gone) while writing windows with transform codeSHA: the run the next
// one continues. ok is false when there is none.
func (s Store) stoppedPipeline(ctx context.Context, name, target, codeSHA string, windows []string) (*pipelineRun, bool, error) {
	p, ok, err := s.newestPipeline(ctx, name, target, "")
	if err != nil || !ok {
		return nil, false, err
	}
	if p.State != pipelineRunning || ownerAlive(p.Owner) || p.CodeSHA != codeSHA || !slices.Equal(p.Windows, windows) {
		return nil, false, nil
	}
	rows, err := s.L.DB().QueryContext(ctx, `SELECT window_start, table_name, version, building, rows FROM pipeline_windows WHERE run_id = ?`, p.ID)
	if err != nil {
		return nil, false, fmt.Errorf("backfill: pipeline windows: %w", err)
	}
	defer rows.Close()
	p.written = map[string]windowWrite{}
	for rows.Next() {
		var window, table string
		var w windowWrite
		if err := rows.Scan(&window, &table, &w.Version, &w.Building, &w.Rows); err != nil {
			return nil, false, err
		}
		p.written[writtenKey(window, table)] = w
	}
	return p, true, rows.Err()
}

// newestPipeline is the newest pipeline run of backfill name on target (by actor, when given).
func (s Store) newestPipeline(ctx context.Context, name, target, actor string) (*pipelineRun, bool, error) {
	q := `SELECT id, code_sha, windows, owner, state, started_at FROM pipeline_runs WHERE backfill = ? AND target = ?`
	args := []any{name, target}
	if actor != "" {
		q += ` AND actor = ?`
		args = append(args, actor)
	}
	var p pipelineRun
	var windows string
	err := s.L.DB().QueryRowContext(ctx, q+` ORDER BY id DESC LIMIT 1`, args...).Scan(&p.ID, &p.CodeSHA, &windows, &p.Owner, &p.State, &p.Started)
	if errors.Is(err, dbsql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("backfill: pipeline runs: %w", err)
	}
	if err := json.Unmarshal([]byte(windows), &p.Windows); err != nil {
		return nil, false, fmt.Errorf("backfill: pipeline run %d: windows: %w", p.ID, err)
	}
	return &p, true, nil
}
