package wire_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// bodies are the Go types of each endpoint's request and reply: the ones
// the daemon decodes and returns and the client sends and reads. nil: no
// body.
var bodies = map[string][2]any{
	"system.info":                {nil, wire.Info{}},
	"audit.trail.read":           {wire.TrailQuery{}, wire.TrailPage{}},
	"audit.trail.aggregate":      {wire.TrailAggregateRequest{}, wire.TrailAggregate{}},
	"audit.trail.verify":         {wire.VerifyRequest{}, trail.VerifyResult{}},
	"audit.sth":                  {struct{}{}, wire.TreeHead{}},
	"audit.proof.inclusion":      {wire.InclusionRequest{}, wire.InclusionProof{}},
	"audit.proof.consistency":    {wire.ConsistencyRequest{}, wire.ConsistencyProof{}},
	"audit.checkpoint.get":       {wire.GetRequest{}, checkpointchain.Checkpoint{}},
	"audit.trace.read":           {wire.TraceRequest{}, wire.TracePage{}},
	"carp.resolve":               {carp.Request{}, carp.Resolution{}},
	"carp.execute":               {carp.Request{}, carp.ExecutionResult{}},
	"carp.validate":              {carp.Request{}, carp.ValidationResult{}},
	"carp.respond":               {carp.Request{}, carp.CheckpointResult{}},
	"atlas.load":                 {wire.AtlasLoadRequest{}, wire.AtlasChange{}},
	"atlas.unload":               {wire.AtlasUnloadRequest{}, wire.AtlasChange{}},
	"atlas.list":                 {nil, wire.AtlasList{}},
	"carp.approval":              {wire.ApprovalStatusRequest{}, approval.Ref{}},
	"highway.approvals":          {wire.ApprovalsRequest{}, wire.Approvals{}},
	"highway.approval.mode":      {wire.ApprovalModeRequest{}, approval.Envelope{}},
	"highway.permit.revoke":      {wire.PermitRevokeRequest{}, approval.Permit{}},
	"highway.trust.restore":      {wire.TrustRestoreRequest{}, approval.BoundaryTrust{}},
	"trace":                      {wire.TraceRequest{}, wire.TracePage{}},
	"checkpoint":                 {checkpointchain.Request{}, checkpointchain.Checkpoint{}},
	"checkpoint.get":             {wire.GetRequest{}, checkpointchain.Checkpoint{}},
	"checkpoint.head":            {wire.HeadRequest{}, checkpointchain.Checkpoint{}},
	"checkpoint.list":            {wire.CheckpointListRequest{}, wire.CheckpointPage{}},
	"conflict.resolve":           {wire.ResolveRequest{}, workspace.Workspace{}},
	"envelope":                   {envelope.Request{}, envelope.Envelope{}},
	"inbox.ack":                  {wire.GetRequest{}, wire.AckResult{}},
	"inbox.next":                 {wire.InboxNextRequest{}, envelope.Envelope{}},
	"integrate":                  {wire.IntegrateRequest{}, wire.IntegrateResult{}},
	"signal":                     {signal.Request{}, signal.Signal{}},
	"signals.consumer":           {wire.ConsumerRequest{}, wire.ConsumerInfo{}},
	"graph.get":                  {wire.GraphRequest{}, wire.GraphInfo{}},
	"highway.get":                {wire.HighwayGetRequest{}, highway.Gate{}},
	"highway.queue":              {wire.HighwayQueueRequest{}, wire.HighwayQueue{}},
	"highway.resolve":            {highway.ResolveRequest{}, highway.Gate{}},
	"highway.inject":             {envelope.Request{}, envelope.Envelope{}},
	"highway.escalations":        {wire.EscalationsRequest{}, wire.Escalations{}},
	"highway.escalation.respond": {wire.EscalationRespondRequest{}, highway.EscalationRecord{}},
	"highway.workspace.create":   {workspace.CreateRequest{}, wire.Created{}},
	"highway.workspace.abort":    {wire.IDRequest{}, workspace.Workspace{}},
	"highway.workspace.suspend":  {wire.IDRequest{}, workspace.Workspace{}},
	"highway.workspace.resume":   {wire.IDRequest{}, workspace.Workspace{}},
	"highway.workspace.transfer": {wire.TransferRequest{}, workspace.Workspace{}},
	"highway.workspace.budget":   {wire.BudgetRequest{}, workspace.Workspace{}},
	"highway.user.state":         {wire.UserStateRequest{}, user.User{}},
	"task.bind":                  {wire.TaskBindRequest{}, task.Task{}},
	"task.cancel":                {wire.TaskOpRequest{}, task.Task{}},
	"task.create":                {task.CreateRequest{}, wire.TasksCreated{}},
	"task.get":                   {wire.TaskGetRequest{}, wire.TaskInfo{}},
	"task.list":                  {wire.TaskListRequest{}, wire.TaskPage{}},
	"task.retry":                 {wire.TaskOpRequest{}, task.Task{}},
	"token.create":               {wire.TokenCreateRequest{}, wire.TokenCreated{}},
	"token.revoke":               {wire.TokenRevokeRequest{}, wire.TokenRevoked{}},
	"user.state":                 {wire.UserStateRequest{}, user.User{}},
	"user.capabilities":          {wire.UserCapabilitiesRequest{}, user.User{}},
	"workspace.transfer":         {wire.TransferRequest{}, workspace.Workspace{}},
	"workspace.budget":           {wire.BudgetRequest{}, workspace.Workspace{}},
	"workspace.visibility.grant": {wire.VisibilityGrantRequest{}, workspace.Workspace{}},
	"workspace.priority":         {wire.PriorityRequest{}, workspace.Workspace{}},
	"group.abort":                {wire.GroupAbortRequest{}, wire.Batch{}},
	"group.priority":             {wire.GroupPriorityRequest{}, wire.Batch{}},
	"rights.list":                {wire.RightsRequest{}, wire.Rights{}},
	"rights.revoke":              {wire.RevokeRightRequest{}, wire.PortRight{}},
	"trail":                      {wire.AgentTrailRequest{}, wire.TrailPage{}},
	"workspace.abort":            {wire.IDRequest{}, workspace.Workspace{}},
	"workspace.create":           {workspace.CreateRequest{}, wire.Created{}},
	"workspace.get":              {wire.IDRequest{}, workspace.Workspace{}},
	"workspace.list":             {wire.ListRequest{}, wire.WorkspacePage{}},
	"workspace.migrate":          {wire.MigrateRequest{}, workspace.Workspace{}},
	"workspace.migrate.complete": {wire.MigrateCompleteRequest{}, wire.Migrated{}},
	"workspace.resume":           {wire.IDRequest{}, workspace.Workspace{}},
	"workspace.suspend":          {wire.IDRequest{}, workspace.Workspace{}},
}

// TestBodiesMatchTheirSchemas: every endpoint has its Go bodies here, and
// each body's JSON fields are exactly the properties of its schema in
// docs/schema. A field added to a type and not to the schema (or the other
// way round) fails, and so does an endpoint added without its row.
func TestBodiesMatchTheirSchemas(t *testing.T) {
	for _, ep := range wire.Endpoints() {
		b, ok := bodies[ep.Op]
		if !ok {
			t.Errorf("%s: no row in bodies (its request and reply types)", ep.Op)
			continue
		}
		for i, ref := range []string{ep.Request, ep.Reply} {
			typ := b[i]
			what := []string{"request", "reply"}[i]
			if ref == "" || typ == nil {
				if (ref == "") != (typ == nil) {
					t.Errorf("%s %s: schema %q, Go type %T: one has a body, the other none", ep.Op, what, ref, typ)
				}
				continue
			}
			props, ok := properties(t, ref)
			if !ok {
				continue // the schema does not list properties (oneOf, …)
			}
			fields := jsonFields(reflect.TypeOf(typ))
			slices.Sort(fields)
			if !slices.Equal(fields, props) {
				t.Errorf("%s %s: %T has fields %v, schema %s has properties %v", ep.Op, what, typ, fields, ref, props)
			}
		}
	}
	for op := range bodies {
		if !slices.ContainsFunc(wire.Endpoints(), func(e wire.Endpoint) bool { return e.Op == op }) {
			t.Errorf("bodies has a row for %s, which is no endpoint", op)
		}
	}
}

// jsonFields returns the JSON member names of struct type t, embedded
// structs flattened.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// properties returns the sorted property names of the object schema ref
// ("file.json" or "file.json#name", a definition), following $ref and
// allOf; ok is false when the schema does not list properties.
func properties(t *testing.T, ref string) (props []string, ok bool) {
	t.Helper()
	s := resolve(t, ref)
	set := map[string]bool{}
	var walk func(s map[string]any) bool
	walk = func(s map[string]any) bool {
		found := false
		if r, ok := s["$ref"].(string); ok && !strings.Contains(r, "common.json") {
			found = walk(resolve(t, strings.Replace(r, "#/$defs/", "#", 1))) || found
		}
		if p, ok := s["properties"].(map[string]any); ok {
			for k := range p {
				set[k] = true
			}
			found = true
		}
		if all, ok := s["allOf"].([]any); ok {
			for _, a := range all {
				found = walk(a.(map[string]any)) || found
			}
		}
		return found
	}
	if !walk(s) {
		return nil, false
	}
	for k := range set {
		props = append(props, k)
	}
	slices.Sort(props)
	return props, true
}

func resolve(t *testing.T, ref string) map[string]any {
	t.Helper()
	file, def, _ := strings.Cut(ref, "#")
	b, err := os.ReadFile(filepath.Join("..", "docs", "schema", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if def == "" {
		return doc
	}
	d, ok := doc["$defs"].(map[string]any)[def].(map[string]any)
	if !ok {
		t.Fatalf("%s has no definition %s", file, def)
	}
	return d
}

// TestOnlyCreationNamesAnAuthority (WACP Workspace §3, "Frozen authority"):
// a workspace's authority set is given at its creation and no request
// changes it, so no request body but the creations' has an authority field
// (runtime.TestAuthority_Frozen checks the operations that rewrite a
// workspace's record keep it).
func TestOnlyCreationNamesAnAuthority(t *testing.T) {
	creations := 0
	for op, b := range bodies {
		if b[0] == nil {
			continue
		}
		if !slices.Contains(jsonFields(reflect.TypeOf(b[0])), "authority") {
			continue
		}
		if op != "workspace.create" && op != "highway.workspace.create" {
			t.Errorf("%s's request (%T) has an authority field", op, b[0])
			continue
		}
		creations++
	}
	if creations != 2 {
		t.Errorf("%d creation requests have an authority field, want 2 (workspace.create, highway.workspace.create)", creations)
	}
}
