package envelope

import "github.com/wacpd/wacpd/taxonomy"

// Party is what Check needs to know of a sender or receiver.
type Party struct {
	ID       string
	Role     string
	Parent   string // "" for the root
	Delegate bool
	Exists   bool
	Sealed   bool // integrating or terminal: the inbox accepts nothing
	Terminal bool
}

// Check validates an envelope in the order structure → type → matrix →
// right (the first failure wins, WACP Envelope §4):
//
//   - target_not_found: the receiver does not exist;
//   - target_terminal: the receiver is integrating or terminal (sealed inbox);
//   - invalid_type: the type is not a base type nor registered;
//   - permission_denied: no permission-matrix row (base, taxonomy, or the
//     delegate's subtree rows) allows sender role → type → receiver role;
//   - no_send_right: the sender holds no send right to the receiver. Send
//     rights are created with each workspace, between it and its parent,
//     both ways, and die when the holder is terminal.
//
// Check takes the implicit rights of HasSendRight; the runtime, which
// keeps the rights table, calls CheckSend.
func Check(tax *taxonomy.Taxonomy, from, to Party, typ string) error {
	return CheckSend(tax, from, to, typ, HasSendRight(from, to), true)
}

// CheckSend is Check with the send right looked up by the caller: holds
// reports whether from holds a valid right (send or send_once) to to in
// the rights table, visible whether from may see to. A sender that may
// not see the receiver and holds no right to it is refused no_send_right
// before anything else, whether or not the receiver exists, so that
// validation does not tell it which ids exist (WACP lets the checks run
// in any order, Envelope §12). A terminal sender holds no valid right.
func CheckSend(tax *taxonomy.Taxonomy, from, to Party, typ string, holds, visible bool) error {
	holds = holds && !from.Terminal
	switch {
	case !visible && !holds:
		return reject(ReasonNoSendRight, "workspace %s holds no send right to %s", from.ID, to.ID)
	case !to.Exists:
		return reject(ReasonTargetNotFound, "workspace %s does not exist", to.ID)
	case to.Sealed:
		return reject(ReasonTargetTerminal, "workspace %s no longer accepts envelopes", to.ID)
	case !tax.HasEnvelopeType(typ):
		return reject(ReasonInvalidType, "envelope type %q is not registered in taxonomy %s", typ, tax.ID())
	case !allowed(tax, from, to, typ):
		return reject(ReasonPermissionDenied, "the permission matrix has no row %s → %s → %s", from.Role, typ, to.Role)
	case !holds:
		return reject(ReasonNoSendRight, "workspace %s holds no send right to %s", from.ID, to.ID)
	}
	return nil
}

func allowed(tax *taxonomy.Taxonomy, from, to Party, typ string) bool {
	if tax.CanSend(from.Role, typ, to.Role) {
		return true
	}
	// Delegate rows, scoped to the delegate's children (Roles §4).
	switch {
	case from.Delegate && to.Parent == from.ID:
		return typ == taxonomy.EnvelopeDirective || typ == taxonomy.EnvelopeFeedback
	case to.Delegate && from.Parent == to.ID:
		return typ == taxonomy.EnvelopeQuery
	}
	return false
}

// HasSendRight reports whether from holds a send right to to: a workspace
// and its parent hold rights to each other while the holder is not terminal.
func HasSendRight(from, to Party) bool {
	return !from.Terminal && (to.Parent == from.ID || from.Parent == to.ID)
}
