package daemon

import "github.com/nats-io/nats-server/v2/server"

// DocSubjects exports docSubjects to the runtime_test package, whose
// TestAuthzDocCoversEveryEndpoint checks the authorization table against it.
var DocSubjects = docSubjects

// WithServerHook returns cfg with a hook that is given the embedded NATS
// server once it runs.
func WithServerHook(cfg Config, f func(*server.Server)) Config {
	cfg.onServer = f
	return cfg
}

// WithPageBytes returns cfg with list pages of at most n bytes of items.
func WithPageBytes(cfg Config, n int) Config {
	cfg.pageBytes = n
	return cfg
}

// RunNATSServer is runNATSServer, for the external tests.
var RunNATSServer = runNATSServer

// RunNATSCluster is runNATSCluster, for the external tests.
var RunNATSCluster = runNATSCluster
