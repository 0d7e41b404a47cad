package trail

import "github.com/wacpd/wacpd/internal/canon"

// Fields is a body that writes its own canonical form: the bodies of the
// events every checkpoint appends (checkpoint_created, signal_emitted,
// signal_delivered). Built as maps, they were allocated and hashed field
// by field and their keys sorted at every encoding; EncodeBody takes a
// Fields as it is. FuzzBodies holds each to the bytes of its map form.
type Fields interface {
	// AppendCanonical appends the body's RFC 8785 form.
	AppendCanonical(b []byte) []byte
	// Field reports whether the body has field name, and whether it is
	// null.
	Field(name string) (present, null bool)
}

// CheckpointCreated is the body of checkpoint_created.
type CheckpointCreated struct {
	CheckpointID, Workspace, Type, Status, Confidence string
	Parent                                            *string // null for a chain's first
	Timestamp, Digest                                 string
}

// AppendCanonical implements Fields.
func (c *CheckpointCreated) AppendCanonical(b []byte) []byte {
	b = append(b, `{"checkpoint_id":`...)
	b = canon.AppendString(b, c.CheckpointID)
	b = append(b, `,"confidence":`...)
	b = canon.AppendString(b, c.Confidence)
	b = append(b, `,"digest":`...)
	b = canon.AppendString(b, c.Digest)
	b = append(b, `,"parent":`...)
	b = appendOptional(b, c.Parent)
	b = append(b, `,"status":`...)
	b = canon.AppendString(b, c.Status)
	b = append(b, `,"timestamp":`...)
	b = canon.AppendString(b, c.Timestamp)
	b = append(b, `,"type":`...)
	b = canon.AppendString(b, c.Type)
	b = append(b, `,"workspace":`...)
	b = canon.AppendString(b, c.Workspace)
	return append(b, '}')
}

// Field implements Fields.
func (c *CheckpointCreated) Field(name string) (present, null bool) {
	switch name {
	case "checkpoint_id", "confidence", "digest", "status", "timestamp", "type", "workspace":
		return true, false
	case "parent":
		return true, c.Parent == nil
	}
	return false, false
}

// SignalEmitted is the body of signal_emitted.
type SignalEmitted struct {
	SignalID, From, Type string
	Reason, Ref          *string // null when the signal has none
	Timestamp            string
}

// AppendCanonical implements Fields.
func (s *SignalEmitted) AppendCanonical(b []byte) []byte {
	b = append(b, `{"from":`...)
	b = canon.AppendString(b, s.From)
	b = append(b, `,"reason":`...)
	b = appendOptional(b, s.Reason)
	b = append(b, `,"ref":`...)
	b = appendOptional(b, s.Ref)
	b = append(b, `,"signal_id":`...)
	b = canon.AppendString(b, s.SignalID)
	b = append(b, `,"timestamp":`...)
	b = canon.AppendString(b, s.Timestamp)
	b = append(b, `,"type":`...)
	b = canon.AppendString(b, s.Type)
	return append(b, '}')
}

// Field implements Fields.
func (s *SignalEmitted) Field(name string) (present, null bool) {
	switch name {
	case "from", "signal_id", "timestamp", "type":
		return true, false
	case "reason":
		return true, s.Reason == nil
	case "ref":
		return true, s.Ref == nil
	}
	return false, false
}

// SignalDelivered is the body of signal_delivered.
type SignalDelivered struct {
	SignalID, From, DeliveredTo, DeliveredAt string
}

// AppendCanonical implements Fields.
func (s *SignalDelivered) AppendCanonical(b []byte) []byte {
	b = append(b, `{"delivered_at":`...)
	b = canon.AppendString(b, s.DeliveredAt)
	b = append(b, `,"delivered_to":`...)
	b = canon.AppendString(b, s.DeliveredTo)
	b = append(b, `,"from":`...)
	b = canon.AppendString(b, s.From)
	b = append(b, `,"signal_id":`...)
	b = canon.AppendString(b, s.SignalID)
	return append(b, '}')
}

// Field implements Fields.
func (s *SignalDelivered) Field(name string) (present, null bool) {
	switch name {
	case "delivered_at", "delivered_to", "from", "signal_id":
		return true, false
	}
	return false, false
}

func appendOptional(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return canon.AppendString(b, *s)
}
