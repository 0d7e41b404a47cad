package main

import (
	"fmt"
	"io"

	"github.com/wacpd/wacpd/client"
)

func infoCmd(c *cli, args []string) error {
	fs := c.flags("info", "info")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	info, err := cl.Info(c.ctx)
	if err != nil {
		return err
	}
	out := struct {
		client.Info
		URL         string `json:"url"`
		Workspace   string `json:"workspace"`
		InboxPrefix string `json:"inbox_prefix"`
	}{info, cl.URL(), cl.Workspace(), cl.InboxPrefix()}
	return c.print(out, func(w io.Writer) {
		ws := cl.Workspace()
		if ws == info.RootWorkspace {
			ws += " (root)"
		}
		kv(w, "url", cl.URL(), "workspace", ws, "version", info.Version,
			"root workspace", info.RootWorkspace,
			"taxonomy", fmt.Sprintf("%s %s (%s)", info.Taxonomy.ID, info.Taxonomy.Version, info.Taxonomy.Checksum),
			"hash algorithm", info.HashAlgorithm, "protocol", info.ProtocolVersion,
			"public key", info.PublicKey, "inbox prefix", cl.InboxPrefix()+"  (other NATS clients: --inbox-prefix)")
	})
}
