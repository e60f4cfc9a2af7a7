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

// A swap on a cluster repoints the view on every node, and the nodes are separate servers: no
// statement switches them all at once. What a swap can promise is that every node is checked and
// prepared before any is switched (a node that does not answer then refuses the swap with nothing
// changed), that the switches are issued on all nodes at once, and that the outcome is known per
// node: which switched and which did not (NodeRepoint), so a swap that lost a node part-way can
// be completed on the rest once they answer, or undone on those that switched.

// NodeRepoint is what a repoint did on one node.
type NodeRepoint struct {
	Node     Node
	Switched bool   // every view of the repoint reads its new table on this node
	Error    string // why it did not switch, when it did not
}

// NodeViews is what the views read on one node, as asked now.
type NodeViews struct {
	Node    Node
	Sources map[string]string // view → the relation it reads; a view missing on the node is absent
	Error   string            // the node did not answer (Sources is empty)
}

// NodeRepointer is implemented by an engine whose views live on several servers (a cluster).
type NodeRepointer interface {
	// RepointNodes repoints points on the nodes whose Addr is in addrs (every node when addrs is
	// nil). Each of those must answer first, else it is refused (ErrUnreachable) with nothing
	// changed; every node is prepared before any switches. It returns what each node did, also
	// with an error: a node lost part-way is listed not switched, the others switched.
	RepointNodes(ctx context.Context, points []ViewPoint, addrs []string) ([]NodeRepoint, error)
	// NodeViews reads what views read on every node; a node that does not answer says why.
	NodeViews(ctx context.Context, views []string) []NodeViews
	// AfterPrepare sets a function run once every node of a repoint is prepared and before any
	// is switched (nil: none), for tests that lose a node at that exact moment.
	AfterPrepare(fn func())
}

// ErrHalfDone marks a repoint that switched some nodes and not others: they answer from
// different versions until it is completed or undone.
var ErrHalfDone = errors.New("half done: the nodes read different versions")

// RepointViews repoints the views on every node (RepointNodes).
func (c *chCluster) RepointViews(ctx context.Context, points []ViewPoint) error {
	_, err := c.RepointNodes(ctx, points, nil)
	return err
}

func (c *chCluster) AfterPrepare(fn func()) {
	c.mu.Lock()
	c.afterPrepare = fn
	c.mu.Unlock()
}

// readyOf checks that every node of addrs (all when nil) answers, and returns those nodes; op
// names what is refused when one does not.
func (c *chCluster) readyOf(ctx context.Context, op string, addrs []string) ([]*chNode, error) {
	of := func(addr string) bool { return addrs == nil || slices.Contains(addrs, addr) }
	ci := c.Probe(ctx)
	var down []string
	for _, n := range ci.Nodes {
		if of(n.Addr) && !n.Reachable {
			down = append(down, n.String()+": "+n.Error)
		}
	}
	if len(down) > 0 {
		return nil, fault.New(fault.Refused, "%s: %w: node %s; nothing was changed on any node", op, ErrUnreachable, strings.Join(down, "; node "))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*chNode
	for _, n := range c.nodes {
		if of(n.Addr) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (c *chCluster) RepointNodes(ctx context.Context, points []ViewPoint, addrs []string) ([]NodeRepoint, error) {
	nodes, err := c.readyOf(ctx, "repoint views", addrs)
	if err != nil {
		return nil, err
	}
	outcome := func(switched []bool, errs []error) []NodeRepoint {
		out := make([]NodeRepoint, len(nodes))
		for i, n := range nodes {
			out[i] = NodeRepoint{Node: n.Node, Switched: switched[i]}
			if errs != nil && errs[i] != nil {
				out[i].Error = fault.FirstLine(errs[i].Error())
			}
		}
		return out
	}
	suffix := randomSuffix()
	type plan struct{ prepare, swap, cleanup []string }
	plans := make([]plan, len(nodes))
	index := map[*chNode]int{}
	for i, n := range nodes {
		index[n] = i
	}
	err = each(nodes, func(n *chNode) error {
		exists := map[string]bool{}
		for _, p := range points {
			ok, err := n.eng.exists(ctx, p.View)
			if err != nil {
				return err
			}
			exists[p.View] = ok
		}
		var p plan
		p.prepare, p.swap, p.cleanup = n.eng.dialect.repointPhases(points, exists, suffix)
		plans[index[n]] = p
		for _, s := range p.prepare {
			if err := n.eng.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	switched := make([]bool, len(nodes))
	if err != nil {
		// No view was switched anywhere: take the helpers away on every node.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		terr := each(nodes, func(n *chNode) error {
			_, err := n.eng.tidy(tctx, viewsOf(points), suffix)
			return err
		})
		if terr != nil {
			return outcome(switched, nil), fault.New(fault.Failed, "repoint views: preparing failed, nothing was switched: %w; tidying its helper views failed too (%v): start-up recovery tidies them", err, terr)
		}
		return outcome(switched, nil), fault.New(fault.Failed, "repoint views: preparing failed, nothing was switched: %w", err)
	}
	c.mu.Lock()
	hook := c.afterPrepare
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	errs := make([]error, len(nodes))
	each(nodes, func(n *chNode) error {
		i := index[n]
		for _, s := range plans[i].swap {
			if err := n.eng.Exec(ctx, s); err != nil {
				errs[i] = err
				// this node's views are put back as they were (a RENAME stopped part-way)
				tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if _, terr := n.eng.tidy(tctx, viewsOf(points), suffix); terr != nil {
					errs[i] = fmt.Errorf("%w; tidying its helper views failed too (%v): start-up recovery tidies them", err, terr)
				}
				return errs[i]
			}
		}
		switched[i] = true
		return nil
	})
	out := outcome(switched, errs)
	if slices.Contains(switched, false) {
		var done, not []string
		var joined []error
		for i, n := range nodes {
			if switched[i] {
				done = append(done, n.Node.String())
			} else {
				not = append(not, n.Node.String())
				joined = append(joined, fmt.Errorf("node %s: %w", n.Node, errs[i]))
			}
		}
		if len(done) == 0 {
			return out, fault.New(fault.Failed, "repoint views: no node was switched: %w", errors.Join(joined...))
		}
		return out, fault.Mark(fault.Failed, fmt.Errorf("repoint views: %w (switched: %s; not switched: %s): %w",
			ErrHalfDone, strings.Join(done, ", "), strings.Join(not, ", "), errors.Join(joined...)))
	}
	return out, each(nodes, func(n *chNode) error {
		for _, s := range plans[index[n]].cleanup {
			if err := n.eng.Exec(ctx, s); err != nil {
				return fmt.Errorf("repoint views: done, but a helper view was left (start-up recovery drops it): %w", err)
			}
		}
		return nil
	})
}

func (c *chCluster) NodeViews(ctx context.Context, views []string) []NodeViews {
	c.Probe(ctx)
	c.mu.Lock()
	nodes := append([]*chNode(nil), c.nodes...)
	c.mu.Unlock()
	out := make([]NodeViews, len(nodes))
	each(nodes, func(n *chNode) error {
		i := slices.Index(nodes, n)
		c.mu.Lock()
		nv := NodeViews{Node: n.Node, Sources: map[string]string{}}
		eng := n.eng
		c.mu.Unlock()
		if !nv.Node.Reachable || eng == nil {
			nv.Error = nv.Node.Error
			out[i] = nv
			return nil
		}
		for _, v := range views {
			src, err := eng.ViewSource(ctx, v)
			if errors.Is(err, fault.NotFound.Sentinel()) {
				continue
			}
			if err != nil {
				nv.Error = fault.FirstLine(err.Error())
				nv.Sources = map[string]string{}
				break
			}
			nv.Sources[v] = src
		}
		out[i] = nv
		return nil
	})
	return out
}
