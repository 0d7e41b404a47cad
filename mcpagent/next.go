package mcpagent

import (
	"encoding/json"
	"fmt"
	"strings"
)

// What the agent does next: an LLM agent reads a tool result's text, so
// a result that leaves it waiting on someone (a steward checkpoint's
// questions, an operator's approval) says in words which tool to call
// with which ids. The texts are derived from the reply alone.

// prompt is a steward checkpoint as a resolution, a respond's pending
// list or a CHECKPOINT_REQUIRED refusal shows it (carp.json
// checkpoint_prompt).
type prompt struct {
	CheckpointID string `json:"checkpoint_id"`
	AtlasRef     string `json:"atlas_ref"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	Gates        string `json:"gates"`
	WaitingFor   string `json:"waiting_for"`
	Questions    []struct {
		QuestionID   string   `json:"question_id"`
		Question     string   `json:"question"`
		ResponseType string   `json:"response_type"`
		Required     bool     `json:"required"`
		Options      []string `json:"options"`
	} `json:"questions"`
}

// approvalRef is an operator's checkpoint as carp.execute and
// carp.approval show it (approval.json ref).
type approvalRef struct {
	ApprovalID string `json:"approval_id"`
	Status     string `json:"status"`
	Reason     string `json:"reason"`
}

// nextAfterReply returns what to do after op's reply, or "".
func nextAfterReply(op string, reply []byte) string {
	switch op {
	case "carp.resolve":
		var r struct {
			Checkpoints []prompt `json:"checkpoints"`
		}
		if json.Unmarshal(reply, &r) == nil && len(r.Checkpoints) > 0 {
			return prompts(r.Checkpoints, "")
		}
	case "carp.respond":
		var r struct {
			Pending []prompt `json:"pending"`
		}
		if json.Unmarshal(reply, &r) == nil && len(r.Pending) > 0 {
			return prompts(r.Pending, "")
		}
	case "carp.execute":
		var r struct {
			Status   string       `json:"status"`
			Approval *approvalRef `json:"approval"`
		}
		if json.Unmarshal(reply, &r) == nil && r.Status == "pending_approval" && r.Approval != nil {
			id := r.Approval.ApprovalID
			return fmt.Sprintf("Next: this execution is held for an operator's approval (approval_id %q). Wait for the decision with carp_approval "+
				"{\"approval_id\": %q, \"wait\": \"5m\"}; once it is approved, call carp_execute again with the same action and "+
				"\"approval_id\": %q (it runs once). If it is denied or cancelled, do not run it.", id, id, id)
		}
	case "carp.approval":
		var r approvalRef
		if json.Unmarshal(reply, &r) != nil {
			return ""
		}
		switch r.Status {
		case "pending":
			return fmt.Sprintf("Next: approval %q is still pending: call carp_approval again to keep waiting.", r.ApprovalID)
		case "approved":
			return fmt.Sprintf("Next: approval %q is approved: call carp_execute again with the same action and \"approval_id\": %q (it runs once).", r.ApprovalID, r.ApprovalID)
		case "denied", "cancelled":
			return fmt.Sprintf("Next: approval %q is %s%s: do not run this action.", r.ApprovalID, r.Status, reason(r.Reason))
		}
	}
	return ""
}

// nextAfterRefusal returns what to do after f, op's refusal, or "".
func nextAfterRefusal(op string, f *Refusal) string {
	var b struct {
		Error struct {
			Details struct {
				Checkpoint   *prompt `json:"checkpoint"`
				CheckpointID string  `json:"checkpoint_id"`
				Outcome      string  `json:"outcome"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(f.Body, &b) != nil {
		return ""
	}
	d := b.Error.Details
	switch {
	case f.Code == "CHECKPOINT_REQUIRED" && d.Checkpoint != nil:
		again := ""
		if t := toolOf(op); t != "" {
			again = " Then call " + t + " again."
		}
		return prompts([]prompt{*d.Checkpoint}, "A blocking steward checkpoint holds this action back.") + again
	case f.Code == "CONSTRAINT_VIOLATED" && op == "carp.respond" && d.Outcome == "retry":
		return fmt.Sprintf("Next: some answers did not pass (details.results says which and why): answer steward checkpoint %q again with carp_respond.", d.CheckpointID)
	case f.Code == "ACTION_DENIED" && d.Checkpoint != nil && d.Checkpoint.Status == "blocked":
		return prompts([]prompt{*d.Checkpoint}, "")
	}
	return ""
}

// prompts says what to do about each checkpoint of ps, after lead.
func prompts(ps []prompt, lead string) string {
	var b strings.Builder
	b.WriteString("Next:")
	if lead != "" {
		b.WriteString(" " + lead)
	}
	for _, p := range ps {
		name := fmt.Sprintf("steward checkpoint %q", p.CheckpointID)
		if p.AtlasRef != "" {
			name += " (atlas " + p.AtlasRef + ")"
		}
		gates := ""
		if p.Gates != "" {
			gates = " (it holds back " + p.Gates + ")"
		}
		switch {
		case p.Status == "blocked":
			fmt.Fprintf(&b, " The %s is blocked for this session%s: the actions it gates stay denied; do not retry them.", name, gates)
		case p.WaitingFor != "":
			fmt.Fprintf(&b, " The %s is waiting for its %s%s and takes no answers: resolve again later.", name, p.WaitingFor, gates)
		default:
			fmt.Fprintf(&b, " The %s is pending%s: answer it with carp_respond, checkpoint_response {\"checkpoint_id\": %q, \"answers\": {question_id: answer, ...}}.",
				name, gates, p.CheckpointID)
			if len(p.Questions) > 0 {
				b.WriteString(" Questions:")
				for i, q := range p.Questions {
					sep := ";"
					if i == len(p.Questions)-1 {
						sep = "."
					}
					kind := q.ResponseType
					if q.Required {
						kind += ", required"
					}
					if len(q.Options) > 0 {
						kind += ", one of " + strings.Join(q.Options, " | ")
					}
					fmt.Fprintf(&b, " %q (%s): %s%s", q.QuestionID, kind, q.Question, sep)
				}
			}
		}
	}
	return b.String()
}

func reason(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

// toolOf returns the name of the tool calling op, or "".
func toolOf(op string) string {
	for _, d := range toolDefs {
		if d.op == op {
			return d.name
		}
	}
	return ""
}
