package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// chainPage is how many checkpoints a chain page shows.
const chainPage = 100

// trailPage is how many entries a page of the trail's history shows.
const trailPageSize = 50

// call runs op with req (JSON-encoded) as v's token and decodes the reply
// into out; it returns the reply as the daemon sent it.
func (c *Console) call(r *http.Request, v *visit, op string, req, out any) (json.RawMessage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", op, err)
	}
	raw, err := c.cfg.Backend.Call(r.Context(), v.ss.token, op, body)
	if err != nil {
		return nil, err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("decode the reply of %s: %w", op, err)
		}
	}
	return raw, nil
}

// node is a workspace in the tree.
type node struct {
	W        workspace.Workspace
	Children []*node
}

// buildTree nests ws under their parents; a workspace whose parent is not
// in ws is a root of the forest. Siblings keep ws's order.
func buildTree(ws []workspace.Workspace) []*node {
	byID := make(map[string]*node, len(ws))
	for _, w := range ws {
		byID[w.ID] = &node{W: w}
	}
	var roots []*node
	for _, w := range ws {
		n := byID[w.ID]
		if p, ok := byID[w.ParentID()]; ok && w.ParentID() != w.ID {
			p.Children = append(p.Children, n)
		} else {
			roots = append(roots, n)
		}
	}
	return roots
}

type treeData struct {
	Roots  []*node
	Count  int
	States []stateCount
}

type stateCount struct {
	State string
	N     int
}

func (c *Console) tree(w http.ResponseWriter, r *http.Request, v *visit) {
	ws, err := c.cfg.Backend.Workspaces(r.Context(), v.ss.token)
	if err != nil {
		c.failErr(w, r, v, "read the workspaces", err)
		return
	}
	counts := map[string]int{}
	for _, x := range ws {
		counts[string(x.State)]++
	}
	var states []stateCount
	for s, n := range counts {
		states = append(states, stateCount{s, n})
	}
	sort.Slice(states, func(i, j int) bool { return states[i].State < states[j].State })
	c.render(w, r, v, http.StatusOK, "tree", "Workspaces", treeData{Roots: buildTree(ws), Count: len(ws), States: states})
}

type chainData struct {
	W           workspace.Workspace
	Parent      string // W's parent, "" for the root
	Checkpoints []chainRow
	Next        string // the after of the next page, "" on the last
}

type chainRow struct {
	Seq int
	checkpointchain.Checkpoint
}

func (c *Console) chain(w http.ResponseWriter, r *http.Request, v *visit) {
	id := r.PathValue("id")
	ws, err := c.cfg.Backend.Workspaces(r.Context(), v.ss.token)
	if err != nil {
		c.failErr(w, r, v, "read the workspaces", err)
		return
	}
	var d chainData
	found := false
	for _, x := range ws {
		if x.ID == id {
			d.W, d.Parent, found = x, x.ParentID(), true
		}
	}
	if !found {
		c.fail(w, r, v, http.StatusNotFound, fmt.Sprintf("Workspace %s does not exist or its trail is not yours to read.", id))
		return
	}
	after := r.URL.Query().Get("after")
	seq := 0
	if s, err := fmt.Sscan(r.URL.Query().Get("seq"), &seq); s != 1 || err != nil || seq < 0 {
		seq = 0
	}
	cps, err := c.cfg.Backend.Checkpoints(r.Context(), v.ss.token, id, after, chainPage)
	if err != nil {
		c.failErr(w, r, v, "read the checkpoint chain", err)
		return
	}
	for i, cp := range cps {
		d.Checkpoints = append(d.Checkpoints, chainRow{Seq: seq + i + 1, Checkpoint: cp})
	}
	if len(cps) == chainPage {
		q := url.Values{"after": {cps[len(cps)-1].ID}, "seq": {fmt.Sprint(seq + len(cps))}}
		d.Next = "/ws/" + url.PathEscape(id) + "?" + q.Encode()
	}
	c.render(w, r, v, http.StatusOK, "chain", "Chain of "+id, d)
}

type checkpointData struct {
	CP     checkpointchain.Checkpoint
	Parent string // CP's parent, "" for the first of its chain
	Extra  []field
	Raw    json.RawMessage
}

// field is a named JSON value, as sent.
type field struct {
	Name  string
	Value json.RawMessage
}

func (c *Console) checkpoint(w http.ResponseWriter, r *http.Request, v *visit) {
	var d checkpointData
	raw, err := c.call(r, v, "audit.checkpoint.get", wire.GetRequest{ID: r.PathValue("id")}, &d.CP)
	if err != nil {
		c.failErr(w, r, v, "read the checkpoint", err)
		return
	}
	d.Raw, d.Parent = raw, d.CP.ParentID()
	for _, k := range d.CP.Payload.ExtraFields() {
		d.Extra = append(d.Extra, field{k, d.CP.Payload.Extra[k]})
	}
	c.render(w, r, v, http.StatusOK, "checkpoint", "Checkpoint "+d.CP.ID, d)
}

type trailData struct {
	Workspace, EventType, Actor string
	EventTypes                  []trail.EventType
	Entries                     []trail.Entry
	Next                        string // the history's next page
	Live                        string // the live stream's URL with the filters
	Error                       string // a refused read
}

// trailQuery reads the trail filters of a query string.
func trailQuery(q url.Values) wire.TrailQuery {
	return wire.TrailQuery{Workspace: q.Get("ws"), EventType: trail.EventType(q.Get("type")), Actor: q.Get("actor"), After: q.Get("after")}
}

func (c *Console) trailPage(w http.ResponseWriter, r *http.Request, v *visit) {
	tq := trailQuery(r.URL.Query())
	tq.Limit = trailPageSize
	d := trailData{Workspace: tq.Workspace, EventType: string(tq.EventType), Actor: tq.Actor, EventTypes: trail.EventTypes()}
	live := url.Values{}
	for k, val := range map[string]string{"ws": tq.Workspace, "type": string(tq.EventType), "actor": tq.Actor} {
		if val != "" {
			live.Set(k, val)
		}
	}
	d.Live = "/trail/events"
	if len(live) > 0 {
		d.Live += "?" + live.Encode()
	}
	var page wire.TrailPage
	if _, err := c.call(r, v, "audit.trail.read", tq, &page); err != nil {
		f, ok := err.(*Refusal)
		if !ok {
			c.failErr(w, r, v, "read the trail", err)
			return
		}
		d.Error = f.Code + ": " + f.Message
	}
	d.Entries = page.Entries
	if page.Next != nil {
		q := r.URL.Query()
		q.Set("after", *page.Next)
		d.Next = "/trail?" + q.Encode()
	}
	c.render(w, r, v, http.StatusOK, "trail", "Trail", d)
}

type auditData struct {
	Head       wire.TreeHead
	HeadRaw    json.RawMessage
	HeadError  string
	SigChecked bool   // the note's signature verifies with the key the daemon gave
	SigError   string // why not
	Verified   bool   // a verification was asked for
	Workspace  string
	Result     trail.VerifyResult
	VerifyErr  string
}

func (c *Console) audit(w http.ResponseWriter, r *http.Request, v *visit) {
	var d auditData
	raw, err := c.call(r, v, "audit.sth", struct{}{}, &d.Head)
	switch f, ok := err.(*Refusal); {
	case ok:
		d.HeadError = f.Code + ": " + f.Message
	case err != nil:
		c.failErr(w, r, v, "read the signed tree head", err)
		return
	default:
		d.HeadRaw = raw
		if _, err := trail.OpenTreeHead(d.Head.Note, d.Head.PublicKey); err != nil {
			d.SigError = err.Error()
		} else {
			d.SigChecked = true
		}
	}
	q := r.URL.Query()
	if q.Get("verify") != "" {
		d.Verified, d.Workspace = true, q.Get("ws")
		_, err := c.call(r, v, "audit.trail.verify", wire.VerifyRequest{Workspace: d.Workspace}, &d.Result)
		switch f, ok := err.(*Refusal); {
		case ok:
			d.VerifyErr = f.Code + ": " + f.Message
		case err != nil:
			c.failErr(w, r, v, "verify the trail", err)
			return
		}
	}
	c.render(w, r, v, http.StatusOK, "audit", "Audit", d)
}
