package sql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"trueup/fault"
)

// Adopting on a cluster: an existing Distributed table <t> over a local table L on every node
// becomes version 1 of the logical table <t>: L is renamed to <t>__v1_local on every node, a
// Distributed table <t>__v1 over it takes <t>'s sharding key, and on every node the view <t>
// reads <t>__v1 (it takes the name from the old Distributed table in one RENAME, which is then
// dropped). Every node must answer first, and every node must hold both tables, or nothing is
// done. Between the rename of L and the view taking the name (a few milliseconds, the statements
// issued on all nodes at once) a read of <t> fails: the old Distributed table reads L by its old
// name. Undoing puts the pair back as <t> over <t>_local on every node.

// adoptStatements are the cluster-wide statements of an adopt: the new Distributed table (made
// while L still has its name, so it takes L's columns) and the rename of L.
func (d chDialect) adoptStatements(x clusterDDL, table, local, key string) (create, rename []string) {
	v := ClusterTable{Name: table, Version: 1}
	return []string{d.distributedAs(x, v.Distributed(), local, v.Local(), key)},
		[]string{d.renameOnCluster(x, local, v.Local())}
}

// unadoptStatements undo adoptStatements: a Distributed table <t>__unadopting over <t>_local,
// made while the local tables have their version name, and the rename back.
func (d chDialect) unadoptStatements(x clusterDDL, table, key string) (create, rename []string) {
	v := ClusterTable{Name: table, Version: 1}
	return []string{d.distributedAs(x, table+unadoptingSuffix, v.Local(), table+"_local", key)},
		[]string{d.renameOnCluster(x, v.Local(), table+"_local")}
}

// unadoptingSuffix names the Distributed table an undo makes before it takes the name.
const unadoptingSuffix = "__unadopting"

// adoptedSuffix is what a switch renames the name's old holder to before dropping it.
const adoptedSuffix = "__adopted"

func (d chDialect) onCluster(x clusterDDL) string {
	if x.onCluster {
		return " ON CLUSTER " + d.Quote(x.cluster)
	}
	return ""
}

// distributedAs creates name as a Distributed table with as's columns over the local tables local.
func (d chDialect) distributedAs(x clusterDDL, name, as, local, key string) string {
	lit := func(s string) string { v, _ := d.Literal(String(s)); return v }
	if key == "" {
		key = "rand()"
	}
	return "CREATE TABLE " + d.QuoteRelation(x.database+"."+name) + d.onCluster(x) + " AS " + d.QuoteRelation(x.database+"."+as) +
		" ENGINE = Distributed(" + lit(x.cluster) + ", " + lit(x.database) + ", " + lit(local) + ", " + key + ")"
}

func (d chDialect) renameOnCluster(x clusterDDL, from, to string) string {
	return "RENAME TABLE " + d.QuoteRelation(x.database+"."+from) + " TO " + d.QuoteRelation(x.database+"."+to) + d.onCluster(x)
}

// nameSwitch are the per-node statements that give name to next (a view or table made before)
// in one RENAME, and drop what held it: prepared on every node first, then switched on all at
// once, then cleaned up.
func (d chDialect) nameSwitch(name, next string) (swap, cleanup []string) {
	old := name + adoptedSuffix
	return []string{"RENAME TABLE " + d.QuoteRelation(name) + " TO " + d.QuoteRelation(old) + ", " + d.QuoteRelation(next) + " TO " + d.QuoteRelation(name)},
		[]string{d.Drop(old, false)}
}

// onEvery runs stmts on every node at once.
func onEvery(ctx context.Context, nodes []*chNode, stmts []string) error {
	return each(nodes, func(n *chNode) error {
		for _, s := range stmts {
			if err := n.eng.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
}

// distributedOn reads, on one node, the Distributed table name: its local table and sharding
// key; ok false when name is no Distributed table of this cluster and database there.
func (c *chCluster) distributedOn(ctx context.Context, e *chEngine, name string) (local, key string, ok bool, err error) {
	res, err := e.Query(ctx, "SELECT engine, engine_full FROM system.tables WHERE database = currentDatabase() AND name = ?", name)
	if err != nil || len(res.Rows) == 0 || AsText(res.Rows[0][0]) != "Distributed" {
		return "", "", false, err
	}
	full := AsText(res.Rows[0][1])
	if argText(distributedArg(full, 0)) != c.name {
		return "", "", false, nil
	}
	if db := argText(distributedArg(full, 1)); db != c.database && db != "currentDatabase()" {
		return "", "", false, nil
	}
	return distributedTable(full), exprText(distributedArg(full, 3)), true, nil
}

// AdoptRefusal says why table cannot be adopted on the cluster ("" when it can). Every node
// must answer (else the adopt is refused with nothing changed) and hold table as a Distributed
// table over this cluster, the local table it reads being one the single-server adopt could
// rename (MergeTree family, no materialized view or dictionary on it), and no node may hold the
// names v1 takes.
func (c *chCluster) AdoptRefusal(ctx context.Context, table string) (string, error) {
	nodes, err := c.ready(ctx, "adopt "+table)
	if err != nil {
		return "", err
	}
	v := ClusterTable{Name: table, Version: 1}
	whys := make([]string, len(nodes))
	var mu sync.Mutex
	var locals []string
	err = each(nodes, func(n *chNode) error {
		i := nodeIndex(nodes, n)
		local, _, ok, err := c.distributedOn(ctx, n.eng, table)
		if err != nil {
			return err
		}
		if !ok {
			whys[i] = fmt.Sprintf("on node %s, %s is not a Distributed table over cluster %s in this database; on a cluster trueup adopts a Distributed table and the local table it reads on every node", n.Node, table, c.name)
			return nil
		}
		mu.Lock()
		locals = append(locals, local)
		mu.Unlock()
		found, err := n.eng.exists(ctx, local)
		if err != nil {
			return err
		}
		if !found {
			whys[i] = fmt.Sprintf("node %s has no table %s, which %s reads", n.Node, local, table)
			return nil
		}
		why, err := n.eng.AdoptRefusal(ctx, local)
		if err != nil || why != "" {
			whys[i] = fmt.Sprintf("on node %s: %s", n.Node, why)
			return err
		}
		for _, name := range []string{v.Distributed(), v.Local(), table + adoptedSuffix} {
			found, err := n.eng.exists(ctx, name)
			if err != nil {
				return err
			}
			if found {
				whys[i] = fmt.Sprintf("node %s has a table %s already", n.Node, name)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("adopt %s: %w", table, err)
	}
	for _, w := range whys {
		if w != "" {
			return w, nil
		}
	}
	for _, l := range locals[1:] {
		if l != locals[0] {
			return fmt.Sprintf("the nodes' %s read different local tables (%s, %s)", table, locals[0], l), nil
		}
	}
	return "", nil
}

func nodeIndex(nodes []*chNode, n *chNode) int {
	for i, m := range nodes {
		if m == n {
			return i
		}
	}
	return -1
}

// AdoptTable makes table version 1 on every node (see the top of this file). version must be
// table__v1. A step that fails undoes the steps before it where it can.
func (c *chCluster) AdoptTable(ctx context.Context, table, version string) error {
	op := "adopt " + table
	v := ClusterTable{Name: table, Version: 1}
	if version != v.Distributed() {
		return fault.New(fault.Invalid, "%s: on a cluster version 1 is %s, not %s", op, v.Distributed(), version)
	}
	nodes, err := c.ready(ctx, op)
	if err != nil {
		return err
	}
	local, key, ok, err := c.distributedOn(ctx, c.chEngine, table)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if !ok {
		return fault.New(fault.Refused, "%s: %s is not a Distributed table over cluster %s; nothing was changed", op, table, c.name)
	}
	d := c.dialect
	x := c.ddlPlace()
	create, rename := d.adoptStatements(x, table, local, key)
	next := table + "__adopting"
	undo := func(stmts ...string) error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return onEvery(ctx, nodes, stmts)
	}
	if err := c.runDDL(ctx, nodes, c.ddlPlace(), create); err != nil {
		return errors.Join(fmt.Errorf("%s: %w", op, err), undo(d.Drop(v.Distributed(), false)))
	}
	if err := onEvery(ctx, nodes, []string{"CREATE VIEW " + d.QuoteRelation(next) + " AS SELECT * FROM " + d.QuoteRelation(v.Distributed())}); err != nil {
		return errors.Join(fmt.Errorf("%s: %w; nothing was changed", op, err), undo(d.Drop(next, false), d.Drop(v.Distributed(), false)))
	}
	if err := c.runDDL(ctx, nodes, c.ddlPlace(), rename); err != nil {
		return errors.Join(fmt.Errorf("%s: renaming %s to %s: %w", op, local, v.Local(), err), undo(d.Drop(next, false)))
	}
	swap, cleanup := d.nameSwitch(table, next)
	if err := onEvery(ctx, nodes, swap); err != nil {
		return fmt.Errorf("%s: the view did not take the name on every node: %w", op, err)
	}
	return c.finishAdopt(ctx, table, cleanup...)
}

// FinishAdopt drops, on every node, what an adopt or its undo left under its helper names.
func (c *chCluster) FinishAdopt(ctx context.Context, table, _ string) error {
	return c.finishAdopt(ctx, table)
}

func (c *chCluster) finishAdopt(ctx context.Context, table string, more ...string) error {
	nodes, err := c.ready(ctx, "finish adopting "+table)
	if err != nil {
		return err
	}
	d := c.dialect
	stmts := append(more, d.Drop(table+adoptedSuffix, false), d.Drop(table+"__adopting", false))
	if err := onEvery(ctx, nodes, stmts); err != nil {
		return fmt.Errorf("finish adopting %s: %w", table, err)
	}
	return nil
}

// UnadoptTable puts the pair back on every node: <t> a Distributed table over <t>_local.
func (c *chCluster) UnadoptTable(ctx context.Context, table, version string) error {
	op := "undo adopt of " + table
	v := ClusterTable{Name: table, Version: 1}
	nodes, err := c.ready(ctx, op)
	if err != nil {
		return err
	}
	_, key, ok, err := c.distributedOn(ctx, c.chEngine, v.Distributed())
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if !ok {
		return fault.New(fault.Refused, "%s: %s is not a Distributed table over cluster %s; nothing was changed", op, v.Distributed(), c.name)
	}
	d := c.dialect
	x := c.ddlPlace()
	create, rename := d.unadoptStatements(x, table, key)
	next := table + unadoptingSuffix
	if err := c.runDDL(ctx, nodes, c.ddlPlace(), create); err != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return errors.Join(fmt.Errorf("%s: %w", op, err), onEvery(ctx, nodes, []string{d.Drop(next, false)}))
	}
	if err := c.runDDL(ctx, nodes, c.ddlPlace(), rename); err != nil {
		return fmt.Errorf("%s: renaming %s to %s_local: %w", op, v.Local(), table, err)
	}
	swap, cleanup := d.nameSwitch(table, next)
	if err := onEvery(ctx, nodes, swap); err != nil {
		return fmt.Errorf("%s: the table did not take the name on every node: %w", op, err)
	}
	if err := c.runDDL(ctx, nodes, c.ddlPlace(), []string{"DROP TABLE IF EXISTS " + d.QuoteRelation(x.database+"."+v.Distributed()) + d.onCluster(x)}); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return onEvery(ctx, nodes, cleanup)
}

// adoptSQL is every statement of an adopt and its undo in order, for the golden file.
func (d chDialect) adoptSQL(x clusterDDL, table, local, key string) string {
	var b strings.Builder
	where := "-- on every node"
	if x.onCluster {
		where = "-- once, from the entry node"
	}
	line := func(s string) { b.WriteString(s + ";\n") }
	create, rename := d.adoptStatements(x, table, local, key)
	b.WriteString("-- adopt " + table + ", every node answering\n" + where + "\n")
	for _, s := range create {
		line(s)
	}
	b.WriteString("-- on every node at once: prepare\n")
	line("CREATE VIEW " + d.QuoteRelation(table+"__adopting") + " AS SELECT * FROM " + d.QuoteRelation(table+"__v1"))
	b.WriteString(where + "\n")
	for _, s := range rename {
		line(s)
	}
	swap, cleanup := d.nameSwitch(table, table+"__adopting")
	b.WriteString("-- on every node at once: switch, then clean up\n")
	for _, s := range append(swap, cleanup...) {
		line(s)
	}
	create, rename = d.unadoptStatements(x, table, key)
	b.WriteString("-- undo\n" + where + "\n")
	for _, s := range append(create, rename...) {
		line(s)
	}
	swap, cleanup = d.nameSwitch(table, table+unadoptingSuffix)
	b.WriteString("-- on every node at once: switch\n")
	for _, s := range swap {
		line(s)
	}
	b.WriteString(where + "\n")
	line("DROP TABLE IF EXISTS " + d.QuoteRelation(x.database+"."+table+"__v1") + d.onCluster(x))
	b.WriteString("-- on every node: clean up\n")
	for _, s := range cleanup {
		line(s)
	}
	return b.String()
}
