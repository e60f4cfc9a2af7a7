package sql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"trueup/fault"
)

// clusterDDL is where a version's statements run: ON CLUSTER from the entry when the nodes share
// a ZooKeeper (distributed DDL), else the same statements on each node.
type clusterDDL struct {
	cluster    string
	database   string
	onCluster  bool
	replicated bool
}

// createVersionStatements are the statements that create t's local tables and its Distributed
// table. key is the sharding expression (from the server, or built from quoted column names).
func (d chDialect) createVersionStatements(x clusterDDL, t ClusterTable, key string) []string {
	on := ""
	if x.onCluster {
		on = " ON CLUSTER " + d.Quote(x.cluster)
	}
	local := d.QuoteRelation(x.database + "." + t.Local())
	defs := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		defs[i] = d.Quote(c.Name) + " " + chType(c)
	}
	engine := "MergeTree()"
	if x.replicated {
		// The replicas of one shard share a path; {shard} and {replica} are each node's macros.
		path, _ := d.Literal(String("/clickhouse/tables/{shard}/" + x.database + "/" + t.Local()))
		engine = "ReplicatedMergeTree(" + path + ", '{replica}')"
	}
	clause := d.tableClause(engine, t.Partition, t.Order)
	lit := func(s string) string { v, _ := d.Literal(String(s)); return v }
	return []string{
		"CREATE TABLE " + local + on + " (" + strings.Join(defs, ", ") + ")" + clause,
		"CREATE TABLE " + d.QuoteRelation(x.database+"."+t.Distributed()) + on + " AS " + local +
			" ENGINE = Distributed(" + lit(x.cluster) + ", " + lit(x.database) + ", " + lit(t.Local()) + ", " + key + ")",
	}
}

// dropVersionStatements undo createVersionStatements.
func (d chDialect) dropVersionStatements(x clusterDDL, t ClusterTable) []string {
	on := ""
	if x.onCluster {
		on = " ON CLUSTER " + d.Quote(x.cluster)
	}
	return []string{
		"DROP TABLE IF EXISTS " + d.QuoteRelation(x.database+"."+t.Distributed()) + on,
		"DROP TABLE IF EXISTS " + d.QuoteRelation(x.database+"."+t.Local()) + on,
	}
}

// shardingKey is the expression rows of cols are sharded by.
func (d chDialect) shardingKey(cols []string) string {
	if len(cols) == 0 {
		return "rand()"
	}
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = d.Quote(c)
	}
	return "cityHash64(" + strings.Join(q, ", ") + ")"
}

// distributedKey reads the sharding key, the fourth argument, out of a Distributed table's
// engine_full, as written there; "" when it has none.
func distributedKey(engineFull string) string {
	toks := distributedArg(engineFull, 3)
	text := make([]string, len(toks))
	for i, t := range toks {
		text[i] = t.Text
	}
	return strings.Join(text, " ")
}

// distributedTable reads the local table's name, the third argument, out of a Distributed
// table's engine_full: a name, quoted or not, or a string.
func distributedTable(engineFull string) string {
	toks := distributedArg(engineFull, 2)
	if len(toks) != 1 {
		return ""
	}
	if t := toks[0]; t.Literal() && t.Text[0] == '\'' {
		return strings.ReplaceAll(strings.TrimSuffix(t.Text[1:], "'"), "\\'", "'")
	}
	return toks[0].Ident()
}

// distributedArg is the tokens of argument i (from 0) of a Distributed table's engine_full.
func distributedArg(engineFull string, i int) []Token {
	depth, arg := 0, 0
	var out []Token
	for _, t := range Lex(engineFull) {
		switch {
		case !t.Quoted() && t.Text == "(":
			depth++
			if depth == 1 {
				continue
			}
		case !t.Quoted() && t.Text == ")":
			depth--
			if depth == 0 {
				return out
			}
		case !t.Quoted() && t.Text == "," && depth == 1:
			arg++
			continue
		}
		if depth >= 1 && arg == i {
			out = append(out, t)
		}
	}
	return out
}

func (c *chCluster) ddlPlace() clusterDDL {
	return clusterDDL{cluster: c.name, database: c.database, onCluster: c.ddl, replicated: c.replicated()}
}

func (c *chCluster) CreateVersion(ctx context.Context, t ClusterTable) error {
	op := "create " + t.Distributed()
	nodes, err := c.ready(ctx, op)
	if err != nil {
		return err
	}
	ci := c.snapshot()
	if ci.Replicas > 1 && !ci.DistributedDDL {
		return fault.New(fault.Refused, "%s: cluster %s has replicas but no ZooKeeper, so its tables cannot replicate", op, c.name)
	}
	// What a failed create drops must be its own: refuse a version any node has already.
	err = each(nodes, func(n *chNode) error {
		for _, name := range []string{t.Local(), t.Distributed()} {
			ok, err := n.eng.exists(ctx, name)
			if err != nil {
				return err
			}
			if ok {
				return fault.New(fault.Conflict, "%s exists already", name)
			}
		}
		return nil
	})
	if err != nil {
		return fault.Mark(fault.Of(err), fmt.Errorf("%s: %w; nothing was changed on any node", op, err))
	}
	key := c.dialect.shardingKey(t.ShardingKey)
	if len(t.ShardingKey) == 0 {
		if key, err = c.liveKey(ctx, t.Name); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	x := c.ddlPlace()
	stmts := c.dialect.createVersionStatements(x, t, key)
	// ON CLUSTER, each statement waits until every node has run it (or the server's
	// distributed_ddl_task_timeout).
	run := func(stmts []string) error { return c.runDDL(ctx, nodes, x, stmts) }
	if err := run(stmts); err != nil {
		// Nothing half-made stays: drop what any node created, on a context of its own.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		drops := c.dialect.dropVersionStatements(x, t)
		var derr error
		if x.onCluster {
			for _, s := range drops {
				derr = errors.Join(derr, c.Exec(ctx, s))
			}
		} else {
			derr = each(nodes, func(n *chNode) error {
				var e error
				for _, s := range drops {
					e = errors.Join(e, n.eng.Exec(ctx, s))
				}
				return e
			})
		}
		if derr != nil {
			return fmt.Errorf("%s: %w; dropping what it created failed too: %v", op, err, derr)
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// liveKey is the sharding key of the Distributed table the view name reads now, "rand()" when
// there is no such view yet or the table has no key.
func (c *chCluster) liveKey(ctx context.Context, name string) (string, error) {
	live, err := c.ViewSource(ctx, name)
	if errors.Is(err, fault.NotFound.Sentinel()) {
		return "rand()", nil
	}
	if err != nil {
		return "", err
	}
	res, err := c.Query(ctx, "SELECT engine, engine_full FROM system.tables WHERE database = currentDatabase() AND name = ?", live)
	if err != nil {
		return "", fmt.Errorf("sharding key of %s: %w", live, err)
	}
	if len(res.Rows) == 0 || AsText(res.Rows[0][0]) != "Distributed" {
		return "", fault.New(fault.Invalid, "view %s reads %s, which is not a Distributed table", name, live)
	}
	if k := distributedKey(AsText(res.Rows[0][1])); k != "" {
		return k, nil
	}
	return "rand()", nil
}

func viewsOf(points []ViewPoint) []string {
	views := make([]string, len(points))
	for i, p := range points {
		views[i] = p.View
	}
	return views
}

// LeftViews lists the views that have helper views left behind on any node (a repoint that
// stopped part-way there). Every node must answer: a node not looked at may hold some.
func (c *chCluster) LeftViews(ctx context.Context) ([]string, error) {
	nodes, err := c.ready(ctx, "look for views a repoint left")
	if err != nil {
		return nil, err
	}
	left := make([][]string, len(nodes))
	err = each(nodes, func(n *chNode) error {
		v, err := n.eng.LeftViews(ctx)
		left[slices.Index(nodes, n)] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, vs := range left {
		for _, v := range vs {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// TidyViews tidies views on every node, as one server's TidyViews does; each line it reports
// names its node.
func (c *chCluster) TidyViews(ctx context.Context, views []string) ([]string, error) {
	nodes, err := c.ready(ctx, "tidy views a repoint left")
	if err != nil {
		return nil, err
	}
	did := make([][]string, len(nodes))
	err = each(nodes, func(n *chNode) error {
		i := slices.Index(nodes, n)
		d, err := n.eng.TidyViews(ctx, views)
		for _, line := range d {
			did[i] = append(did[i], "node "+n.Node.String()+": "+line)
		}
		return err
	})
	return slices.Concat(did...), err
}

// WriteMark of a Distributed table is its local tables' parts on every node, node by node: a
// write through any node to any shard changes it. Every node must answer, or no mark is given.
func (c *chCluster) WriteMark(ctx context.Context, table string) (string, error) {
	where, args := systemTableWhere(table, "name")
	res, err := c.Query(ctx, "SELECT engine, engine_full FROM system.tables WHERE "+where, args...)
	if err != nil {
		return "", fmt.Errorf("write mark of %s: %w", table, err)
	}
	if len(res.Rows) == 0 || AsText(res.Rows[0][0]) != "Distributed" {
		return "", clusterRefusal("write mark of " + table + ", which is not a Distributed table")
	}
	local := distributedTable(AsText(res.Rows[0][1]))
	if local == "" {
		return "", fmt.Errorf("write mark of %s: no local table in %s", table, AsText(res.Rows[0][1]))
	}
	nodes, err := c.ready(ctx, "write mark of "+table)
	if err != nil {
		return "", err
	}
	marks := make([]string, len(nodes))
	err = each(nodes, func(n *chNode) error {
		m, err := n.eng.WriteMark(ctx, local)
		marks[slices.Index(nodes, n)] = n.Addr + "=" + m
		return err
	})
	if err != nil {
		return "", fmt.Errorf("write mark of %s: %w", table, err)
	}
	return strings.Join(marks, ";"), nil
}
