package hwtui

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// Backoff of the change feed's restarts.
const (
	feedMinBackoff = 500 * time.Millisecond
	feedMaxBackoff = 4 * time.Second
)

// errFeedEnded is what the UI shows when Changes returned nil before ctx
// ended, which a Source should not do.
var errFeedEnded = errors.New("hwtui: the change feed ended")

// Run runs the UI on the terminal in and out (a person's: os.Stdin and
// os.Stdout) in the alternate screen until the operator quits (q,
// ctrl+c) or ctx ends; then it returns nil. opts are added to the
// program's (tests give their own input and window size). Run does not
// handle signals: the caller's ctx does.
func Run(ctx context.Context, src Source, in io.Reader, out io.Writer, opts ...tea.ProgramOption) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := tea.NewProgram(newModel(ctx, src), append([]tea.ProgramOption{
		tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out),
		tea.WithAltScreen(), tea.WithoutSignalHandler(),
	}, opts...)...)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		follow(ctx, src, p.Send)
	}()
	_, err := p.Run()
	cancel()
	wg.Wait()
	if err != nil && parent.Err() != nil {
		return nil // the caller ended it
	}
	return err
}

// follow runs src.Changes until ctx ends, sending changedMsg for each
// event; each time it breaks, it sends feedDownMsg and starts it again
// after a backoff that doubles from feedMinBackoff to feedMaxBackoff, and
// starts over once a feed has lasted feedMaxBackoff.
func follow(ctx context.Context, src Source, send func(tea.Msg)) {
	backoff := feedMinBackoff
	for {
		start := time.Now()
		err := src.Changes(ctx, func() { send(changedMsg{}) })
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errFeedEnded
		}
		send(feedDownMsg{err: err})
		if time.Since(start) >= feedMaxBackoff {
			backoff = feedMinBackoff
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, feedMaxBackoff)
	}
}
