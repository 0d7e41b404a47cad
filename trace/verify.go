package trace

import "fmt"

// Violation kinds: what Verify found wrong with a chain.
const (
	HashMismatch   = "hash_mismatch"   // an event's event_hash is not the hash of its fields
	ChainBroken    = "chain_broken"    // previous_event_hash is not the previous event's hash
	SequenceGap    = "sequence_gap"    // the sequence does not follow the previous event's
	InvalidGenesis = "invalid_genesis" // the first event is not sequence 0 after "0"×64
)

// Violation is the first thing wrong with a chain: its kind and the index
// (from 0, in the order given) of the first invalid event.
type Violation struct {
	Kind   string
	Index  int
	Detail string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("trace: %s at event %d: %s", v.Kind, v.Index, v.Detail)
}

// Verify checks events, one session's in sequence order: the genesis, then
// for each event its hash, the link to its predecessor and its sequence.
// It returns nil, or the first Violation. An empty chain is valid.
func Verify(events []Event) *Violation {
	for i, e := range events {
		if i == 0 && (e.Sequence != 0 || e.PreviousEventHash != Genesis) {
			return &Violation{InvalidGenesis, 0, fmt.Sprintf("sequence %d, previous_event_hash %q; want 0 and %d zeros", e.Sequence, e.PreviousEventHash, len(Genesis))}
		}
		if i > 0 {
			prev := events[i-1]
			if e.Sequence != prev.Sequence+1 {
				return &Violation{SequenceGap, i, fmt.Sprintf("sequence %d follows %d", e.Sequence, prev.Sequence)}
			}
			if e.PreviousEventHash != prev.EventHash {
				return &Violation{ChainBroken, i, fmt.Sprintf("previous_event_hash %s, the previous event's hash is %s", e.PreviousEventHash, prev.EventHash)}
			}
		}
		h, err := Hash(e)
		if err != nil {
			return &Violation{HashMismatch, i, err.Error()}
		}
		if h != e.EventHash {
			return &Violation{HashMismatch, i, fmt.Sprintf("event_hash %s, its fields hash to %s", e.EventHash, h)}
		}
	}
	return nil
}
