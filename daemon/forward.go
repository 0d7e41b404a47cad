package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/wacpd/wacpd/placement"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// The coordinator's requests across daemons. The cluster's mapping sends
// every request of the root's agent (wacp.v1.agent.<root>.<op>) to the
// root's partition, whose daemon is the deployment's home. A request that
// names a workspace or checkpoint of another daemon's partition is relayed
// by the home daemon to that partition's subject,
// wacp.v1.p.<partition>.agent.<root>.<op>, with the caller's headers (its
// Wacp-Token: every daemon of the deployment knows the coordinator's), and
// the owner's answer goes back to the caller as it is. The owner runs it on
// its own copy of the root. A relay is one more request on the cluster,
// not a commit: nothing is stored on the way, and a caller that gets no
// answer retries as it would with one daemon.

// PartitionPrefix starts the subjects a daemon of a deployment serves its
// partitions' agent requests on: wacp.v1.p.<partition>.agent.<ws>.<op>.
const PartitionPrefix = wire.Prefix + "p."

// DaemonPrefix starts the subjects a daemon of a deployment serves its own
// system, audit and highway endpoints on: wacp.v1.d.<daemon id>.<op>.
const DaemonPrefix = wire.Prefix + "d."

// forwardedHeader marks a relayed request with the relaying daemon's id: a
// relayed request is never relayed again.
const forwardedHeader = "Wacp-Forwarded"

// partitionSubject is op's subject for workspace ws's agent on partition p.
func partitionSubject(p int, ws, op string) string {
	return PartitionPrefix + strconv.Itoa(p) + ".agent." + ws + "." + op
}

// agentSubject splits an agent request's subject, either
// wacp.v1.agent.<ws>.<op> or wacp.v1.p.<n>.agent.<ws>.<op>: its workspace,
// its op, and its partition (-1 for the first form).
func agentSubject(subj string) (ws, op string, part int, ok bool) {
	rest, found := strings.CutPrefix(subj, wire.AgentPrefix)
	part = -1
	if !found {
		var n string
		if rest, found = strings.CutPrefix(subj, PartitionPrefix); !found {
			return "", "", 0, false
		}
		if n, rest, found = strings.Cut(rest, ".agent."); !found {
			return "", "", 0, false
		}
		p, err := strconv.Atoi(n)
		if err != nil || p < 0 {
			return "", "", 0, false
		}
		part = p
	}
	ws, op, found = strings.Cut(rest, ".")
	if !found || ws == "" || op == "" {
		return "", "", 0, false
	}
	return ws, op, part, true
}

// targetField names, for each agent op the coordinator may address to a
// workspace of another partition, the body field that names it (for
// checkpoint.get a checkpoint id, minted in its workspace's partition).
// Every other op of the root is the home daemon's.
var targetField = map[string]string{
	"workspace.get": "id", "workspace.abort": "id", "workspace.suspend": "id", "workspace.resume": "id",
	"workspace.budget": "id", "workspace.priority": "id", "workspace.visibility.grant": "id",
	"workspace.migrate": "id", "workspace.migrate.complete": "id", "workspace.transfer": "id",
	"checkpoint.get": "id", "checkpoint.list": "workspace", "checkpoint.head": "workspace",
	"integrate": "workspace", "conflict.resolve": "workspace", "rights.list": "workspace",
	"envelope": "to", "workspace.create": "parent", "workspace.list": "parent",
}

// place decides where a request of the root's agent runs on a deployment:
// here, with the partition a new child of the root goes to (mint >= 0) or
// the owned partition of the workspace it acts on (here >= 0), whose lease
// the daemon must hold; or relayed to another partition's daemon (relay >=
// 0). Only the coordinator's requests through the root are placed; every
// other one runs here. body is the request's, not yet checked: a body place
// cannot read runs here and is refused by its handler.
func (pt *partitions) place(c caller, op string, subjPart int, body []byte) (mint, relay, here int) {
	mint, relay, here = -1, -1, -1
	field, ok := targetField[op]
	if !ok || c.ws != pt.root || c.p.Kind != principal.KindCoordinator {
		return mint, relay, here
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(body, &fields)
	var target string
	_ = json.Unmarshal(fields[field], &target)
	var p int
	switch {
	case op == "workspace.create" && (target == "" || target == pt.root):
		// A child of the root: to the partition its request was
		// addressed to, or, on the home partition's subject, the next of
		// the round robin over all partitions.
		if subjPart >= 0 && subjPart != pt.home {
			p = subjPart
		} else {
			p = int(pt.next.Add(1)-1) % pt.d.Partitions
		}
		if pt.d.owns(p) {
			return p, -1, p
		}
		return -1, p, -1
	case target == "" || target == pt.root:
		return mint, relay, here
	default:
		p = placement.Partition(target, pt.d.Partitions)
	}
	if pt.d.owns(p) {
		return -1, -1, p
	}
	return -1, p, -1
}

// relay sends req on to partition p's daemon and answers the caller with
// its answer: the body and the headers (an error's code) as they are. A
// partition nobody serves now (its daemon is down) is unavailable.
func (r *Daemon) relay(ctx context.Context, ep endpoint, req micro.Request, ws string, p int) {
	if req.Headers().Get(forwardedHeader) != "" {
		r.replyErr(ep.name, req, runtime.Refuse(wire.CodeUnavailable, "partition %d is not served by daemon %s, which a relayed request reached", p, r.cfg.Deployment.DaemonID))
		return
	}
	resp, err := r.askPartition(ctx, p, ws, ep.op, nats.Header(req.Headers()), req.Data(), "")
	if err != nil {
		r.replyErr(ep.name, req, err)
		return
	}
	r.metrics.request(ep.name, "relayed")
	if err := req.Respond(resp.Data, micro.WithHeaders(micro.Headers(resp.Header))); err != nil {
		r.cfg.Logger.Warn("reply", "subject", req.Subject(), "err", err)
	}
}

// askPartition sends a request of workspace ws's agent, op with body and
// the headers hdr, to partition p's daemon, marked as relayed by this
// daemon, and returns its answer (an error reply included). A partition
// nobody serves now (its daemon is down), or whose daemon does not answer
// in time, is unavailable; why adds to the reason.
func (r *Daemon) askPartition(ctx context.Context, p int, ws, op string, hdr nats.Header, body []byte, why string) (*nats.Msg, error) {
	msg := nats.NewMsg(partitionSubject(p, ws, op))
	msg.Data = body
	for k, v := range hdr {
		msg.Header[k] = v
	}
	msg.Header.Set(forwardedHeader, r.cfg.Deployment.DaemonID)
	resp, err := r.nc.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, runtime.Refuse(wire.CodeUnavailable, "partition %d has no daemon serving it now%s; retry when its daemon is back", p, why)
	case err != nil:
		return nil, runtime.Refuse(wire.CodeUnavailable, "partition %d's daemon did not answer%s: %v", p, why, err)
	}
	return resp, nil
}

// gathers reports whether a workspace.list of caller c with parent is the
// whole deployment's: the coordinator's, through the root, for the root's
// children or every workspace, and not itself a relayed part of one.
func (pt *partitions) gathers(c caller, parent string) bool {
	return pt != nil && !c.relayed && c.ws == pt.root && c.p.Kind == principal.KindCoordinator &&
		(parent == "" || parent == pt.root)
}

// gatherList completes page, this daemon's page of a workspace.list, with
// the same page of every partition this daemon does not own, asked in
// parallel: the coordinator sees one list, in id order (creation order),
// each workspace once (every daemon has the root). A partition without a
// daemon now makes the list unavailable rather than partial.
func (r *Daemon) gatherList(ctx context.Context, c caller, body []byte, page wire.WorkspacePage, limit int) (wire.WorkspacePage, error) {
	pt := r.parts
	type part struct {
		p    int
		page wire.WorkspacePage
		err  error
	}
	var asked []int
	for p := range pt.d.Partitions {
		if !pt.d.owns(p) {
			asked = append(asked, p)
		}
	}
	results := make(chan part, len(asked))
	for _, p := range asked {
		go func() {
			res := part{p: p}
			resp, err := r.askPartition(ctx, p, pt.root, "workspace.list", nats.Header{TokenHeader: {c.token}}, body, ": the list would be partial")
			switch {
			case err != nil:
				res.err = err
			case resp.Header.Get(micro.ErrorCodeHeader) != "":
				res.err = runtime.Refuse(wire.CodeUnavailable, "partition %d's daemon refused the list: %s", p, resp.Data)
			default:
				if err := json.Unmarshal(resp.Data, &res.page); err != nil {
					res.err = fmt.Errorf("partition %d's list: %w", p, err)
				}
			}
			results <- res
		}()
	}
	// Each daemon's page is its workspaces in id order after the same
	// id; one that has more stops at its last id, and nothing past the
	// smallest such id may be answered yet: another daemon's workspaces
	// below it would be skipped by the next page.
	seen := map[string]bool{}
	all := []*workspace.Workspace{}
	bound := ""
	add := func(pg wire.WorkspacePage) {
		for _, w := range pg.Workspaces {
			if !seen[w.ID] {
				seen[w.ID] = true
				all = append(all, w)
			}
		}
		if pg.Next != nil && (bound == "" || *pg.Next < bound) {
			bound = *pg.Next
		}
	}
	add(page)
	var firstErr error
	for range asked {
		res := <-results
		if res.err != nil && firstErr == nil {
			firstErr = res.err
		}
		if res.err == nil {
			add(res.page)
		}
	}
	if firstErr != nil {
		return wire.WorkspacePage{}, firstErr
	}
	slices.SortFunc(all, func(a, b *workspace.Workspace) int { return strings.Compare(a.ID, b.ID) })
	more := bound != ""
	if more {
		n, _ := slices.BinarySearchFunc(all, bound, func(w *workspace.Workspace, id string) int { return strings.Compare(w.ID, id) })
		all = all[:min(n+1, len(all))] // the bound itself is in the page that named it
	}
	// Each daemon's page fits the reply's byte budget; together they may
	// not: cut the merged page as one daemon's is cut.
	all, cut, err := pageOf(all, limit, r.replyBudget())
	if err != nil {
		return wire.WorkspacePage{}, err
	}
	more = more || cut
	out := wire.WorkspacePage{Workspaces: all}
	if more && len(all) > 0 {
		out.Next = &all[len(all)-1].ID
	}
	return out, nil
}
