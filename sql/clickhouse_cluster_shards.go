package sql

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"trueup/fault"
)

// ShardReader is implemented by a cluster target: where each shard's rows of a relation are read.
type ShardReader interface {
	// ShardsOf follows relation (a view over a Distributed table, or the Distributed table) to
	// its local table on one reachable replica of each shard. nil, nil: relation is not a
	// Distributed table of this cluster, so it is read whole through the entry node.
	ShardsOf(ctx context.Context, relation string) (*ShardLayout, error)
}

// ShardLayout is a relation's layout over the shards of a cluster.
type ShardLayout struct {
	Distributed string // the Distributed table the relation reads
	// Key is the sharding key as the Distributed table states it ("" or "rand()": random
	// placement); KeyColumns the columns it reads, empty when placement is random.
	Key        string
	KeyColumns []string
	Shards     []ShardSource
}

// ShardSource is one shard of a relation: one reachable replica and the local table there.
type ShardSource struct {
	Node     Node
	Engine   Engine // connected to that node alone
	Relation string // the local table
	// Misplaced is a condition on the local table's rows, true of those its sharding key routes
	// to another shard: rows written to a node's local table by hand, past the Distributed
	// table. A key's rows on two shards are then not compared by comparing shard with shard.
	Misplaced string
}

func (c *chCluster) ShardsOf(ctx context.Context, relation string) (*ShardLayout, error) {
	table := relation
	if src, err := c.ViewSource(ctx, relation); err == nil {
		table = src
	} else if !errors.Is(err, fault.NotFound.Sentinel()) {
		return nil, err
	}
	res, err := c.Query(ctx, "SELECT engine, engine_full FROM system.tables WHERE database = currentDatabase() AND name = ?", table)
	if err != nil {
		return nil, fmt.Errorf("shards of %s: %w", relation, err)
	}
	if len(res.Rows) == 0 || AsText(res.Rows[0][0]) != "Distributed" {
		return nil, nil
	}
	full := AsText(res.Rows[0][1])
	if clusterArg := argText(distributedArg(full, 0)); clusterArg != c.name {
		return nil, nil // a Distributed table over another cluster: read it whole
	}
	if db := argText(distributedArg(full, 1)); db != c.database && db != "currentDatabase()" {
		return nil, nil
	}
	local := distributedTable(full)
	if local == "" {
		return nil, nil
	}
	key := distributedArg(full, 3)
	s := &ShardLayout{Distributed: table, Key: exprText(key), KeyColumns: keyColumns(key)}
	shards, err := c.shardReplicas(ctx, "read the shards of "+relation)
	if err != nil {
		return nil, err
	}
	targets, err := c.shardTargets(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range shards {
		src := ShardSource{Node: n.Node, Engine: n.eng, Relation: local}
		for _, t := range targets {
			if t.Num == n.Shard && len(s.KeyColumns) > 0 {
				src.Misplaced = "NOT (" + c.dialect.routed(s.Key, nil, t) + ")"
			}
		}
		s.Shards = append(s.Shards, src)
	}
	return s, nil
}

// shardReplicas is one replica of every shard that answered when last asked, the first by
// replica number; the nodes are asked again only when some shard has none (a read then fails
// with its node's error if one went down since). A shard none of whose replicas answers
// refuses op.
func (c *chCluster) shardReplicas(ctx context.Context, op string) ([]*chNode, error) {
	out, err := c.pickReplicas(op)
	if err != nil {
		c.Probe(ctx)
		out, err = c.pickReplicas(op)
	}
	return out, err
}

func (c *chCluster) pickReplicas(op string) ([]*chNode, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*chNode
	seen := map[int]bool{}
	var down []string
	for _, n := range c.nodes {
		if seen[n.Shard] {
			continue
		}
		if n.Reachable && n.eng != nil {
			seen[n.Shard] = true
			out = append(out, n)
		}
	}
	for _, n := range c.nodes {
		if !seen[n.Shard] {
			down = append(down, n.String()+": "+n.Error)
		}
	}
	if len(down) > 0 {
		return nil, fault.New(fault.Refused, "%s: %w: no replica of a shard answers: node %s", op, ErrUnreachable, strings.Join(down, "; node "))
	}
	return out, nil
}

// argText is an argument of an engine clause as one name: a quoted string or an identifier
// unquoted, anything longer as written.
func argText(toks []Token) string {
	if len(toks) == 1 {
		if t := toks[0]; t.Literal() && t.Text[0] == '\'' {
			return strings.ReplaceAll(strings.TrimSuffix(t.Text[1:], "'"), "\\'", "'")
		}
		return toks[0].Ident()
	}
	text := make([]string, len(toks))
	for i, t := range toks {
		text[i] = t.Text
	}
	return strings.Join(text, "")
}

// exprText writes an expression's tokens back as a person would: cityHash64(id, d).
func exprText(toks []Token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && (toks[i-1].Text == "," || isWordStart(toks[i-1].Text) && isWordStart(t.Text)) {
			b.WriteByte(' ')
		}
		b.WriteString(t.Text)
	}
	return b.String()
}

// keyColumns are the columns a sharding key expression reads: its names that are not called.
func keyColumns(toks []Token) []string {
	var out []string
	for i, t := range toks {
		if t.Literal() || (!t.Quoted() && !isWordStart(t.Text)) {
			continue
		}
		if i+1 < len(toks) && toks[i+1].Text == "(" {
			continue // a function
		}
		out = append(out, t.Ident())
	}
	return out
}

func isWordStart(s string) bool {
	return s != "" && (s[0] == '_' || s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}
