package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/atlas/atlasfile"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/wire"
)

// Atlases: the manifests CARP resolves against (the coordinator loads and
// unloads them; any agent lists them).

func atlasLoad(c *cli, args []string) error {
	const cmd = "atlas load"
	fs := c.flags(cmd, cmd+" FILE|DIR\n\n"+
		"Loads an Atlas manifest (a file, or a package directory with atlas.json) or replaces the loaded\n"+
		"one of the same atlas_id (coordinator). It is validated here first: an invalid one is refused\n"+
		"as the daemon would refuse it (invalid_structure, exit 2), naming the file, entry and rule.")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	l, err := atlasfile.Load(pos[0])
	if err != nil {
		var ve *atlas.ValidationError
		if errors.As(err, &ve) {
			return &client.Error{Code: wire.CodeInvalidStructure, Status: 400, Message: err.Error(), Err: err,
				Details: map[string]any{"file": ve.File, "entry": ve.Entry, "rule": ve.Rule}}
		}
		return fmt.Errorf("read atlas: %w", err)
	}
	manifest, err := json.Marshal(l.Manifest)
	if err != nil {
		return fmt.Errorf("encode atlas %s: %w", l.Manifest.AtlasID, err)
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	ch, err := cl.AtlasLoad(c.ctx, manifest)
	if err != nil {
		return err
	}
	return c.print(ch, func(w io.Writer) { printAtlasChange(w, ch) })
}

func atlasUnload(c *cli, args []string) error {
	const cmd = "atlas unload"
	fs := c.flags(cmd, cmd+" ID\n\nUnloads atlas ID (coordinator); resolutions made under it expire.")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	ch, err := cl.AtlasUnload(c.ctx, pos[0])
	if err != nil {
		return err
	}
	return c.print(ch, func(w io.Writer) { printAtlasChange(w, ch) })
}

func printAtlasChange(w io.Writer, ch wire.AtlasChange) {
	kv(w, "atlas_id", ch.AtlasID, "version", ch.Version, "checksum", ch.Checksum, "change", ch.Change)
}

func atlasList(c *cli, args []string) error {
	const cmd = "atlas list"
	fs := c.flags(cmd, cmd+"\n\nLists the loaded atlases, in load order.")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	l, err := cl.AtlasList(c.ctx)
	if err != nil {
		return err
	}
	return c.print(l, func(w io.Writer) {
		fmt.Fprintln(w, "ATLAS\tVERSION\tNAME\tDOMAINS\tACTIONS\tCHECKSUM")
		for _, a := range l.Atlases {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", a.AtlasID, a.Version, orDash(a.Name),
				orDash(strings.Join(a.Domains, ",")), orDash(strings.Join(a.Actions, ",")), a.Checksum)
		}
	})
}
