package daemon_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/signal/outboxstore"
)

// TestSignalsTheStreamHoldsAreNotPublishedAgain: a daemon that starts with
// signals in its outbox that the stream already holds (published, and not
// seen confirmed before the previous run stopped: here the outbox's mark
// is set back to the trail's start) does not publish them again, and goes
// on publishing what follows. The stream's own window for repeats would
// drop them; a subscription on the signal subjects sees every attempt.
func TestSignalsTheStreamHoldsAreNotPublishedAgain(t *testing.T) {
	ctx := clientCtx(t)
	const token = "signal-restart-server-token"
	rig := newSignalRig(t, ctx, token)
	w := rig.worker(t, ctx)
	var parent *string
	for range 3 {
		cp, err := artifact(ctx, w, parent)
		if err != nil {
			t.Fatal(err)
		}
		parent = &cp.ID
	}
	// Directive acknowledged, three checkpoints.
	rig.waitMsgs(t, ctx, 4, 10*time.Second)
	held := map[string]bool{}
	for seq := range uint64(4) {
		m, err := rig.stream.GetMsg(ctx, seq+1)
		if err != nil {
			t.Fatal(err)
		}
		held[m.Header.Get(jetstream.MsgIDHeader)] = true
	}
	w.Close()
	rig.coord.Close()
	rig.d.Stop()

	db, err := badger.Open(badger.DefaultOptions(filepath.Join(rig.d.Dir, "db")).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *badger.Txn) error { return outboxstore.PutMark(seglog.Direct(txn), outboxstore.Mark{}) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	attempts := countPublishAttempts(t, rig.nc, func(id, _ string) string { return id })

	d := daemontest.Start(t, daemon.Config{DataDir: rig.d.Dir, NATSURL: rig.url, NATSToken: token})
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken, NATSToken: token})
	if err != nil {
		t.Fatal(err)
	}
	rig.d, rig.coord = d, coord
	w2 := rig.worker(t, ctx)
	if _, err := artifact(ctx, w2, nil); err != nil {
		t.Fatal(err)
	}
	// A new worker's acknowledged and checkpoint signals follow the four.
	rig.waitMsgs(t, ctx, 6, 10*time.Second)
	all := attempts.all()
	for id, n := range all {
		if held[id] || n != 1 {
			t.Errorf("signal %s published %d times after the restart (held before: %v)", id, n, held[id])
		}
	}
	if len(all) != 2 {
		t.Errorf("publish attempts after the restart: %v; want the new worker's two signals", all)
	}
}
