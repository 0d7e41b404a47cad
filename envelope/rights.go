package envelope

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Port right types (PROTOCOL §5.6). A receive right is every workspace's
// own and is never transferred: it is not a row of the rights table.
const (
	RightSend     = "send"
	RightSendOnce = "send_once"
	RightReceive  = "receive"
)

// Right is one row of the port rights table (Channels §2, §9): Holder may
// send envelopes to Target. A send right lasts until revoked; a send_once
// right is consumed by the first envelope it lets through. A right is
// valid while its holder is not terminal.
type Right struct {
	ID     string `json:"right_id"`
	Type   string `json:"right_type"`
	Holder string `json:"holder"`
	Target string `json:"target"`
	// Transit is the id of the envelope carrying the right to a new holder
	// (accepted, not yet delivered): its holder cannot use or transfer it
	// meanwhile. "" for a right at rest.
	Transit string `json:"in_transit,omitempty"`
}

// RightSpec is one entry of an envelope's rights (Envelope §3): a right of
// Type to Target that the sender transfers to the receiver. In a stored
// envelope RightID names the right the runtime moved.
type RightSpec struct {
	Type    string `json:"type"`
	Target  string `json:"target"`
	RightID string `json:"right_id,omitempty"`
}

// MaxRights bounds the rights one envelope carries.
const MaxRights = 16

// checkRightSpecs checks the shape of a request's rights: each a send or
// send_once right (receive rights are never transferable, CH-5) to a
// named workspace, without right_id (the runtime picks the right).
func checkRightSpecs(rs []RightSpec) error {
	if len(rs) > MaxRights {
		return reject(ReasonInvalidStructure, "an envelope carries at most %d rights, not %d", MaxRights, len(rs))
	}
	for i, r := range rs {
		switch {
		case r.Type == RightReceive:
			return reject(ReasonInvalidStructure, "rights[%d]: a receive right is never transferable", i)
		case r.Type != RightSend && r.Type != RightSendOnce:
			return reject(ReasonInvalidStructure, "rights[%d]: type %q is not send or send_once", i, r.Type)
		case r.Target == "":
			return reject(ReasonInvalidStructure, "rights[%d]: target is required", i)
		case r.RightID != "":
			return reject(ReasonInvalidStructure, "rights[%d]: right_id is the runtime's", i)
		}
	}
	return nil
}

// Transfer is one right an envelope moves: Right as held by the sender,
// or, with Mint, a new right the coordinator creates for the transfer.
type Transfer struct {
	Right Right
	Mint  bool
}

// SendPlan is what sending one envelope does to the sender's rights.
type SendPlan struct {
	// Use is the right that lets the envelope through; with type
	// send_once it is consumed by this envelope.
	Use Right
	// Transfers are the rights the envelope carries, in the order of the
	// request's rights.
	Transfers []Transfer
}

// Plan picks, from held (the sender's rights, the table's rows with
// Holder the sender), the right that lets the sender send to `to` and
// the rights specs transfers. The right used is a send right if the
// sender has one, else a send_once right, which the envelope consumes.
// Each transferred right is a distinct one the sender holds of the
// requested type and target, other than a send_once right the envelope
// consumes. With mint (the coordinator, which creates rights, PROTOCOL
// §5.6) a right the sender does not hold is created for the transfer
// instead. A right in transit is not held. Failures are no_send_right.
func Plan(held []Right, from, to string, specs []RightSpec, mint bool) (SendPlan, error) {
	var p SendPlan
	usable := func(r Right) bool { return r.Transit == "" && r.Holder == from }
	found := false
	for _, typ := range []string{RightSend, RightSendOnce} {
		i := slices.IndexFunc(held, func(r Right) bool { return usable(r) && r.Target == to && r.Type == typ })
		if i >= 0 {
			p.Use, found = held[i], true
			break
		}
	}
	if !found {
		return SendPlan{}, reject(ReasonNoSendRight, "workspace %s holds no send right to %s", from, to)
	}
	taken := map[string]bool{}
	if p.Use.Type == RightSendOnce {
		taken[p.Use.ID] = true
	}
	for _, s := range specs {
		i := slices.IndexFunc(held, func(r Right) bool {
			return usable(r) && !taken[r.ID] && r.Type == s.Type && r.Target == s.Target
		})
		switch {
		case i >= 0:
			taken[held[i].ID] = true
			p.Transfers = append(p.Transfers, Transfer{Right: held[i]})
		case mint:
			p.Transfers = append(p.Transfers, Transfer{Right: Right{Type: s.Type, Holder: from, Target: s.Target}, Mint: true})
		default:
			return SendPlan{}, reject(ReasonNoSendRight, "workspace %s holds no %s right to %s to transfer", from, s.Type, s.Target)
		}
	}
	return p, nil
}

// The trail's port right events (Envelope §10), by name: package envelope
// does not import package trail.
const (
	eventRightCreated     = "port_right_created"
	eventRightTransferred = "port_right_transferred"
	eventRightRevoked     = "port_right_revoked"
	eventRightConsumed    = "port_right_consumed"
)

// ErrRightsInconsistent is wrapped by ApplyRightEvent's errors for an
// event that contradicts the rights so far.
var ErrRightsInconsistent = fmt.Errorf("envelope: port right event contradicts the rights so far")

// ApplyRightEvent applies one trail entry of type typ and body to rights
// (by right id): the rights table is the rights created, minus those
// revoked and consumed, with holders moved by transfers (Recovery §3,
// port rights). Other event types leave rights as they are.
func ApplyRightEvent(rights map[string]Right, typ string, body []byte) error {
	var b struct {
		ID         string `json:"right_id"`
		Type       string `json:"right_type"`
		Holder     string `json:"holder"`
		Target     string `json:"target"`
		FromHolder string `json:"from_holder"`
		ToHolder   string `json:"to_holder"`
	}
	switch typ {
	case eventRightCreated, eventRightTransferred, eventRightRevoked, eventRightConsumed:
		if err := json.Unmarshal(body, &b); err != nil {
			return fmt.Errorf("decode %s: %w", typ, err)
		}
	default:
		return nil
	}
	r, ok := rights[b.ID]
	switch {
	case typ == eventRightCreated && ok:
		return fmt.Errorf("%w: right %s created twice", ErrRightsInconsistent, b.ID)
	case typ == eventRightCreated:
		rights[b.ID] = Right{ID: b.ID, Type: b.Type, Holder: b.Holder, Target: b.Target}
	case !ok:
		return fmt.Errorf("%w: %s of unknown right %s", ErrRightsInconsistent, typ, b.ID)
	case typ == eventRightTransferred && r.Holder != b.FromHolder:
		return fmt.Errorf("%w: right %s moves from %s but is held by %s", ErrRightsInconsistent, b.ID, b.FromHolder, r.Holder)
	case typ == eventRightTransferred:
		r.Holder = b.ToHolder
		rights[b.ID] = r
	case r.Holder != b.Holder:
		return fmt.Errorf("%w: %s of right %s held by %s names holder %s", ErrRightsInconsistent, typ, b.ID, r.Holder, b.Holder)
	default: // revoked, consumed
		delete(rights, b.ID)
	}
	return nil
}

// MarshalJSON writes e with rights [] when it carries none (a record of an
// earlier release has no rights field): every envelope has every field of
// Envelope §3.
func (e Envelope) MarshalJSON() ([]byte, error) {
	type plain Envelope
	if e.Rights == nil {
		e.Rights = []RightSpec{}
	}
	return json.Marshal(plain(e))
}
