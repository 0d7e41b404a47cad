package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/wacpd/wacpd/client"
)

// cli is one invocation: where it reads and writes, how it reaches the
// daemon, and the connection once dialed.
type cli struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	opts           client.Options
	format         string // table or json

	c *client.Client // nil until dial
}

// dial connects to the daemon once.
func (c *cli) dial() (*client.Client, error) {
	if c.c != nil {
		return c.c, nil
	}
	cl, err := client.Dial(c.ctx, c.opts)
	if err != nil {
		return nil, err
	}
	c.c = cl
	return cl, nil
}

// parseDial parses args with fs (parse) and then connects (dial): the
// start of every command that takes its arguments and calls the daemon.
func (c *cli) parseDial(fs *flag.FlagSet, args []string, least, most int) ([]string, *client.Client, error) {
	pos, err := parse(fs, args, least, most)
	if err != nil {
		return nil, nil, err
	}
	cl, err := c.dial()
	return pos, cl, err
}

func (c *cli) close() {
	if c.c != nil {
		c.c.Close()
	}
}

// usageError is a mistake in the command line: exit 1 with what to do.
type usageError struct{ cmd, msg string }

func (e *usageError) Error() string {
	if e.cmd == "" {
		return e.msg
	}
	return e.cmd + ": " + e.msg
}

func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// exitError ends the command with this exit code; the message has already
// been printed.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// flags returns a flag set for command name, writing its usage to stderr.
func (c *cli) flags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("wacp "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "usage: wacp %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args with fs, allowing flags after positional arguments, and
// returns the positional arguments. want is how many it takes at least and
// at most (-1: any number).
func parse(fs *flag.FlagSet, args []string, least, most int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, exitError(1) // the flag package printed it
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	name := strings.TrimPrefix(fs.Name(), "wacp ")
	switch {
	case len(pos) < least:
		return nil, usagef(name, "missing argument; run 'wacp %s -h'", name)
	case most >= 0 && len(pos) > most:
		return nil, usagef(name, "unexpected argument %q; run 'wacp %s -h'", pos[most], name)
	}
	return pos, nil
}

// required returns a usage error for the first check whose value is
// empty: each check is {value, message saying what is required and why}.
func required(cmd string, checks ...[2]string) error {
	for _, ch := range checks {
		if ch[0] == "" {
			return usagef(cmd, "%s", ch[1])
		}
	}
	return nil
}

// isSet reports whether flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// list splits a comma-separated flag value, dropping empty items.
func list(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// content reads a message or checkpoint body from --file or, with "-",
// stdin.
func (c *cli) content(cmd, file string, stdin bool) (string, error) {
	if file != "" && stdin {
		return "", usagef(cmd, "give the content as --file or as - (stdin), not both")
	}
	var b []byte
	var err error
	switch {
	case stdin:
		b, err = io.ReadAll(c.stdin)
	case file != "":
		b, err = os.ReadFile(file)
	default:
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read content: %w", err)
	}
	return string(b), nil
}

// print writes v as indented JSON with -o json, else calls table with a
// tabwriter.
func (c *cli) print(v any, table func(w io.Writer)) error {
	if c.format == "json" {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// printBody is print followed, in table form, by a blank line and body
// (written as is, outside the table) when body is not empty.
func (c *cli) printBody(v any, table func(w io.Writer), body string) error {
	if err := c.print(v, table); err != nil || c.format == "json" || body == "" {
		return err
	}
	_, err := fmt.Fprintf(c.stdout, "\n%s\n", strings.TrimRight(body, "\n"))
	return err
}

// jsonLine writes v as one line of JSON (for streams).
func (c *cli) jsonLine(v any) error {
	return json.NewEncoder(c.stdout).Encode(v)
}

// kv writes key/value rows, skipping empty values.
func kv(w io.Writer, pairs ...string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			fmt.Fprintf(w, "%s\t%s\n", pairs[i], pairs[i+1])
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func keys[V any](m map[string]V) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}
