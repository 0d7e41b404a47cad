package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"testing"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/steward"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

const acmeAtlas = "../examples/atlas/acme-support.json"

// carpWorker starts a daemon with the sample atlas and returns the
// coordinator's client, an active worker's client and its workspace; the
// environment names no daemon.
func carpWorker(t *testing.T) (ctx context.Context, coord, worker *client.Client, w *workspace.Workspace) {
	t.Helper()
	for _, v := range []string{client.EnvURL, client.EnvToken, client.EnvWorkspace} {
		t.Setenv(v, "")
	}
	d := daemontest.Start(t, daemon.Config{AtlasPaths: []string{acmeAtlas}})
	ctx = testCtx(t)
	coord = dial(t, ctx, client.Options{DataDir: d.Dir})
	worker = newWorker(t, ctx, coord, d.URL, false)
	w, err := worker.GetWorkspace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	return ctx, coord, worker, w
}

// TestCarp runs CARP through the client: a worker resolves, executes a
// dry run and validates; a refusal is an *Error carrying the CARP code,
// message and details of the seed's error envelope; the coordinator lists,
// loads and unloads atlases; the worker's own TRACE session and the
// coordinator's audit read of it are the same events, the audit read with
// the signed head.
func TestCarp(t *testing.T) {
	ctx, coord, worker, w := carpWorker(t)

	req := worker.NewCarpRequest(carp.OpResolve, w.Agent)
	req.Task = &carp.Task{Goal: "read T-1"}
	req.Scope = &carp.Scope{Actions: []string{"ticket.get"}}
	res, err := worker.CarpResolve(ctx, req)
	if err != nil || res.ResolutionID == "" || len(res.AllowedActions) != 1 || res.AllowedActions[0].ActionID != "ticket.get" {
		t.Fatalf("CarpResolve = %+v, %v; want ticket.get allowed", res, err)
	}

	action := func(op, id string, params map[string]any) carp.Request {
		r := worker.NewCarpRequest(op, w.Agent)
		r.Action = &carp.ActionSpec{ActionID: id, ActionType: id, ResolutionID: res.ResolutionID, Parameters: params}
		return r
	}
	x := action(carp.OpExecute, "ticket.get", map[string]any{"ticket_id": "T-1"})
	x.ExecutionOptions = &carp.ExecutionOptions{DryRun: true}
	if got, err := worker.CarpExecute(ctx, x); err != nil || got.Status != carp.StatusSuccess || got.RequestID != x.RequestID || got.Result == nil {
		t.Errorf("CarpExecute(dry run) = %+v, %v; want success", got, err)
	}
	if got, err := worker.CarpValidate(ctx, action(carp.OpValidate, "ticket.get", map[string]any{})); err != nil || got.Valid || len(got.Violations) == 0 {
		t.Errorf("CarpValidate(no ticket_id) = %+v, %v; want invalid", got, err)
	}

	_, err = worker.CarpExecute(ctx, action(carp.OpExecute, "ticket.list", map[string]any{}))
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != carp.CodeActionNotPermitted || ce.Status != 403 || ce.Message == "" {
		t.Errorf("CarpExecute(ticket.list) = %v; want an *Error ACTION_NOT_PERMITTED, status 403", err)
	}
	_, err = worker.CarpExecute(ctx, action(carp.OpExecute, "ticket.get", map[string]any{}))
	if !errors.As(err, &ce) || ce.Code != carp.CodeConstraintViolated || ce.Details["violations"] == nil {
		t.Errorf("CarpExecute(no ticket_id) = %v; want CONSTRAINT_VIOLATED with the violations in the details", err)
	}

	list, err := worker.AtlasList(ctx)
	if err != nil || len(list.Atlases) != 1 || list.Atlases[0].AtlasID != "com.acme.support" {
		t.Fatalf("AtlasList = %+v, %v; want com.acme.support", list, err)
	}
	manifest, err := os.ReadFile(acmeAtlas)
	if err != nil {
		t.Fatal(err)
	}
	if ch, err := coord.AtlasLoad(ctx, manifest); err != nil || ch.Change != "unchanged" || ch.Checksum != list.Atlases[0].Checksum {
		t.Errorf("AtlasLoad(the same manifest) = %+v, %v; want unchanged", ch, err)
	}
	if _, err := worker.AtlasLoad(ctx, manifest); !errors.As(err, &ce) || ce.Code != wire.CodePermissionDenied {
		t.Errorf("AtlasLoad as a worker = %v; want permission_denied", err)
	}
	var m map[string]any
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatal(err)
	}
	m["atlas_id"] = "com.acme.other"
	other, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if ch, err := coord.AtlasLoad(ctx, other); err != nil || ch.Change != "loaded" || ch.AtlasID != "com.acme.other" {
		t.Errorf("AtlasLoad(com.acme.other) = %+v, %v; want loaded", ch, err)
	}
	if ch, err := coord.AtlasUnload(ctx, "com.acme.other"); err != nil || ch.Change != "unloaded" {
		t.Errorf("AtlasUnload(com.acme.other) = %+v, %v; want unloaded", ch, err)
	}

	own, err := worker.Trace(ctx, 0, 0)
	if err != nil || len(own.Events) == 0 || own.Next != nil || own.TreeHead != nil {
		t.Fatalf("Trace = %d events, next %v, head %v, %v; want the session in one page, no head", len(own.Events), own.Next, own.TreeHead, err)
	}
	audited, err := coord.AuditTrace(ctx, wire.TraceRequest{Session: worker.Workspace()})
	if err != nil || len(audited.Events) != len(own.Events) || audited.Events[len(own.Events)-1].EventHash != own.Events[len(own.Events)-1].EventHash {
		t.Errorf("AuditTrace(the worker's session) = %d events, %v; want the worker's %d", len(audited.Events), err, len(own.Events))
	}
	if _, err := worker.AuditTrace(ctx, wire.TraceRequest{Session: worker.Workspace()}); err == nil {
		t.Errorf("AuditTrace as a worker = nil error; want a refusal")
	}
}

// TestCarpRespond answers the sample atlas's blocking refund
// justification through the client: a resolve that asks for
// billing.refund shows it pending; an answer its validation refuses is
// an *Error CONSTRAINT_VIOLATED (422) with the answer's result in the
// details; a good one passes it; a checkpoint no atlas has is
// INVALID_REQUEST with the reason.
func TestCarpRespond(t *testing.T) {
	ctx, _, worker, w := carpWorker(t)
	req := worker.NewCarpRequest(carp.OpResolve, w.Agent)
	req.Task = &carp.Task{Goal: "refund ticket T-1"}
	req.Scope = &carp.Scope{Actions: []string{"billing.refund"}}
	res, err := worker.CarpResolve(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Checkpoints, func(p steward.Prompt) bool { return p.CheckpointID == "refund-justification" })
	if i < 0 || res.Checkpoints[i].Status != steward.StatusPending {
		t.Fatalf("CarpResolve(billing.refund) checkpoints = %+v; want refund-justification pending", res.Checkpoints)
	}

	respond := func(id, reason string) (carp.CheckpointResult, error) {
		r := worker.NewCarpRequest(carp.OpRespond, w.Agent)
		b, _ := json.Marshal(reason)
		r.CheckpointResponse = &carp.CheckpointResponse{CheckpointID: id, Answers: map[string]json.RawMessage{"reason": b}}
		return worker.CarpRespond(ctx, r)
	}
	var ce *client.Error
	if _, err := respond("refund-justification", "because"); !errors.As(err, &ce) || ce.Code != carp.CodeConstraintViolated ||
		ce.Status != http.StatusUnprocessableEntity || ce.Details["results"] == nil {
		t.Errorf("CarpRespond(too short) = %v; want an *Error CONSTRAINT_VIOLATED (422) with the results", err)
	}
	got, err := respond("refund-justification", "Ticket T-1: the order arrived broken and the customer sent it back.")
	if err != nil || got.Outcome != steward.OutcomePassed || got.CheckpointID != "refund-justification" || len(got.Results) != 1 || !got.Results[0].Valid {
		t.Errorf("CarpRespond(a justification) = %+v, %v; want passed", got, err)
	}
	if _, err := respond("no-such-checkpoint", "x"); !errors.As(err, &ce) || ce.Code != carp.CodeInvalidRequest || ce.Details["reason"] != "not_found" {
		t.Errorf("CarpRespond(no-such-checkpoint) = %v; want INVALID_REQUEST not_found", err)
	}
}
