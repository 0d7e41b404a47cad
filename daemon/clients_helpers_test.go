package daemon_test

import (
	"context"
	"testing"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/taxonomy"
)

// clientCtx clears the client's environment variables, so that the test's
// own options decide, and returns a context that ends with the test (or
// after a minute).
func clientCtx(t *testing.T) context.Context {
	t.Helper()
	for _, v := range []string{client.EnvURL, client.EnvToken, client.EnvWorkspace, client.EnvNATSToken} {
		t.Setenv(v, "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// dialClient dials with opts (5 s per request unless set) and closes the
// client when the test ends.
func dialClient(t *testing.T, ctx context.Context, opts client.Options) (*client.Client, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	c, err := client.Dial(ctx, opts)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// directedWorker creates a worker under coord's workspace and sends it a
// directive, which makes it active.
func directedWorker(t *testing.T, ctx context.Context, coord *client.Client) client.Created {
	t.Helper()
	created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coord.SendEnvelope(ctx, client.EnvelopeRequest{
		To: created.Workspace.ID, Type: taxonomy.EnvelopeDirective, Payload: envelope.Payload{Content: "go"},
	}); err != nil {
		t.Fatal(err)
	}
	return created
}

// artifact creates a small provisional artifact checkpoint as c.
func artifact(ctx context.Context, c *client.Client, parent *string) (checkpointchain.Checkpoint, error) {
	return c.CreateCheckpoint(ctx, client.CheckpointRequest{
		Type: taxonomy.CheckpointArtifact, Intent: "test", Parent: parent,
		Status: checkpointchain.StatusProvisional, Confidence: checkpointchain.ConfidenceHigh,
		Payload: checkpointchain.Payload{Content: "x"},
	})
}
