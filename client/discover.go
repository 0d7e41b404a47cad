package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Files and environment variables through which clients find the daemon
// (wire-v1 §1).
const (
	DefaultDataDir = "./wacp-data"
	InfoFile       = "wacpd.json"
	AdminTokenFile = "admin.token"

	EnvURL       = "WACP_URL"
	EnvToken     = "WACP_TOKEN"
	EnvWorkspace = "WACP_WORKSPACE"
	EnvNATSToken = "WACP_NATS_TOKEN"
	EnvDaemon    = "WACP_DAEMON"
)

// found is where discovery found the daemon.
type found struct {
	url, token, workspace string
	tokenSource           string // " (from ...)" for messages; never the token
}

// discover resolves URL, token and workspace from opts, the environment
// and the data directory, in that order.
func discover(opts Options) (found, error) {
	f := found{
		url:       first(opts.URL, os.Getenv(EnvURL)),
		token:     first(opts.Token, os.Getenv(EnvToken)),
		workspace: first(opts.Workspace, os.Getenv(EnvWorkspace)),
	}
	switch {
	case opts.Token != "":
		f.tokenSource = " (from the options)"
	case f.token != "":
		f.tokenSource = " (from $" + EnvToken + ")"
	}
	if f.url != "" && f.token != "" {
		return f, nil
	}
	dir := first(opts.DataDir, DefaultDataDir)
	if f.url == "" {
		b, err := os.ReadFile(filepath.Join(dir, InfoFile))
		if errors.Is(err, fs.ErrNotExist) {
			return f, fmt.Errorf("%w: no %s in %s and no $%s", ErrUnreachable, InfoFile, dir, EnvURL)
		}
		if err != nil {
			return f, fmt.Errorf("read daemon file: %w", err)
		}
		var df DaemonFile
		if err := json.Unmarshal(b, &df); err != nil || df.URL == "" {
			return f, fmt.Errorf("read %s: not a daemon file (%v)", filepath.Join(dir, InfoFile), err)
		}
		f.url = df.URL
	}
	if f.token == "" {
		path := filepath.Join(dir, AdminTokenFile)
		b, err := os.ReadFile(path)
		if err != nil {
			return f, fmt.Errorf("read admin token (or set $%s): %w", EnvToken, err)
		}
		f.token = strings.TrimSpace(string(b))
		f.tokenSource = " (from " + path + ")"
	}
	return f, nil
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
