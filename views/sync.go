package views

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	dbsql "database/sql"

	"trueup/ledger"
	tsql "trueup/sql"
)

// actor names trueup itself in the audit log, for what it does on its own (adoption, recovery,
// automatic retention).
const actor = "trueup"

// sync makes the ledger know every version table of table that the engine has (adoption: tables
// built outside trueup, like the demo's v1, are recorded on first sight, live when the view reads
// them) and, with repair, makes the ledger's live version the one the view reads. Repair needs
// the table's lock. It returns what the engine says and the ledger's versions.
func (s *Service) sync(ctx context.Context, table string, repair bool) (engineState, []Version, error) {
	sts, vss, err := s.syncAll(ctx, []string{table}, repair)
	if err != nil {
		return engineState{}, nil, err
	}
	return sts[table], vss[table], nil
}

// listManyAsync starts reading the ledger's versions of tables and returns the wait for them, so
// that the engine can be read meanwhile: one round trip of waiting, not two.
func (s *Service) listManyAsync(ctx context.Context, tables []string) func() (map[string][]Version, error) {
	var vss map[string][]Version
	var err error
	read := make(chan struct{})
	go func() {
		defer close(read)
		vss, err = s.store.listMany(ctx, s.target, tables)
	}()
	return func() (map[string][]Version, error) {
		<-read
		return vss, err
	}
}

// syncAll is sync for several tables with one catalog read.
func (s *Service) syncAll(ctx context.Context, tables []string, repair bool) (map[string]engineState, map[string][]Version, error) {
	// The engine and the ledger are different databases: read both at once, so that a swap
	// waits for one round trip here, not two.
	versions := s.listManyAsync(ctx, tables)
	sts, err := s.inspect(ctx, tables...)
	vss, ledgerErr := versions()
	if err != nil {
		return nil, nil, err
	}
	if ledgerErr != nil {
		return nil, nil, ledgerErr
	}
	for _, t := range tables {
		if err := sts[t].foreignErr(t); err != nil {
			return nil, nil, err
		}
	}
	for _, table := range tables {
		st, vs := sts[table], vss[table]
		known := map[int]bool{}
		for _, v := range vs {
			known[v.N] = true
		}
		changed := false
		for _, n := range sortedKeys(st.physical) {
			if known[n] {
				continue
			}
			if err := s.adoptVersion(ctx, table, n, n == st.live); err != nil {
				return nil, nil, err
			}
			changed = true
		}
		if repair {
			fixed, err := s.repair(ctx, table, st, vs)
			if err != nil {
				return nil, nil, err
			}
			changed = changed || fixed
		}
		if changed {
			if vs, err = s.store.List(ctx, s.target, table); err != nil {
				return nil, nil, err
			}
		}
		vss[table] = vs
	}
	return sts, vss, nil
}

// adoptVersion records a version table the ledger does not know. Its rows and checksum are
// measured now. A version that is not live is recorded as previous: it existed before trueup
// took the table over, so it is treated like one that was once live.
func (s *Service) adoptVersion(ctx context.Context, table string, n int, live bool) error {
	rows, sum, err := Fingerprint(ctx, s.engine, Physical(table, n))
	if err != nil {
		return err
	}
	state := StatePrevious
	if live {
		state = StateLive
	}
	v := Version{Target: s.target, Table: table, N: n, State: state, Rows: rows, Checksum: sum}
	inserted, err := s.store.adopt(ctx, v)
	if err != nil || !inserted {
		return err
	}
	_, err = s.ledger.Audit(ctx, ledger.Entry{Actor: actor, Action: "version.adopt", Target: table, Outcome: ledger.OutcomeOK,
		Params: map[string]any{"target": s.target, "version": v.Name(), "state": state, "rows": rows, "checksum": sum},
		Detail: fmt.Sprintf("%s was built outside trueup: recorded as %s", v.Physical(), state)})
	return err
}

// repair makes the ledger agree with the engine about which version of table is live, and marks
// versions whose table was dropped outside trueup as retired. It reports whether it changed
// anything.
func (s *Service) repair(ctx context.Context, table string, st engineState, vs []Version) (bool, error) {
	moves := repairMoves(st, vs)
	if len(moves) == 0 {
		return false, nil
	}
	err := s.ledger.Tx(ctx, func(tx *dbsql.Tx) error {
		for _, m := range moves {
			if err := s.store.setState(ctx, tx, s.target, table, m.n, m.to, "", ""); err != nil {
				return err
			}
			_, err := s.ledger.AuditTx(ctx, tx, ledger.Entry{Actor: actor, Action: "version.repair", Target: table,
				Outcome: ledger.OutcomeOK, Params: map[string]any{"target": s.target, "version": "v" + strconv.Itoa(m.n), "from": m.from, "to": m.to},
				Detail: fmt.Sprintf("the ledger said %s was %s; the engine says %s", "v"+strconv.Itoa(m.n), m.from, m.to)})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("views: repair %s: %w", table, err)
	}
	return true, nil
}

// Fingerprint measures a relation: its row count and the portable checksum the ledger records
// for versions, the sum modulo 2^64 of every row's portable hash
// (Dialect.HashSum(Dialect.RowHash(columns, Portable))) as decimal text. Equal tables give equal
// checksums in every engine.
func Fingerprint(ctx context.Context, e tsql.Engine, relation string) (int64, string, error) {
	q, err := FingerprintSQL(ctx, e, relation)
	if err != nil {
		return 0, "", err
	}
	res, err := e.Query(ctx, q)
	if err != nil {
		return 0, "", fmt.Errorf("views: fingerprint %s: %w", relation, err)
	}
	return tsql.AsInt64(res.Rows[0][0]), fmt.Sprint(res.Rows[0][1]), nil
}

// FingerprintSQL is the query Fingerprint runs: SELECT count, checksum FROM relation.
func FingerprintSQL(ctx context.Context, e tsql.Engine, relation string) (string, error) {
	cols, err := e.Columns(ctx, relation)
	if err != nil {
		return "", fmt.Errorf("views: fingerprint %s: %w", relation, err)
	}
	d := e.Dialect()
	return "SELECT count(*), " + d.HashSum(d.RowHash(cols, tsql.HashOptions{Portable: true})) +
		" FROM " + d.QuoteRelation(relation), nil
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
