package integrity

import (
	"context"
	"errors"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/dbupkeep"
)

// TestMarkerTurns: a verify cancels the running check's pass under way and
// waits for it within its own context; a pass is skipped while a verify
// waits; otherwise each runs.
func TestMarkerTurns(t *testing.T) {
	db, err := badger.Open(dbupkeep.Options(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := NewMarker(db, nil)

	m.turn <- struct{}{} // a pass under way, its cancel published
	cancelled := make(chan struct{})
	cancelPass := context.CancelFunc(func() { close(cancelled) })
	m.cancel.Store(&cancelPass)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := m.Verify(ctx, Options{Full: true}); !errors.Is(err, context.Canceled) {
		t.Errorf("Verify with its context ended while a pass runs = %v, want context.Canceled", err)
	}
	select {
	case <-cancelled:
	default:
		t.Error("the verify did not cancel the pass under way")
	}
	m.cancel.Store(nil)
	<-m.turn // the pass ends

	m.verifying.Add(1) // a verify waits
	if _, _, err := m.Pass(context.Background()); !errors.Is(err, ErrSkipped) {
		t.Errorf("Pass while a verify waits = %v, want ErrSkipped", err)
	}
	m.verifying.Add(-1)

	if _, rep, err := m.Pass(context.Background()); err != nil || !rep.OK {
		t.Errorf("Pass = %+v, %v", rep, err)
	}
	if rep, _, err := m.Verify(context.Background(), Options{Full: true}); err != nil || !rep.OK {
		t.Errorf("Verify = %+v, %v", rep, err)
	}
}

// TestMarkerKeepsNoMarkInMemory: a full verify of an in-memory database
// passes but moves no mark (no start will read it).
func TestMarkerKeepsNoMarkInMemory(t *testing.T) {
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rep, moved, err := NewMarker(db, nil).Verify(context.Background(), Options{Full: true})
	if err != nil || !rep.OK || moved {
		t.Errorf("Verify of an in-memory database = %+v, moved %v, %v; want ok and no mark moved", rep, moved, err)
	}
}
