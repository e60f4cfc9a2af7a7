package rules

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"trueup/ledger"
	tsql "trueup/sql"
)

// Store keeps rule runs, results, rule states, alerts and schema snapshots in the ledger.
type Store struct {
	l      *ledger.Ledger
	mu     sync.Mutex // one run recorded at a time: state changes are judged in order
	sendMu sync.Mutex // one SendAlerts at a time: an alert is handed on by one of them
}

// NewStore returns the store over an open ledger.
func NewStore(l *ledger.Ledger) *Store { return &Store{l: l} }

// Alert is raised when a rule's status changes (pass→fail, fail→pass, to or from error), and
// when its first result is not a pass.
type Alert struct {
	ID       int64     `json:"id"`
	Rule     string    `json:"rule"`
	RunID    int64     `json:"run_id"`
	At       time.Time `json:"at"`
	From     Status    `json:"from"` // "" when the rule had no result before
	To       Status    `json:"to"`
	Severity Severity  `json:"severity"`
	Message  string    `json:"message"`
	// DeliveredAt is when the alert was handed to the notification channels (SendAlerts);
	// zero while it waits.
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
}

// State is a rule's current status and since when.
type State struct {
	Rule      string    `json:"rule"`
	Status    Status    `json:"status"`
	Since     time.Time `json:"since"`
	LastRunID int64     `json:"last_run_id"`
	LastAt    time.Time `json:"last_at"`
}

// SaveRun records a run and its results in one transaction, gives them the run's id, moves each
// rule's state and returns the alerts the changes raised.
func (s *Store) SaveRun(ctx context.Context, run *Run, actor string) ([]Alert, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pass, fail, errs := run.Counts()
	var alerts []Alert
	err := s.l.Tx(ctx, func(tx *dbsql.Tx) error {
		row := tx.QueryRowContext(ctx, `INSERT INTO rule_runs (trigger, actor, started_at, finished_at, queries, rules, passed, failed, errors)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			run.Trigger, actor, run.Started.UTC(), run.Finished.UTC(), run.Queries, len(run.Results), pass, fail, errs)
		if err := row.Scan(&run.ID); err != nil {
			return err
		}
		for i := range run.Results {
			res := &run.Results[i]
			res.RunID = run.ID
			if err := insertResult(ctx, tx, res); err != nil {
				return fmt.Errorf("result of %s: %w", res.Rule, err)
			}
			if run.Target != "" {
				continue // a run on a chosen target is history, not the monitored state
			}
			a, err := moveState(ctx, tx, res)
			if err != nil {
				return fmt.Errorf("state of %s: %w", res.Rule, err)
			}
			if a != nil {
				alerts = append(alerts, *a)
			}
		}
		if run.Trigger == TriggerManual {
			return s.audit(ctx, tx, run, actor)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rules: save run: %w", err)
	}
	return alerts, nil
}

// audit records a run someone asked for (run now) in the audit log, in the run's transaction.
func (s *Store) audit(ctx context.Context, tx *dbsql.Tx, run *Run, actor string) error {
	names := make([]string, len(run.Results))
	for i, r := range run.Results {
		names[i] = r.Rule
	}
	pass, fail, errs := run.Counts()
	_, err := s.l.AuditTx(ctx, tx, ledger.Entry{
		At: run.Finished, Actor: actor, Action: "rule.run", Target: strings.Join(names, ","),
		Params:  map[string]any{"run_id": run.ID, "rules": names},
		Outcome: ledger.OutcomeOK,
		Detail:  fmt.Sprintf("%d passed, %d failed, %d could not run", pass, fail, errs),
	})
	return err
}

func insertResult(ctx context.Context, tx *dbsql.Tx, r *Result) error {
	parts, err := json.Marshal(r.FailingPartitions)
	if err != nil {
		return err
	}
	sample, err := json.Marshal(r.Sample)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO rule_results (run_id, rule, kind, severity, target, relation, status,
		violations, failing_partitions, sample, message, sql, duration_ms, at_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.RunID, r.Rule, string(r.Kind), string(r.Severity), r.Target, r.Table, string(r.Status), r.Violations,
		string(parts), string(sample), r.Message, r.SQL, r.DurationMS, r.At.UTC())
	return err
}

// moveState updates a rule's state and returns the alert its change raises, if any.
func moveState(ctx context.Context, tx *dbsql.Tx, r *Result) (*Alert, error) {
	var prev string
	err := tx.QueryRowContext(ctx, "SELECT status FROM rule_state WHERE rule = ?", r.Rule).Scan(&prev)
	if err != nil && !errors.Is(err, dbsql.ErrNoRows) {
		return nil, err
	}
	if Status(prev) == r.Status {
		_, err := tx.ExecContext(ctx, "UPDATE rule_state SET last_run_id = ?, last_at = ? WHERE rule = ?", r.RunID, r.At.UTC(), r.Rule)
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO rule_state (rule, status, since, last_run_id, last_at) VALUES (?, ?, ?, ?, ?)",
		r.Rule, string(r.Status), r.At.UTC(), r.RunID, r.At.UTC()); err != nil {
		return nil, err
	}
	if prev == "" && r.Status == StatusPass {
		return nil, nil // a rule that starts out passing has nothing to say
	}
	a := &Alert{Rule: r.Rule, RunID: r.RunID, At: r.At.UTC(), From: Status(prev), To: r.Status, Severity: r.Severity, Message: alertMessage(r, Status(prev))}
	err = tx.QueryRowContext(ctx, `INSERT INTO rule_alerts (rule, run_id, at_time, from_status, to_status, severity, message)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, a.Rule, a.RunID, a.At, string(a.From), string(a.To), string(a.Severity), a.Message).Scan(&a.ID)
	return a, err
}

func alertMessage(r *Result, prev Status) string {
	switch r.Status {
	case StatusPass:
		return fmt.Sprintf("%s passes again", r.Rule)
	case StatusFail:
		msg := fmt.Sprintf("%s fails: %s", r.Rule, r.Message)
		if len(r.FailingPartitions) > 0 {
			msg += fmt.Sprintf(" (%s, first %s)", plural(int64(len(r.FailingPartitions)), "partition", "partitions"), r.FailingPartitions[0])
		}
		return msg
	}
	return fmt.Sprintf("%s could not run: %s", r.Rule, r.Message)
}

const resultColumns = `run_id, rule, kind, severity, target, relation, status, violations,
	CAST(failing_partitions AS VARCHAR), CAST(sample AS VARCHAR), message, sql, duration_ms, at_time`

func scanResult(sc interface{ Scan(...any) error }) (Result, error) {
	var r Result
	var kind, sev, status, parts, sample string
	err := sc.Scan(&r.RunID, &r.Rule, &kind, &sev, &r.Target, &r.Table, &status, &r.Violations, &parts, &sample,
		&r.Message, &r.SQL, &r.DurationMS, &r.At)
	if err != nil {
		return r, err
	}
	r.Kind, r.Severity, r.Status, r.At = Kind(kind), Severity(sev), Status(status), r.At.UTC()
	if err := json.Unmarshal([]byte(parts), &r.FailingPartitions); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(sample), &r.Sample); err != nil {
		return r, err
	}
	return r, nil
}

// History returns a rule's results, newest first, at most limit (default 100).
func (s *Store) History(ctx context.Context, rule string, limit int) ([]Result, error) {
	if limit <= 0 {
		limit = 100
	}
	out, err := ledger.Select(ctx, s.l.DB(), scanResult,
		"SELECT "+resultColumns+" FROM rule_results WHERE rule = ? ORDER BY at_time DESC, run_id DESC LIMIT ?", rule, limit)
	if err != nil {
		return nil, fmt.Errorf("rules: history of %s: %w", rule, err)
	}
	return out, nil
}

// Latest returns the newest result of every rule that has one, by rule name.
func (s *Store) Latest(ctx context.Context) (map[string]Result, error) {
	rows, err := s.l.DB().QueryContext(ctx, "SELECT "+resultColumns+` FROM rule_results
		WHERE (rule, run_id) IN (SELECT rule, last_run_id FROM rule_state)`)
	if err != nil {
		return nil, fmt.Errorf("rules: latest results: %w", err)
	}
	defer rows.Close()
	out := map[string]Result{}
	for rows.Next() {
		r, err := scanResult(rows)
		if err != nil {
			return nil, fmt.Errorf("rules: latest results: %w", err)
		}
		out[r.Rule] = r
	}
	return out, rows.Err()
}

// States returns every rule's current state, by rule name.
func (s *Store) States(ctx context.Context) (map[string]State, error) {
	rows, err := s.l.DB().QueryContext(ctx, "SELECT rule, status, since, last_run_id, last_at FROM rule_state")
	if err != nil {
		return nil, fmt.Errorf("rules: states: %w", err)
	}
	defer rows.Close()
	out := map[string]State{}
	for rows.Next() {
		var st State
		var status string
		if err := rows.Scan(&st.Rule, &status, &st.Since, &st.LastRunID, &st.LastAt); err != nil {
			return nil, err
		}
		st.Status, st.Since, st.LastAt = Status(status), st.Since.UTC(), st.LastAt.UTC()
		out[st.Rule] = st
	}
	return out, rows.Err()
}

// Alerts returns alerts newest first, for one rule or all ("").
func (s *Store) Alerts(ctx context.Context, rule string, limit int) ([]Alert, error) {
	if limit <= 0 {
		limit = 100
	}
	out, err := ledger.Select(ctx, s.l.DB(), scanAlert,
		"SELECT "+alertColumns+" FROM rule_alerts WHERE (? = '' OR rule = ?) ORDER BY id DESC LIMIT ?", rule, rule, limit)
	if err != nil {
		return nil, fmt.Errorf("rules: alerts: %w", err)
	}
	return out, nil
}

const alertColumns = "id, rule, run_id, at_time, from_status, to_status, severity, message, delivered_at"

func scanAlert(sc ledger.Scanner) (Alert, error) {
	var a Alert
	var from, to, sev string
	var delivered dbsql.NullTime
	if err := sc.Scan(&a.ID, &a.Rule, &a.RunID, &a.At, &from, &to, &sev, &a.Message, &delivered); err != nil {
		return a, err
	}
	a.From, a.To, a.Severity, a.At = Status(from), Status(to), Severity(sev), a.At.UTC()
	if delivered.Valid {
		a.DeliveredAt = delivered.Time.UTC()
	}
	return a, nil
}

// SendAlerts hands every alert not handed on yet to send, oldest first, and records each as
// delivered (delivered_at) once send has accepted it. Whichever process recorded an alert —
// `trueup check`, a schedule, a run-now — the next SendAlerts of any of them hands it on: an
// alert whose send failed, or that was handed on by a process stopped before it could record
// that, stays waiting and goes with the next call. send must therefore be safe to repeat for
// one alert (the notices outbox keys its deliveries by alert id and drops a repeat). It
// returns how many alerts were handed on, and the errors of those that were not.
func (s *Store) SendAlerts(ctx context.Context, send func(context.Context, Alert) error) (int, error) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	waiting, err := ledger.Select(ctx, s.l.DB(), scanAlert, "SELECT "+alertColumns+" FROM rule_alerts WHERE delivered_at IS NULL ORDER BY id")
	if err != nil {
		return 0, fmt.Errorf("rules: send alerts: %w", err)
	}
	sent := 0
	var errs []error
	for _, a := range waiting {
		if err := send(ctx, a); err != nil {
			errs = append(errs, fmt.Errorf("rules: send alert %d of %s: %w", a.ID, a.Rule, err))
			continue
		}
		if _, err := s.l.DB().ExecContext(ctx, "UPDATE rule_alerts SET delivered_at = ? WHERE id = ? AND delivered_at IS NULL",
			s.l.Now().UTC(), a.ID); err != nil {
			return sent, errors.Join(append(errs, fmt.Errorf("rules: send alert %d of %s: record delivery: %w", a.ID, a.Rule, err))...)
		}
		sent++
	}
	return sent, errors.Join(errs...)
}

// SchemaSnapshot implements SchemaStore.
func (s *Store) SchemaSnapshot(ctx context.Context, rule, target, relation string) ([]tsql.Column, bool, error) {
	var text string
	err := s.l.DB().QueryRowContext(ctx, "SELECT columns FROM rule_schemas WHERE rule = ? AND target = ? AND relation = ?",
		rule, target, relation).Scan(&text)
	if errors.Is(err, dbsql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("rules: schema snapshot of %s: %w", rule, err)
	}
	var cols []tsql.Column
	if err := json.Unmarshal([]byte(text), &cols); err != nil {
		return nil, false, fmt.Errorf("rules: schema snapshot of %s: %w", rule, err)
	}
	return cols, true, nil
}

// RecordSchema implements SchemaStore.
func (s *Store) RecordSchema(ctx context.Context, rule, target, relation string, cols []tsql.Column) error {
	text, err := json.Marshal(cols)
	if err != nil {
		return err
	}
	_, err = s.l.DB().ExecContext(ctx, "INSERT OR REPLACE INTO rule_schemas (rule, target, relation, columns, recorded_at) VALUES (?, ?, ?, ?, ?)",
		rule, target, relation, string(text), s.l.Now())
	if err != nil {
		return fmt.Errorf("rules: record schema of %s: %w", rule, err)
	}
	return nil
}
