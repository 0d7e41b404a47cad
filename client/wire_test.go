package client

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/wacpd/wacpd/wire"
)

// calledOps returns the ops the client's source calls: c.agent("op") and
// c.workspaceOp(ctx, "op", ...) (agent endpoints) and wire.Subject("op")
// (the others), each with the audience its form implies.
func calledOps(t *testing.T) map[string]wire.Audience {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]wire.Audience{}
	fset := token.NewFileSet()
	for _, name := range files {
		if filepath.Ext(name) != ".go" || len(name) > 8 && name[len(name)-8:] == "_test.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			arg := call.Args[0]
			if sel.Sel.Name == "workspaceOp" && len(call.Args) > 1 {
				arg = call.Args[1]
			}
			lit, ok := arg.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			op, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			switch x, _ := sel.X.(*ast.Ident); {
			case sel.Sel.Name == "agent" || sel.Sel.Name == "workspaceOp":
				ops[op] = wire.Agents
			case x != nil && x.Name == "wire" && sel.Sel.Name == "Subject":
				ops[op] = wire.Anyone // system.info or audit.*: checked below
			}
			return true
		})
	}
	return ops
}

// TestClientCallsEveryWireEndpoint: the client calls only endpoints of
// the wire table, by the subject form of their audience, and has a method
// for every one of them, so an endpoint added to wire without a client
// method fails here.
func TestClientCallsEveryWireEndpoint(t *testing.T) {
	called := calledOps(t)
	table := map[string]wire.Audience{}
	for _, e := range wire.Endpoints() {
		table[e.Op] = e.Audience
	}
	var missing []string
	for op, aud := range table {
		got, ok := called[op]
		switch {
		case !ok:
			missing = append(missing, op)
		case (aud == wire.Agents) != (got == wire.Agents):
			t.Errorf("client calls %s on the wrong subject form (agent: %v, wire says audience %v)", op, got == wire.Agents, aud)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no client method calls these wire endpoints: %v", missing)
	}
	for op := range called {
		if _, ok := table[op]; !ok {
			t.Errorf("the client calls %q, which is not in wire.Endpoints", op)
		}
	}
}
