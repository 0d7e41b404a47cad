package wire

// RightsRequest is the body of rights.list: the port rights of Workspace
// (Channels CH-C7, topology queries); "" is the caller's own.
type RightsRequest struct {
	Workspace string `json:"workspace,omitempty"`
}

// RevokeRightRequest is the body of rights.revoke: the coordinator revokes
// port right RightID (Channels §3, revocation), for Reason (recorded in
// port_right_revoked; default coordinator_request).
type RevokeRightRequest struct {
	RightID string `json:"right_id"`
	Reason  string `json:"reason,omitempty"`
}

// PortRight is one row of the port rights table: Holder may send
// envelopes to Target. InTransit is the id of the envelope carrying it to
// a new holder, "" for a right at rest.
type PortRight struct {
	RightID   string `json:"right_id"`
	RightType string `json:"right_type"`
	Holder    string `json:"holder"`
	Target    string `json:"target"`
	InTransit string `json:"in_transit,omitempty"`
}

// Rights is the reply of rights.list: the rights Workspace holds
// (Outbound, Holder the workspace) and those held to it (Inbound, Target
// the workspace), each in right id order.
type Rights struct {
	Workspace string      `json:"workspace"`
	Outbound  []PortRight `json:"outbound"`
	Inbound   []PortRight `json:"inbound"`
}
