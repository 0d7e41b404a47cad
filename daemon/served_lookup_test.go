package daemon

import (
	"log/slog"
	"net"
	"testing"

	"github.com/wacpd/wacpd/principal"
)

// TestAccountServerTokenOnlyInProcess: an account server's token lets in
// a connection made in this process (a pipe) and no TCP connection, even
// one that knows it.
func TestAccountServerTokenOnlyInProcess(t *testing.T) {
	s := newAccountServers(nil, slog.Default())
	as := &accountServer{p: principal.Principal{Kind: principal.KindAuditor, Name: "a"}}
	s.byToken["secret"] = as
	pipe, other := net.Pipe()
	defer pipe.Close()
	defer other.Close()
	if got, ok := s.lookup("secret", pipe.RemoteAddr()); !ok || got != as {
		t.Errorf("lookup over a pipe = %v %v, want the account server", got, ok)
	}
	if _, ok := s.lookup("secret", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4222}); ok {
		t.Error("lookup over TCP found the account server")
	}
	if _, ok := s.lookup("other", pipe.RemoteAddr()); ok {
		t.Error("lookup of an unknown token found an account server")
	}
}
