package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/wacpd/wacpd/carp"
)

// ticket is one ticket of the store, as the actions return it.
type ticket struct {
	ID       string   `json:"ticket_id"`
	Title    string   `json:"title"`
	Status   string   `json:"status"`
	Customer string   `json:"customer"`
	Comments []string `json:"comments"`
	Refunded float64  `json:"refunded"`
}

// store is the in-memory ticket store the actions work on. It does not
// lock: the server calls actions with its mutex held.
type store struct {
	tickets map[string]*ticket
	refunds int // refunds issued, numbering them, ...
}

// newStore returns a store seeded with the tickets T-1 and T-2.
func newStore() *store {
	return &store{tickets: map[string]*ticket{
		"T-1": {ID: "T-1", Title: "Printer on fire", Status: "open", Customer: "c-17", Comments: []string{}},
		"T-2": {ID: "T-2", Title: "Invoice sent twice", Status: "open", Customer: "c-42", Comments: []string{}},
	}}
}

// result is what an action did: its output (any JSON value) and side
// effects, or why it failed.
type result struct {
	output  any
	effects []carp.SideEffect
	err     *carp.ExecutionError
}

// actions is every action the service serves, by action id: the atlas
// examples/atlas/acme-support.json declares exactly these (a test checks).
var actions = map[string]func(*store, map[string]any) result{
	"ticket.get":     (*store).get,
	"ticket.list":    (*store).list,
	"ticket.comment": (*store).comment,
	"ticket.delete":  (*store).delete,
	"billing.refund": (*store).refund,
}

func (s *store) get(p map[string]any) result {
	t, r := s.ticket(p)
	if t == nil {
		return r
	}
	return result{output: t}
}

func (s *store) list(map[string]any) result {
	out := []*ticket{}
	for _, id := range slices.Sorted(maps.Keys(s.tickets)) {
		out = append(out, s.tickets[id])
	}
	return result{output: map[string]any{"tickets": out}}
}

func (s *store) comment(p map[string]any) result {
	t, r := s.ticket(p)
	if t == nil {
		return r
	}
	body, ok := p["body"].(string)
	if !ok {
		return failure(parameterCode(p, "body"), "body must be a string")
	}
	t.Comments = append(t.Comments, body)
	return result{
		output:  map[string]any{"ticket_id": t.ID, "comments": len(t.Comments)},
		effects: []carp.SideEffect{{Type: "ticket_updated", Target: t.ID, Reversible: true}},
	}
}

func (s *store) delete(p map[string]any) result {
	t, r := s.ticket(p)
	if t == nil {
		return r
	}
	delete(s.tickets, t.ID)
	return result{
		output:  map[string]any{"ticket_id": t.ID, "deleted": true},
		effects: []carp.SideEffect{{Type: "ticket_deleted", Target: t.ID, Reversible: false}},
	}
}

func (s *store) refund(p map[string]any) result {
	t, r := s.ticket(p)
	if t == nil {
		return r
	}
	amount, ok := p["amount"].(float64)
	if !ok || amount < 0 {
		return failure(parameterCode(p, "amount"), "amount must be a number of at least 0")
	}
	s.refunds++
	id := fmt.Sprintf("R-%d", s.refunds)
	t.Refunded += amount
	return result{
		output: map[string]any{"refund_id": id, "ticket_id": t.ID, "amount": amount},
		effects: []carp.SideEffect{{Type: "refund_issued", Target: t.ID, Reversible: false,
			Details: map[string]any{"refund_id": id, "amount": amount}}},
	}
}

// ticket returns the ticket p's ticket_id names, or nil and the failure.
func (s *store) ticket(p map[string]any) (*ticket, result) {
	id, ok := p["ticket_id"].(string)
	if !ok {
		return nil, failure(parameterCode(p, "ticket_id"), "ticket_id must be a string")
	}
	t, ok := s.tickets[id]
	if !ok {
		return nil, failure(codeTicketNotFound, fmt.Sprintf("no ticket %q", id))
	}
	return t, result{}
}

// codeTicketNotFound is this service's error code for an unknown ticket.
const codeTicketNotFound = "TICKET_NOT_FOUND"

// parameterCode is the code of a bad parameter: MISSING_FIELD when p has
// no name, else INVALID_FORMAT.
func parameterCode(p map[string]any, name string) string {
	if _, ok := p[name]; !ok {
		return carp.CodeMissingField
	}
	return carp.CodeInvalidFormat
}

func failure(code, msg string) result {
	return result{err: &carp.ExecutionError{Code: code, Message: msg}}
}
