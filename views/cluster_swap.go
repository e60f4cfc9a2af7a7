package views

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"trueup/fault"
	"trueup/ledger"
	tsql "trueup/sql"
)

// A publish on an engine whose views live on several servers (a cluster, tsql.NodeRepointer)
// records, besides its intent and outcome, each node's part: a row per node before the repoint
// (intent) and what the node did after (swap_nodes). When some nodes switched and others did not
// (a node lost part-way), the publish stays an intent, half done, its tables held by its lock
// rows: start-up recovery, or Resume (`trueup swap --resume TABLE`), completes it by repointing
// the nodes that did not switch once they answer; Resume with Undo (`--resume --undo`) instead
// puts the switched nodes back. The rule: a half-done publish is completed, never undone on its
// own: the operator asked for it and most readers may already read the new version; undoing is
// the operator's decision. A publish no node switched is abandoned, as on one server.

// The states of a node's part in a publish.
const (
	NodeIntent      = "intent"       // recorded before the repoint
	NodeSwitched    = "switched"     // its views read the new versions
	NodeNotSwitched = "not switched" // it was not reached, or its repoint failed (Detail)
	NodeUndone      = "undone"       // a resume with undo put it back
)

// NodeState is one node's part in a publish on a cluster, as the ledger records it.
type NodeState struct {
	Node    string    `json:"node"`
	Shard   int       `json:"shard"`
	Replica int       `json:"replica"`
	State   string    `json:"state"`
	Detail  string    `json:"detail,omitempty"`
	At      time.Time `json:"at"`
}

// ErrHalfDone marks a publish that switched some nodes and not others (tsql.ErrHalfDone).
var ErrHalfDone = tsql.ErrHalfDone

// writeNodes records the node rows of publish id (replacing the rows of the same nodes).
func (s *Service) writeNodes(ctx context.Context, id int64, rows []NodeState) error {
	if len(rows) == 0 {
		return nil
	}
	values := make([]string, len(rows))
	args := make([]any, 0, 7*len(rows))
	for i, r := range rows {
		values[i] = "(?, ?, ?, ?, ?, ?, ?)"
		args = append(args, id, r.Node, r.Shard, r.Replica, r.State, r.Detail, r.At)
	}
	err := s.ledger.Tx(ctx, func(tx *dbsql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO swap_nodes (swap_id, node, shard, replica, state, detail, at_time)
			VALUES `+strings.Join(values, ", "), args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("views: record the nodes of #%d: %w", id, err)
	}
	return nil
}

// PublishNodes is each node's part in publish id, by shard and replica; none on one server.
func (s *Service) PublishNodes(ctx context.Context, id int64) ([]NodeState, error) {
	rs, err := s.ledger.DB().QueryContext(ctx, `SELECT node, shard, replica, state, detail, at_time FROM swap_nodes
		WHERE swap_id = ? ORDER BY shard, replica, node`, id)
	if err != nil {
		return nil, fmt.Errorf("views: the nodes of #%d: %w", id, err)
	}
	return ledger.Collect(rs, func(r ledger.Scanner) (NodeState, error) {
		var n NodeState
		return n, r.Scan(&n.Node, &n.Shard, &n.Replica, &n.State, &n.Detail, &n.At)
	})
}

// repoint carries out the repoint of p, whose intent is recorded: on a cluster, node by node,
// with each node's intent recorded before and its outcome after.
func (s *Service) repoint(ctx context.Context, p Publish, points []tsql.ViewPoint) error {
	nr, ok := s.engine.(tsql.NodeRepointer)
	if !ok || s.engine.Info().Cluster == nil {
		return s.engine.RepointViews(ctx, points)
	}
	now := s.ledger.Now()
	var rows []NodeState
	for _, n := range s.engine.Info().Cluster.Nodes {
		rows = append(rows, NodeState{Node: n.Addr, Shard: n.Shard, Replica: n.Replica, State: NodeIntent, At: now})
	}
	if err := s.writeNodes(ctx, p.ID, rows); err != nil {
		return err // before any node was touched: the publish fails with nothing changed
	}
	outs, err := nr.RepointNodes(ctx, points, nil)
	if werr := s.writeNodes(ctx, p.ID, nodeOutcomes(outs, rows, err, s.ledger.Now())); werr != nil {
		s.log.Error("recording what each node did", "swap", p.ID, "err", werr)
	}
	return err
}

// nodeOutcomes are the node rows after a repoint: what each node did, or, for the nodes it did
// not report on (refused before any was touched), not switched with the repoint's error.
func nodeOutcomes(outs []tsql.NodeRepoint, intents []NodeState, err error, at time.Time) []NodeState {
	var rows []NodeState
	for _, r := range intents {
		i := slices.IndexFunc(outs, func(o tsql.NodeRepoint) bool { return o.Node.Addr == r.Node })
		switch {
		case i >= 0 && outs[i].Switched:
			r.State, r.Detail = NodeSwitched, ""
		case i >= 0:
			r.State, r.Detail = NodeNotSwitched, outs[i].Error
		case err != nil:
			r.State, r.Detail = NodeNotSwitched, fault.FirstLine(err.Error())
		default:
			continue
		}
		r.At = at
		rows = append(rows, r)
	}
	return rows
}

// halfDone is the error of a publish left half done: it stays an intent, which recovery or a
// resume completes.
func (s *Service) halfDone(p Publish, cause error) error {
	return fault.Mark(fault.Failed, fmt.Errorf("views: %s %s #%d (%s) is half done: %w; it stays recorded and its tables held: "+
		"start-up recovery or `trueup swap --resume %s` completes it once every node answers (`--resume --undo` puts the switched nodes back)",
		p.Kind, p.Table, p.ID, p.Summary(), cause, p.Table))
}

// ResumeRequest asks to settle the half-done swap or rollback of Table: complete it on the
// nodes that did not switch, or with Undo put back the nodes that did.
type ResumeRequest struct {
	Table string
	Undo  bool
	Actor string
}

// Resume settles the half-done publish of req.Table (see ResumeRequest). Completing needs every
// node that did not switch to answer, undoing every node that did; otherwise it is refused and
// the publish stays half done.
func (s *Service) Resume(ctx context.Context, req ResumeRequest) (Publish, error) {
	req.Actor = orLocal(req.Actor)
	intents, err := s.pending(ctx)
	if err != nil {
		return Publish{}, err
	}
	i := slices.IndexFunc(intents, func(p Publish) bool {
		return (p.Kind == KindSwap || p.Kind == KindRollback) && slices.Contains(p.Tables(), req.Table)
	})
	if i < 0 {
		return Publish{}, conflictf("%s has no half-done swap or rollback in target %s: nothing to resume", req.Table, s.target)
	}
	p := intents[i]
	nr, ok := s.engine.(tsql.NodeRepointer)
	if !ok || s.engine.Info().Cluster == nil {
		if req.Undo {
			return Publish{}, refusef("%s #%d: --undo takes back a swap half done across the nodes of a cluster; target %s is one server", p.Kind, p.ID, s.target)
		}
		if _, err := s.recoverIntent(ctx, p); err != nil {
			return Publish{}, err
		}
		return s.resumed(ctx, p)
	}
	h, unlock, err := s.lock(p.Tables(), req.Actor, "resume")
	if err != nil {
		return Publish{}, err
	}
	defer unlock()
	h.swapID.Store(p.ID)
	if _, err := s.settleOnNodes(ctx, nr, p, req.Undo, req.Actor, unlock); err != nil {
		return Publish{}, err
	}
	return s.resumed(ctx, p)
}

// resumed is p as the ledger has it after a resume; an error when it is still an intent.
func (s *Service) resumed(ctx context.Context, p Publish) (Publish, error) {
	got, err := s.GetPublish(ctx, p.ID)
	if err != nil {
		return got, err
	}
	if got.State == PublishIntent {
		return got, fault.New(fault.Failed, "%s #%d is still half done", p.Kind, p.ID)
	}
	return got, nil
}

// nodeWhere is where one node's views stand for changes: every view at its To, every one at its
// From, some at each (mixed), or elsewhere.
func nodeWhere(changes []Change, sources map[string]string) where {
	at := map[string]int{}
	for _, c := range changes {
		at[c.Table] = -1
		if src, ok := sources[c.Table]; ok {
			if name, n, ok := ParseVersion(src); ok && name == c.Table {
				at[c.Table] = n
			}
		} else if c.From == 0 {
			at[c.Table] = 0 // no view yet: at From
		}
	}
	return classify(changes, at)
}

// settleOnNodes settles p, an intent on a cluster, from what each node's views read now:
// completed on the nodes not switched (or, with undo, put back on the switched ones), abandoned
// when no node switched. When a node it needs does not answer, p stays an intent and the error
// says which. unlock gives the tables back before the listeners hear of a done publish.
func (s *Service) settleOnNodes(ctx context.Context, nr tsql.NodeRepointer, p Publish, undo bool, by string, unlock func()) ([]Repair, error) {
	recorded, err := s.PublishNodes(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	rec := map[string]NodeState{}
	for _, r := range recorded {
		rec[r.Node] = r
	}
	var onTo, onFrom, unknown, elsewhere []NodeState
	var reachableTo, reachableFrom []string
	for _, nv := range nr.NodeViews(ctx, p.Tables()) {
		r := NodeState{Node: nv.Node.Addr, Shard: nv.Node.Shard, Replica: nv.Node.Replica}
		if _, ok := rec[r.Node]; !ok {
			rec[r.Node] = r
		}
		if nv.Error != "" {
			// It does not answer: what it did is what the ledger says, if it says.
			r.Detail = "does not answer: " + nv.Error
			switch rec[r.Node].State {
			case NodeSwitched:
				onTo = append(onTo, r)
			case NodeNotSwitched, NodeUndone:
				onFrom = append(onFrom, r)
			default:
				unknown = append(unknown, r)
			}
			continue
		}
		switch nodeWhere(p.Changes, nv.Sources) {
		case allTo:
			onTo = append(onTo, r)
			reachableTo = append(reachableTo, r.Node)
		case allFrom:
			onFrom = append(onFrom, r)
			reachableFrom = append(reachableFrom, r.Node)
		case mixed:
			onFrom = append(onFrom, r) // a repoint of all its views finishes it either way
			reachableFrom = append(reachableFrom, r.Node)
			reachableTo = append(reachableTo, r.Node)
		default:
			r.Detail = fmt.Sprintf("its views read %v", nv.Sources)
			elsewhere = append(elsewhere, r)
		}
	}
	names := func(ns []NodeState) string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = fmt.Sprintf("%s (shard %d, replica %d)", n.Node, n.Shard, n.Replica)
			if n.Detail != "" {
				out[i] += ": " + n.Detail
			}
		}
		return strings.Join(out, "; ")
	}
	stays := func(why string) error {
		return fault.New(fault.Refused, "views: %s %s #%d (%s) stays half done: %s", p.Kind, p.Table, p.ID, p.Summary(), why)
	}
	if len(elsewhere) > 0 {
		return nil, stays("nodes read versions neither before nor after: " + names(elsewhere) + "; an operator decides")
	}
	now := s.ledger.Now()
	var rows []NodeState
	verb := "recovered after a crash"
	if by != actor {
		verb = "resumed by " + by
	}
	switch {
	case len(unknown) > 0:
		return nil, stays("it is not known whether these nodes switched, and they do not answer: " + names(unknown))
	case undo:
		var lost []NodeState
		for _, n := range onTo {
			if !slices.Contains(reachableTo, n.Node) {
				lost = append(lost, n)
			}
		}
		if len(lost) > 0 {
			return nil, stays("undoing needs every switched node, and these do not answer: " + names(lost))
		}
		var back []tsql.ViewPoint
		for _, c := range p.Changes {
			if c.From == 0 {
				return nil, stays(fmt.Sprintf("%s had no view before: there is nothing to put back", c.Table))
			}
			back = append(back, tsql.ViewPoint{View: c.Table, Table: Physical(c.Table, c.From)})
		}
		if len(reachableTo) > 0 {
			if _, err := nr.RepointNodes(ctx, back, reachableTo); err != nil {
				return nil, stays("putting the switched nodes back failed: " + err.Error())
			}
		}
		for _, a := range reachableTo {
			rows = append(rows, NodeState{Node: a, State: NodeUndone, Detail: verb + " --undo", At: now})
		}
		p.State, p.Detail = PublishFailed, fmt.Sprintf("half done, then taken back (%s --undo): the nodes that had switched were put back", verb)
	case len(onTo) == 0:
		p.State, p.Detail = PublishAbandoned, verb+": no node had been repointed"
	default:
		var lost []NodeState
		var need []string
		for _, n := range onFrom {
			if slices.Contains(reachableFrom, n.Node) {
				need = append(need, n.Node)
			} else {
				lost = append(lost, n)
			}
		}
		if len(lost) > 0 {
			return nil, stays("these nodes have not switched and do not answer: " + names(lost) +
				"; it completes once they answer (`trueup swap --resume " + p.Table + "`), or `--resume --undo` puts the switched nodes back")
		}
		if len(need) > 0 {
			points := make([]tsql.ViewPoint, len(p.Changes))
			for i, c := range p.Changes {
				points[i] = tsql.ViewPoint{View: c.Table, Table: Physical(c.Table, c.To)}
			}
			if _, err := nr.RepointNodes(ctx, points, need); err != nil {
				return nil, stays("repointing the nodes that had not switched failed: " + err.Error())
			}
		}
		for _, a := range need {
			rows = append(rows, NodeState{Node: a, State: NodeSwitched, Detail: verb, At: now})
		}
		p.State, p.Detail = PublishDone, fmt.Sprintf("%s: %d of %d nodes had been repointed; the rest were repointed now",
			verb, len(onTo), len(onTo)+len(onFrom))
	}
	for i := range rows {
		r := rec[rows[i].Node]
		rows[i].Shard, rows[i].Replica = r.Shard, r.Replica
	}
	if err := s.writeNodes(ctx, p.ID, rows); err != nil {
		return nil, err
	}
	return s.settleRecovered(ctx, &p, unlock)
}

// NodeVersion is the version one node of a cluster reads a logical table at, as asked now.
type NodeVersion struct {
	Node      string `json:"node"`
	Shard     int    `json:"shard"`
	Replica   int    `json:"replica"`
	Reachable bool   `json:"reachable"`
	Version   int    `json:"version,omitempty"` // 0: no view, or not a version of the table
	Reads     string `json:"reads,omitempty"`   // the relation the node's view reads
	Error     string `json:"error,omitempty"`   // why the node did not answer
}

// NodeVersions is, on a cluster, the version each node's view of table reads; nil on one server.
// During a half-done swap the nodes differ.
func (s *Service) NodeVersions(ctx context.Context, table string) []NodeVersion {
	nr, ok := s.engine.(tsql.NodeRepointer)
	if !ok || s.engine.Info().Cluster == nil {
		return nil
	}
	var out []NodeVersion
	for _, nv := range nr.NodeViews(ctx, []string{table}) {
		v := NodeVersion{Node: nv.Node.Addr, Shard: nv.Node.Shard, Replica: nv.Node.Replica, Reachable: nv.Error == "", Error: nv.Error}
		v.Reads = nv.Sources[table]
		if name, n, ok := ParseVersion(v.Reads); ok && name == table {
			v.Version = n
		}
		out = append(out, v)
	}
	return out
}

// Mixed reports whether the nodes that answer read different versions.
func Mixed(nodes []NodeVersion) bool {
	seen := -1
	for _, n := range nodes {
		if !n.Reachable {
			continue
		}
		if seen >= 0 && n.Version != seen {
			return true
		}
		seen = n.Version
	}
	return false
}
