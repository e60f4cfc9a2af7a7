package monitor

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"time"

	"trueup/ledger"
)

// SlotStore remembers, per rule, the newest scheduled slot that has been run.
type SlotStore interface {
	LastSlot(ctx context.Context, rule string) (time.Time, bool, error)
	RecordSlot(ctx context.Context, rule, schedule string, slot time.Time) error
}

// LedgerSlots keeps slots in the ledger's monitor_slots table.
type LedgerSlots struct{ l *ledger.Ledger }

// NewLedgerSlots returns the slot store of a ledger.
func NewLedgerSlots(l *ledger.Ledger) *LedgerSlots { return &LedgerSlots{l: l} }

// LastSlot implements SlotStore.
func (s *LedgerSlots) LastSlot(ctx context.Context, rule string) (time.Time, bool, error) {
	var t time.Time
	err := s.l.DB().QueryRowContext(ctx, "SELECT last_slot FROM monitor_slots WHERE rule = ?", rule).Scan(&t)
	if errors.Is(err, dbsql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("monitor: last slot of %s: %w", rule, err)
	}
	return t.UTC(), true, nil
}

// RecordSlot implements SlotStore.
func (s *LedgerSlots) RecordSlot(ctx context.Context, rule, schedule string, slot time.Time) error {
	_, err := s.l.DB().ExecContext(ctx, "INSERT OR REPLACE INTO monitor_slots (rule, schedule, last_slot, updated_at) VALUES (?, ?, ?, ?)",
		rule, schedule, slot.UTC(), s.l.Now())
	if err != nil {
		return fmt.Errorf("monitor: record slot of %s: %w", rule, err)
	}
	return nil
}
