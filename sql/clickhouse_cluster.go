package sql

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"trueup/fault"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// A ClickHouse target URL may name a cluster: clickhouse://h1:9000,h2:9000/db?cluster=NAME. The
// hosts are where trueup asks first (any reachable one answers); the cluster's shards and
// replicas come from that server's system.clusters, and trueup connects to each node it needs.
// Reads and writes of the engine go through the entry connection, to the Distributed tables;
// what must happen on every node (a version's tables, the views) goes to each node itself.

// ClusterInfo is the topology of a cluster target and how its nodes answered when last asked.
type ClusterInfo struct {
	Name     string
	Shards   int
	Replicas int // per shard, the most any shard has
	// DistributedDDL says the nodes share a ZooKeeper: DDL runs ON CLUSTER and local tables of
	// a cluster with replicas are ReplicatedMergeTree.
	DistributedDDL bool
	Nodes          []Node
}

// Node is one server of a cluster.
type Node struct {
	Shard, Replica int
	Addr           string // host:port of its native protocol
	Reachable      bool
	Version        ServerVersion
	Error          string // why it did not answer, when it did not
}

func (n Node) String() string {
	return fmt.Sprintf("%s (shard %d, replica %d)", n.Addr, n.Shard, n.Replica)
}

// Cluster is implemented by an engine opened on a cluster target.
type Cluster interface {
	// Probe asks every node for its version now; Info().Cluster shows the answer afterwards.
	Probe(ctx context.Context) ClusterInfo
	// OnNodes runs fn on every node at once, with an engine connected to that node alone.
	OnNodes(ctx context.Context, fn func(ctx context.Context, n Node, e Engine) error) error
	// CreateVersion creates a version of a logical table on every node (see ClusterTable),
	// after checking that every node answers; nothing is left behind when it fails.
	CreateVersion(ctx context.Context, t ClusterTable) error
}

// ClusterTable is one version of a logical table on a cluster: a local table
// <Name>__v<Version>_local on every node (ReplicatedMergeTree where the shards have replicas,
// MergeTree otherwise) and a Distributed table <Name>__v<Version> over them, which the view
// <Name> on every node reads once RepointViews points it there.
type ClusterTable struct {
	Name      string
	Version   int
	Columns   []Column
	Partition string // the column the local tables are partitioned by; "" for none
	Order     []string
	// ShardingKey names the columns rows are sharded by (a hash of them). Empty: the sharding
	// key of the version the view reads now, or random placement when there is none.
	ShardingKey []string
}

// Local is the name of the version's local tables; Distributed the name of the table over them.
func (t ClusterTable) Local() string       { return t.Distributed() + "_local" }
func (t ClusterTable) Distributed() string { return t.Name + "__v" + strconv.Itoa(t.Version) }

// splitCluster takes trueup's ?cluster= parameter out of a ClickHouse URL.
func splitCluster(url string) (dsn, cluster string, err error) {
	i := strings.IndexByte(url, '?')
	if i < 0 {
		return url, "", nil
	}
	q, err := neturl.ParseQuery(url[i+1:])
	if err != nil {
		return "", "", err
	}
	if !q.Has("cluster") {
		return url, "", nil
	}
	cluster = q.Get("cluster")
	if cluster == "" {
		return "", "", errors.New("?cluster= names no cluster")
	}
	q.Del("cluster")
	dsn = url[:i]
	if len(q) > 0 {
		dsn += "?" + q.Encode()
	}
	return dsn, cluster, nil
}

type chCluster struct {
	*chEngine // the entry: a pool over the URL's hosts
	name      string
	database  string
	ddl       bool
	opts      *clickhouse.Options // what each node's connection copies
	url       string

	mu           sync.Mutex
	nodes        []*chNode
	afterPrepare func() // see NodeRepointer.AfterPrepare
}

type chNode struct {
	Node
	eng *chEngine // nil until the node first answers
}

// joinCluster reads the topology of cluster from the entry server e and connects to each node.
// A node that does not answer is listed unreachable; the target opens all the same.
func joinCluster(ctx context.Context, e *chEngine, opts *clickhouse.Options, url, cluster string) (Engine, error) {
	res, err := e.Query(ctx, "SELECT shard_num, replica_num, host_name, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num", cluster)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("%s: topology of cluster %s: %w", url, cluster, err)
	}
	if len(res.Rows) == 0 {
		defer e.Close()
		names, err := e.Query(ctx, "SELECT DISTINCT cluster FROM system.clusters ORDER BY cluster")
		if err != nil {
			return nil, fmt.Errorf("%s: no cluster %s (listing the others: %w)", url, cluster, err)
		}
		have := make([]string, len(names.Rows))
		for i, r := range names.Rows {
			have[i] = AsText(r[0])
		}
		return nil, fault.New(fault.Invalid, "%s: the server has no cluster %s in system.clusters (it has: %s)", url, cluster, strings.Join(have, ", "))
	}
	c := &chCluster{chEngine: e, name: cluster, database: opts.Auth.Database, opts: opts, url: url}
	// A ZooKeeper is configured exactly when system.zookeeper can be read.
	_, zkErr := e.Query(ctx, "SELECT count() FROM system.zookeeper WHERE path = '/'")
	c.ddl = zkErr == nil
	for _, r := range res.Rows {
		addr := net.JoinHostPort(AsText(r[2]), strconv.FormatInt(AsInt64(r[3]), 10))
		c.nodes = append(c.nodes, &chNode{Node: Node{Shard: int(AsInt64(r[0])), Replica: int(AsInt64(r[1])), Addr: addr}})
	}
	c.Probe(ctx)
	return c, nil
}

func (c *chCluster) Info() Info {
	info := c.chEngine.Info()
	ci := c.snapshot()
	info.Cluster = &ci
	return info
}

func (c *chCluster) snapshot() ClusterInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	ci := ClusterInfo{Name: c.name, DistributedDDL: c.ddl}
	replicas := map[int]int{}
	for _, n := range c.nodes {
		ci.Nodes = append(ci.Nodes, n.Node)
		replicas[n.Shard]++
		ci.Replicas = max(ci.Replicas, replicas[n.Shard])
	}
	ci.Shards = len(replicas)
	return ci
}

// replicated says the local tables are ReplicatedMergeTree.
func (c *chCluster) replicated() bool { return c.ddl && c.snapshot().Replicas > 1 }

func (c *chCluster) Probe(ctx context.Context) ClusterInfo {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(func() { c.probe(ctx, n) })
	}
	wg.Wait()
	return c.snapshot()
}

// probe connects to n when it has no connection yet, else asks its version again.
func (c *chCluster) probe(ctx context.Context, n *chNode) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c.mu.Lock()
	eng := n.eng
	c.mu.Unlock()
	var ver ServerVersion
	var err error
	if eng == nil {
		o := *c.opts
		o.Addr = []string{n.Addr}
		o.Settings = clickhouse.Settings{}
		for k, v := range c.opts.Settings {
			o.Settings[k] = v
		}
		nodeURL := "clickhouse://" + n.Addr + "/" + c.database
		if eng, err = openServer(ctx, &o, nodeURL, c.url+"#"+n.Addr); err == nil {
			ver = eng.info.Version
		}
	} else {
		var res *Result
		if res, err = eng.Query(ctx, "SELECT version()"); err == nil {
			ver = parseVersion(AsText(res.Rows[0][0]))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if eng != nil && n.eng == nil {
		n.eng = eng
	}
	n.Reachable, n.Error = err == nil, ""
	if err != nil {
		n.Error = fault.FirstLine(err.Error())
		return
	}
	// The node's engine keeps the dialect of the version it connected to: statements of an old
	// server still run on a newer one, and an engine's dialect does not change under its users.
	n.Version = ver
}

// ready checks that every node answers; op names what is refused when one does not.
func (c *chCluster) ready(ctx context.Context, op string) ([]*chNode, error) {
	return c.readyOf(ctx, op, nil)
}

// each runs fn on every node of nodes at once and joins their errors, each naming its node.
func each(nodes []*chNode, fn func(n *chNode) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			if err := fn(n); err != nil {
				errs[i] = fmt.Errorf("node %s: %w", n.Node, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *chCluster) OnNodes(ctx context.Context, fn func(ctx context.Context, n Node, e Engine) error) error {
	c.mu.Lock()
	nodes := append([]*chNode(nil), c.nodes...)
	c.mu.Unlock()
	return each(nodes, func(n *chNode) error {
		c.mu.Lock()
		eng := n.eng
		c.mu.Unlock()
		if eng == nil {
			return fmt.Errorf("%w: %s", ErrUnreachable, n.Error)
		}
		return fn(ctx, n.Node, eng)
	})
}

func (c *chCluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.eng != nil {
			n.eng.Close()
		}
	}
	return c.chEngine.Close()
}
