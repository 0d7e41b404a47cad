package trail

import "encoding/json"

// Tier is the storage tier of a trail entry (WACP Trail §7).
type Tier string

// The three tiers. Hot and warm entries are in the trail's log (package
// traillog); cold ones were also archived by compaction (package
// trail/coldstore). See docs/design.md, Trail tiers and compaction.
const (
	TierHot  Tier = "hot"  // an entry of a workspace not closed or failed
	TierWarm Tier = "warm" // an entry of a terminal workspace, not archived
	TierCold Tier = "cold" // an archivable entry of a compacted workspace
)

// archivableTypes are the event types of Trail §8's archivable table.
var archivableTypes = map[EventType]bool{
	EventWorkspaceStateChanged: true, // non-terminal transitions only (Archivable)
	EventEnvelopeDelivered:     true,
	EventSignalDelivered:       true,
	EventBudgetWarning:         true,
	EventLivenessWarning:       true,
	EventPriorityChanged:       true,
	EventVisibilityGranted:     true,
}

// Archivable reports whether compaction moves e to the cold tier (Trail
// §8): an entry of the archivable table that is not a failure. A
// workspace_state_changed to closed or failed, and any entry whose body
// has to_state failed or an error field, is essential, as is every event
// type outside the archivable table.
func Archivable(e Entry) bool {
	if !archivableTypes[e.EventType] {
		return false
	}
	var b struct {
		ToState *string         `json:"to_state"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(e.Body, &b); err != nil {
		return false // unreadable: kept where it is
	}
	if b.ToState != nil && (*b.ToState == "closed" || *b.ToState == "failed") {
		return false
	}
	return len(b.Error) == 0 || string(b.Error) == "null"
}
