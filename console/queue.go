package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
)

// pendingFields are checkpoint_pending's nine fields, in the order of
// seed 003 (operator_interface_spec §18.7).
var pendingFields = []string{"checkpoint_type", "trigger_description", "canonical_request_summary", "scope_delta",
	"risk_classification", "side_effect_class", "policy_basis", "authorization_statement", "trust_state"}

// gateView is a gate as the queue shows it: the decoded gate for the
// page's choices, and what the daemon sent, shown as sent.
type gateView struct {
	highway.Gate
	Raw           json.RawMessage // the gate as the daemon sent it
	Fields        []field         // its members in the daemon's order
	PendingFields []field         // checkpoint_pending's nine fields, when the subject is a control-plane checkpoint
	Need          user.Need       // the capabilities that answer it
	// CanAnswer reports whether the user holds one of Need's
	// capabilities (the daemon still checks its scope).
	CanAnswer bool
}

// IsCheckpoint reports whether the gate holds a control-plane checkpoint
// (its subject has checkpoint_pending).
func (g gateView) IsCheckpoint() bool { return g.PendingFields != nil }

// newGateView decodes one gate of the daemon's reply for who.
func newGateView(raw json.RawMessage, who Identity) (gateView, error) {
	g := gateView{Raw: raw}
	if err := json.Unmarshal(raw, &g.Gate); err != nil {
		return g, err
	}
	fields, err := orderedFields(raw)
	if err != nil {
		return g, err
	}
	g.Fields = fields
	g.PendingFields = checkpointPending(g.Subject)
	g.Need = user.Needs()["gate."+string(g.Type)]
	g.CanAnswer = who.Kind == KindUser && who.Active && ((g.Need.Own != "" && who.Has(g.Need.Own)) || (g.Need.Any != "" && who.Has(g.Need.Any)))
	return g, nil
}

// checkpointPending returns the nine fields of a subject's
// checkpoint_pending as the daemon sent them, in the seed's order; nil
// when the subject has none or lacks one (nothing is derived).
func checkpointPending(subject json.RawMessage) []field {
	var s struct {
		Pending map[string]json.RawMessage `json:"checkpoint_pending"`
	}
	if json.Unmarshal(subject, &s) != nil || s.Pending == nil {
		return nil
	}
	out := make([]field, 0, len(pendingFields))
	for _, f := range pendingFields {
		var v string
		if json.Unmarshal(s.Pending[f], &v) != nil {
			return nil
		}
		out = append(out, field{Name: f, Value: s.Pending[f]})
	}
	return out
}

// Text returns a field's value as text: a JSON string's content,
// anything else as its JSON.
func (f field) Text() string {
	var s string
	if json.Unmarshal(f.Value, &s) == nil {
		return s
	}
	return pretty(f.Value)
}

type queueData struct {
	Gates    []gateView
	Resolved *gateView // the gate just answered (?done=ID)
}

// readOnly refuses an auditor a user's page.
func (c *Console) readOnly(w http.ResponseWriter, r *http.Request, v *visit) bool {
	if v.who.Kind == KindUser {
		return false
	}
	c.fail(w, r, v, http.StatusForbidden, "The highway queue is the users': the daemon serves highway.* to user tokens only, and an auditor's console is read-only.")
	return true
}

func (c *Console) queue(w http.ResponseWriter, r *http.Request, v *visit) {
	if c.readOnly(w, r, v) {
		return
	}
	var reply struct {
		Gates []json.RawMessage `json:"gates"`
	}
	if _, err := c.call(r, v, "highway.queue", wire.HighwayQueueRequest{}, &reply); err != nil {
		c.failErr(w, r, v, "read the queue", err)
		return
	}
	var d queueData
	for _, raw := range reply.Gates {
		g, err := newGateView(raw, v.who)
		if err != nil {
			c.failErr(w, r, v, "decode the queue", err)
			return
		}
		d.Gates = append(d.Gates, g)
	}
	if id := r.URL.Query().Get("done"); id != "" {
		if g, err := c.gate(r, v, id); err == nil && !g.Pending() {
			d.Resolved = &g
		}
	}
	c.render(w, r, v, http.StatusOK, "queue", "Highway queue", d)
}

// gate reads gate id.
func (c *Console) gate(r *http.Request, v *visit, id string) (gateView, error) {
	raw, err := c.call(r, v, "highway.get", wire.HighwayGetRequest{ID: id}, nil)
	if err != nil {
		return gateView{}, err
	}
	return newGateView(raw, v.who)
}

type confirmData struct {
	G             gateView
	Decision      string
	Modifications string
}

// resolve answers a gate. An approval (approve or modify) of an
// irreversible gate is first shown again with a second confirmation; only
// the confirmed form sends confirm: true.
func (c *Console) resolve(w http.ResponseWriter, r *http.Request, v *visit) {
	if c.readOnly(w, r, v) {
		return
	}
	id := r.PathValue("id")
	req, err := parseResolveForm(id, r.PostForm)
	if err != nil {
		c.fail(w, r, v, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "console: "))
		return
	}
	g, err := c.gate(r, v, id)
	if err != nil {
		c.failErr(w, r, v, "read gate "+id, err)
		return
	}
	if g.Irreversible && req.Action != highway.Reject && !req.Confirm {
		c.render(w, r, v, http.StatusOK, "confirm", "Confirm an irreversible approval",
			confirmData{G: g, Decision: r.PostForm.Get("decision"), Modifications: string(req.Modifications)})
		return
	}
	if _, err := c.call(r, v, "highway.resolve", req, nil); err != nil {
		c.failErr(w, r, v, "answer gate "+id, err)
		return
	}
	http.Redirect(w, r, "/queue?"+url.Values{"done": {id}}.Encode(), http.StatusSeeOther)
}
