package main

import (
	"io"

	"github.com/wacpd/wacpd/client"
)

func signalEmit(c *cli, args []string) error {
	const cmd = "signal emit"
	fs := c.flags(cmd, cmd+" TYPE [--reason R] [--ref REF]\n\nTYPE is ready, started, blocked, complete, failed or escalation\n(blocked, failed and escalation need --reason).")
	var req client.SignalRequest
	fs.StringVar(&req.Reason, "reason", "", "why (required for blocked, failed and escalation)")
	fs.StringVar(&req.Ref, "ref", "", "id of what the signal is about")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	req.Type = pos[0]
	cl, err := c.dial()
	if err != nil {
		return err
	}
	s, err := cl.EmitSignal(c.ctx, req)
	if err != nil {
		return err
	}
	return c.print(s, func(w io.Writer) {
		kv(w, "signal", s.ID, "type", string(s.Type), "from", s.From, "to", orDash(deref(s.DeliveredTo)),
			"reason", deref(s.Reason), "ref", deref(s.Ref), "time", s.Timestamp)
	})
}
