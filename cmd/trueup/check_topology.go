package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	tsql "trueup/sql"
)

// clusterTopology is a cluster target as `trueup check` shows it: its shards and replicas, and
// each node's reachability and version, asked when the check ran.
type clusterTopology struct {
	Target         string        `json:"target"`
	Cluster        string        `json:"cluster"`
	Shards         int           `json:"shards"`
	Replicas       int           `json:"replicas"`
	DistributedDDL bool          `json:"distributed_ddl"`
	Nodes          []clusterNode `json:"nodes"`
}

type clusterNode struct {
	Shard     int    `json:"shard"`
	Replica   int    `json:"replica"`
	Addr      string `json:"addr"`
	Reachable bool   `json:"reachable"`
	Version   string `json:"version,omitempty"`
	Error     string `json:"error,omitempty"`
}

// topologyOf is target's topology when it is a cluster, asked now (Cluster.Probe).
func topologyOf(ctx context.Context, target string, e tsql.Engine) (clusterTopology, bool) {
	c, ok := e.(tsql.Cluster)
	if !ok || e.Info().Cluster == nil {
		return clusterTopology{}, false
	}
	ci := c.Probe(ctx)
	t := clusterTopology{Target: target, Cluster: ci.Name, Shards: ci.Shards, Replicas: ci.Replicas, DistributedDDL: ci.DistributedDDL}
	for _, n := range ci.Nodes {
		t.Nodes = append(t.Nodes, clusterNode{Shard: n.Shard, Replica: n.Replica, Addr: n.Addr, Reachable: n.Reachable, Version: n.Version.Text, Error: n.Error})
	}
	return t, true
}

// clusters is the topology of every cluster target of a local check's project.
func (d *ruleDone) clusters(ctx context.Context, chosen string) []clusterTopology {
	if d.app == nil {
		return nil
	}
	names := slices.Clone(d.app.Names)
	if chosen != "" && !slices.Contains(names, chosen) {
		names = append(names, chosen)
	}
	var out []clusterTopology
	for _, name := range names {
		if e, ok := d.app.Targets[name]; ok {
			if t, ok := topologyOf(ctx, tsql.Redact(name), e); ok {
				out = append(out, t)
			}
		}
	}
	return out
}

// writeClusters prints each cluster target's topology after a check's results.
func writeClusters(w io.Writer, cs []clusterTopology) {
	for _, c := range cs {
		down := 0
		for _, n := range c.Nodes {
			if !n.Reachable {
				down++
			}
		}
		fmt.Fprintf(w, "\ntarget %s: cluster %s, %d %s × %d %s", c.Target, c.Cluster, c.Shards, pluralWord(c.Shards, "shard", "shards"),
			c.Replicas, pluralWord(c.Replicas, "replica", "replicas"))
		if down > 0 {
			fmt.Fprintf(w, ", %d of %d nodes do not answer", down, len(c.Nodes))
		}
		fmt.Fprintln(w)
		for _, n := range c.Nodes {
			at := "reachable, ClickHouse " + n.Version
			if !n.Reachable {
				at = "UNREACHABLE: " + n.Error
			}
			fmt.Fprintf(w, "  shard %d replica %d  %s  %s\n", n.Shard, n.Replica, n.Addr, at)
		}
	}
}
