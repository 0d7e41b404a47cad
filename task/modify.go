package task

import (
	"encoding/json"
	"fmt"

	"github.com/wacpd/wacpd/internal/strictjson"
)

// Modification is what a person may change in a draft task at its
// approval gate (Human Highway §4): name, description, priority and
// resource estimate. depends_on, parent_task, graph_ref, id and timestamp
// are not among them.
type Modification struct {
	Name             *string   `json:"name,omitempty"`
	Description      *string   `json:"description,omitempty"`
	Priority         *Priority `json:"priority,omitempty"`
	ResourceEstimate *Estimate `json:"resource_estimate,omitempty"`
}

// Modify applies mods (a JSON object of the fields changed) to t and
// checks the result as Plan checks a new task. A field outside
// Modification is ErrImmutable; a bad value ErrInvalidRequest. t is not
// changed.
func Modify(t Task, mods json.RawMessage) (Task, error) {
	var m Modification
	if err := strictjson.Decode(mods, &m); err != nil {
		var fields map[string]json.RawMessage
		if json.Unmarshal(mods, &fields) == nil {
			for f := range fields {
				switch f {
				case "name", "description", "priority", "resource_estimate":
				default:
					return t, fmt.Errorf("%w: %q cannot be modified at approval", ErrImmutable, f)
				}
			}
		}
		return t, fmt.Errorf("%w: modifications: %v", ErrInvalidRequest, err)
	}
	s := Spec{Name: t.Name, Description: t.Description, Priority: t.Priority, ResourceEstimate: t.ResourceEstimate}
	if m.Name != nil {
		s.Name = *m.Name
	}
	if m.Description != nil {
		s.Description = *m.Description
	}
	if m.Priority != nil {
		s.Priority = *m.Priority
	}
	if m.ResourceEstimate != nil {
		s.ResourceEstimate = m.ResourceEstimate
	}
	if err := s.check(); err != nil {
		return t, err
	}
	t.Name, t.Description, t.Priority, t.ResourceEstimate = s.Name, s.Description, s.Priority, s.ResourceEstimate
	if t.Priority == "" {
		t.Priority = PriorityNormal
	}
	return t, nil
}
