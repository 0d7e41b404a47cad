package client

import (
	"context"

	"github.com/wacpd/wacpd/wire"
)

// Rights is the reply of rights.list: a workspace's outbound and inbound
// port rights.
type Rights = wire.Rights

// PortRight is one port right.
type PortRight = wire.PortRight

// Rights returns the port rights workspace ws holds and those held to it
// (Channels CH-C7); "" is the caller's own workspace. The caller must see
// ws (else not_found).
func (c *Client) Rights(ctx context.Context, ws string) (Rights, error) {
	var out Rights
	err := c.call(ctx, c.agent("rights.list"), wire.RightsRequest{Workspace: ws}, &out, 0)
	return out, err
}

// RevokeRight revokes port right id (the coordinator's token), for reason
// ("" is coordinator_request), and returns the right as it was.
func (c *Client) RevokeRight(ctx context.Context, id, reason string) (PortRight, error) {
	var out PortRight
	err := c.call(ctx, c.agent("rights.revoke"), wire.RevokeRightRequest{RightID: id, Reason: reason}, &out, 0)
	return out, err
}
