package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/taxonomy"
)

// coordTimeout bounds each of the coordinator's requests; verifying a long
// trail takes longer than client.DefaultTimeout.
const coordTimeout = 10 * time.Minute

// dialer is where the bench's clients connect: the daemon's NATS URL (or
// its cluster's servers), the coordinator's token and the NATS token, if
// the daemon runs on an external server.
type dialer struct {
	url, token, natsToken string
}

// options returns the options of a client acting as workspace ws ("": the
// root) with token, whose requests time out after timeout (0: the
// client's default).
func (d dialer) options(token, ws string, timeout time.Duration) client.Options {
	return client.Options{URL: d.url, Token: token, Workspace: ws, NATSToken: d.natsToken, Timeout: timeout}
}

// dialCoordinator connects as the root workspace with the admin token. It
// names the root explicitly, so that $WACP_WORKSPACE cannot make it act as
// another workspace.
func dialCoordinator(ctx context.Context, d dialer) (*client.Client, error) {
	c, err := client.Dial(ctx, d.options(d.token, "", coordTimeout))
	if err != nil {
		return nil, fmt.Errorf("dial coordinator: %w", err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("system.info: %w", err)
	}
	if c.Workspace() == info.RootWorkspace {
		return c, nil
	}
	c.Close()
	c, err = client.Dial(ctx, d.options(d.token, info.RootWorkspace, coordTimeout))
	if err != nil {
		return nil, fmt.Errorf("dial coordinator as %s: %w", info.RootWorkspace, err)
	}
	return c, nil
}

// newWorkers creates n worker workspaces under the root, activates each
// with a directive and dials a client per worker with its own token. On
// error it closes the clients it dialed.
func newWorkers(ctx context.Context, coord *client.Client, d dialer, n int) (_ []*client.Client, err error) {
	workers := make([]*client.Client, 0, n)
	defer func() {
		if err != nil {
			closeAll(workers)
		}
	}()
	for i := range n {
		created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
		if err != nil {
			return nil, fmt.Errorf("create worker %d: %w", i, err)
		}
		id := created.Workspace.ID
		_, err = coord.SendEnvelope(ctx, client.EnvelopeRequest{
			To: id, Type: taxonomy.EnvelopeDirective, Payload: envelope.Payload{Content: "write checkpoints"},
		})
		if err != nil {
			return nil, fmt.Errorf("direct worker %s: %w", id, err)
		}
		c, err := client.Dial(ctx, d.options(created.Token, id, 0))
		if err != nil {
			return nil, fmt.Errorf("dial worker %s: %w", id, err)
		}
		workers = append(workers, c)
	}
	return workers, nil
}

func closeAll(cs []*client.Client) {
	for _, c := range cs {
		c.Close()
	}
}
