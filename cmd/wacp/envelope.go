package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/envelope"
)

var envelopeSend = sendCmd("envelope send", (*client.Client).SendEnvelope)

// sendCmd returns a command that sends an envelope with send: envelope
// send (as an agent) and highway inject (as a person).
func sendCmd(cmd string, send func(*client.Client, context.Context, client.EnvelopeRequest) (envelope.Envelope, error)) func(*cli, []string) error {
	return func(c *cli, args []string) error { return c.sendEnvelope(cmd, send, args) }
}

func (c *cli) sendEnvelope(cmd string, send func(*client.Client, context.Context, client.EnvelopeRequest) (envelope.Envelope, error), args []string) error {
	fs := c.flags(cmd, cmd+" --to WS --type T [--content C | --file F | -] [--format F] [--priority P] [--in-reply-to ID]")
	var req client.EnvelopeRequest
	fs.StringVar(&req.To, "to", "", "receiving workspace (required)")
	fs.StringVar(&req.Type, "type", "", "envelope type, e.g. directive, feedback, query (required)")
	content := fs.String("content", "", "message content")
	file := fs.String("file", "", "read the content from this file")
	fs.StringVar(&req.Payload.Format, "format", "", "content format (default markdown)")
	fs.StringVar(&req.Priority, "priority", "", "normal, urgent or blocking (default normal)")
	inReplyTo := fs.String("in-reply-to", "", "id of the envelope this answers")
	pos, err := parse(fs, args, 0, 1)
	if err != nil {
		return err
	}
	if err := required(cmd,
		[2]string{req.To, "--to is required (the workspace that receives the envelope)"},
		[2]string{req.Type, "--type is required (directive, feedback, query or a taxonomy type)"},
	); err != nil {
		return err
	}
	stdin := len(pos) == 1
	if stdin && pos[0] != "-" {
		return usagef(cmd, "unexpected argument %q; give the content with --content, --file F or - (stdin)", pos[0])
	}
	if *content != "" && (stdin || *file != "") {
		return usagef(cmd, "give the content once: --content, --file or - (stdin)")
	}
	req.Payload.Content = *content
	if *content == "" {
		if req.Payload.Content, err = c.content(cmd, *file, stdin); err != nil {
			return err
		}
	}
	if *inReplyTo != "" {
		req.InReplyTo = inReplyTo
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	env, err := send(cl, c.ctx, req)
	if err != nil {
		return err
	}
	return c.print(env, func(w io.Writer) {
		kv(w, "envelope", env.ID, "to", env.To, "type", env.Type, "priority", env.Priority, "status", env.Status,
			"origin", env.Origin, "originator", env.Originator)
	})
}

// inboxNext takes the next envelope under a delivery lease, prints it and
// then acknowledges it: printing is the CLI's handling, so a reply lost on
// the way leaves the envelope in the inbox to come back after its lease.
func inboxNext(c *cli, args []string) error {
	fs := c.flags("inbox next", "inbox next [--wait D] [--no-ack]")
	wait := fs.Duration("wait", 0, "wait up to this long for an envelope, e.g. 30s (at most 5m)")
	noAck := fs.Bool("no-ack", false, "leave the envelope leased: it comes back after its lease unless acknowledged with inbox ack")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	env, err := cl.NextEnvelope(c.ctx, *wait)
	if err != nil {
		return err
	}
	if env == nil {
		if c.format == "json" {
			fmt.Fprintln(c.stdout, "{}")
		} else {
			fmt.Fprintf(c.stderr, "no envelope (waited %s)\n", wait.Round(time.Millisecond))
		}
		return nil
	}
	if env.Delivery != nil && env.Delivery.Attempt > 1 {
		fmt.Fprintf(c.stderr, "redelivered: attempt %d of %d (its lease ended unacknowledged before)\n",
			env.Delivery.Attempt, env.Delivery.MaxAttempts)
	}
	if err := c.printBody(env, func(w io.Writer) { printEnvelope(w, env) }, env.Payload.Content); err != nil || *noAck {
		return err
	}
	_, err = cl.Ack(c.ctx, env.ID)
	return err
}

func inboxAck(c *cli, args []string) error {
	const cmd = "inbox ack"
	fs := c.flags(cmd, cmd+" ID")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	removed, err := cl.Ack(c.ctx, pos[0])
	if err != nil {
		return err
	}
	res := struct {
		ID      string `json:"id"`
		Removed bool   `json:"removed"`
	}{pos[0], removed}
	return c.print(res, func(w io.Writer) { kv(w, "envelope", res.ID, "removed", fmt.Sprint(res.Removed)) })
}

func printEnvelope(w io.Writer, env *envelope.Envelope) {
	kv(w, "envelope", env.ID, "from", env.From, "to", env.To, "type", env.Type,
		"priority", env.Priority, "in reply to", deref(env.InReplyTo), "format", env.Payload.Format,
		"sent", env.Timestamp)
}
