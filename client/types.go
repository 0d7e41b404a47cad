package client

import (
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Request bodies defined by the record packages.
type (
	// CheckpointRequest is the body of a checkpoint call.
	CheckpointRequest = checkpointchain.Request
	// EnvelopeRequest is the body of an envelope call.
	EnvelopeRequest = envelope.Request
	// SignalRequest is the body of a signal call.
	SignalRequest = signal.Request
	// CreateRequest is the body of a workspace.create call.
	CreateRequest = workspace.CreateRequest
)

// The contract's other bodies are package wire's; the client names them
// here so that its callers need not import wire.
type (
	// Info is the reply of system.info.
	Info = wire.Info
	// TaxonomyInfo identifies the daemon's taxonomy.
	TaxonomyInfo = wire.TaxonomyInfo
	// Created is the reply of workspace.create.
	Created = wire.Created
	// Migrated is the reply of workspace.migrate.complete.
	Migrated = wire.Migrated
	// IntegrateRequest is the body of an integrate call.
	IntegrateRequest = wire.IntegrateRequest
	// IntegrateResult is the reply of an integrate call.
	IntegrateResult = wire.IntegrateResult
	// ResolveRequest is the body of a conflict.resolve call.
	ResolveRequest = wire.ResolveRequest
	// TrailPage is one page of trail entries.
	TrailPage = wire.TrailPage
	// TrailQuery selects entries of the global trail (audit.trail.read).
	TrailQuery = wire.TrailQuery
	// TreeHead is the reply of audit.sth.
	TreeHead = wire.TreeHead
	// InclusionRequest asks for the audit path of one entry.
	InclusionRequest = wire.InclusionRequest
	// InclusionProof is the reply of audit.proof.inclusion.
	InclusionProof = wire.InclusionProof
	// ConsistencyProof is the reply of audit.proof.consistency.
	ConsistencyProof = wire.ConsistencyProof
	// ConsumerInfo is the reply of signals.consumer.
	ConsumerInfo = wire.ConsumerInfo
	// DaemonFile is the content of wacpd.json.
	DaemonFile = wire.DaemonFile
)
