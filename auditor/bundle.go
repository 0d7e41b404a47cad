package auditor

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/trail"
)

// Format is the format name a bundle's header carries.
const Format = "wacp-trail-bundle/1"

// MaxLine bounds one line of a bundle: an object line holds a checkpoint's
// canonical bytes (at most 1 MiB) in base64.
const MaxLine = 4 << 20

// Header is a bundle's first line: where the trail comes from, the key that
// signs its tree heads, and the signed tree head the bundle is complete for.
type Header struct {
	Format    string         `json:"format"`
	Origin    string         `json:"origin"`
	PublicKey string         `json:"public_key"` // note verifier key (golang.org/x/mod/sumdb/note)
	STH       trail.TreeHead `json:"sth"`
}

// Object is a content-addressed object of a bundle: a checkpoint's
// canonical bytes (checkpointchain.Encode) under their digest.
type Object struct {
	Digest casstore.Ref
	Data   []byte
}

// Reference is a checkpoint object a checkpoint_created entry pins.
type Reference struct {
	Digest     casstore.Ref
	Checkpoint string // checkpoint_id of the entry's body
	Entry      string // the entry's id
}

// The line forms. Field names are the wire's; Canonical sorts them.
type (
	entryLine struct {
		Entry trail.Entry `json:"entry"`
	}
	objectLine struct {
		Object objectJSON `json:"object"`
	}
	objectJSON struct {
		Digest string `json:"digest"`
		Data   string `json:"data"`
	}
)

// checkpointBody is what Verify and Replay read of a checkpoint_created
// body.
type checkpointBody struct {
	CheckpointID string  `json:"checkpoint_id"`
	Workspace    string  `json:"workspace"`
	Type         string  `json:"type"`
	Status       string  `json:"status"`
	Parent       *string `json:"parent"`
	Digest       string  `json:"digest"`
}

// reference returns the object a checkpoint_created entry references; ok is
// false for other entries.
func reference(e trail.Entry) (body checkpointBody, ref Reference, ok bool, err error) {
	if e.EventType != trail.EventCheckpointCreated {
		return checkpointBody{}, Reference{}, false, nil
	}
	if err := json.Unmarshal(e.Body, &body); err != nil {
		return body, Reference{}, true, fmt.Errorf("checkpoint_created body: %w", err)
	}
	d, err := casstore.Parse(body.Digest)
	if err != nil {
		return body, Reference{}, true, fmt.Errorf("checkpoint_created body: digest: %w", err)
	}
	if body.CheckpointID == "" {
		return body, Reference{}, true, errors.New("checkpoint_created body has no checkpoint_id")
	}
	return body, Reference{Digest: d, Checkpoint: body.CheckpointID, Entry: e.ID}, true, nil
}

// BundleWriter writes a bundle: Header once, then exactly sth.size entries
// in global order with Entry, then with Object the objects Referenced
// returns, in that order; then Close. It checks the order and the counts,
// not the hashes: that is Verify's job. Methods return an error wrapping
// ErrBundle when called out of order; after any error the writer is
// unusable.
type BundleWriter struct {
	w      *bufio.Writer
	header bool
	size   uint64 // entries the header's tree head covers
	n      uint64 // entries written
	refs   map[casstore.Ref]Reference
	sorted []Reference // Referenced, computed once the entries are complete
	next   int         // index in sorted of the next object to write
	err    error       // sticky
}

// NewBundleWriter returns a writer of a bundle to w.
func NewBundleWriter(w io.Writer) *BundleWriter {
	return &BundleWriter{w: bufio.NewWriter(w), refs: map[casstore.Ref]Reference{}}
}

// Header writes the header line. An empty Format is set to Format, an empty
// Origin to the tree head's.
func (bw *BundleWriter) Header(h Header) error {
	if bw.err != nil {
		return bw.err
	}
	if bw.header {
		return bw.fail(fmt.Errorf("%w: header written twice", ErrBundle))
	}
	if h.Format == "" {
		h.Format = Format
	}
	if h.Origin == "" {
		h.Origin = h.STH.Origin
	}
	bw.header, bw.size = true, h.STH.Size
	return bw.line(h)
}

// Entry writes the next entry line. e must be in its global view.
func (bw *BundleWriter) Entry(e trail.Entry) error {
	if bw.err != nil {
		return bw.err
	}
	switch {
	case !bw.header:
		return bw.fail(fmt.Errorf("%w: entry before the header", ErrBundle))
	case bw.n >= bw.size:
		return bw.fail(fmt.Errorf("%w: entry %s beyond the tree head's size %d", ErrBundle, e.ID, bw.size))
	}
	_, ref, ok, err := reference(e)
	if err != nil {
		return bw.fail(fmt.Errorf("entry %s: %w", e.ID, err))
	}
	if ok {
		if _, dup := bw.refs[ref.Digest]; !dup {
			bw.refs[ref.Digest] = ref
		}
	}
	bw.n++
	return bw.line(entryLine{Entry: e})
}

// Referenced returns the objects the entries written so far reference,
// sorted by digest, each once: the objects to write, in this order, once
// every entry is written.
func (bw *BundleWriter) Referenced() []Reference {
	out := make([]Reference, 0, len(bw.refs))
	for _, r := range bw.refs {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Reference) int { return a.Digest.Compare(b.Digest) })
	return out
}

// Object writes the next object line: the object Referenced lists next.
// It does not check that data hashes to digest.
func (bw *BundleWriter) Object(digest casstore.Ref, data []byte) error {
	if bw.err != nil {
		return bw.err
	}
	if !bw.header || bw.n != bw.size {
		return bw.fail(fmt.Errorf("%w: object before all %d entries (%d written)", ErrBundle, bw.size, bw.n))
	}
	if bw.sorted == nil {
		bw.sorted = bw.Referenced()
	}
	if bw.next >= len(bw.sorted) || bw.sorted[bw.next].Digest != digest {
		return bw.fail(fmt.Errorf("%w: object %s is not the next referenced object", ErrBundle, digest))
	}
	bw.next++
	return bw.line(objectLine{Object: objectJSON{Digest: digest.String(), Data: base64.StdEncoding.EncodeToString(data)}})
}

// Flush writes buffered lines to the underlying writer.
func (bw *BundleWriter) Flush() error {
	if bw.err != nil {
		return bw.err
	}
	if err := bw.w.Flush(); err != nil {
		return bw.fail(fmt.Errorf("write bundle: %w", err))
	}
	return nil
}

// Close checks that the bundle is complete (the header, sth.size entries,
// every referenced object) and flushes it. It does not close the
// underlying writer.
func (bw *BundleWriter) Close() error {
	if bw.err != nil {
		return bw.err
	}
	if bw.sorted == nil {
		bw.sorted = bw.Referenced()
	}
	switch {
	case !bw.header:
		return bw.fail(fmt.Errorf("%w: no header", ErrBundle))
	case bw.n != bw.size:
		return bw.fail(fmt.Errorf("%w: %d entries written, tree head size %d", ErrBundle, bw.n, bw.size))
	case bw.next != len(bw.sorted):
		return bw.fail(fmt.Errorf("%w: %d of %d referenced objects written", ErrBundle, bw.next, len(bw.sorted)))
	}
	return bw.Flush()
}

func (bw *BundleWriter) fail(err error) error {
	bw.err = err
	return err
}

func (bw *BundleWriter) line(v any) error {
	b, err := trail.Canonical(v)
	if err != nil {
		return bw.fail(fmt.Errorf("encode bundle line: %w", err))
	}
	if _, err := bw.w.Write(append(b, '\n')); err != nil {
		return bw.fail(fmt.Errorf("write bundle: %w", err))
	}
	return nil
}

// LineError reports a bundle line that is not the canonical form of a
// header, entry or object line.
type LineError struct {
	Line int    // 1-based line number
	Kind string // "entry" or "object" when the line's one key says so, else ""
	ID   string // the entry id or object digest the line seems to carry, "" if none
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("auditor: bundle line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// Record is one line of a bundle after the header: exactly one of Entry
// and Object is set.
type Record struct {
	Line   int
	Entry  *trail.Entry
	Object *Object
}

// BundleReader reads a bundle line by line. It checks that each line is
// the canonical form of its record, and nothing else.
type BundleReader struct {
	r    *bufio.Reader
	line int
	err  error // sticky
}

// NewBundleReader returns a reader of the bundle in r.
func NewBundleReader(r io.Reader) *BundleReader {
	return &BundleReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Header reads the first line. A line that is not a canonical header of
// Format is a *LineError.
func (br *BundleReader) Header() (Header, error) {
	line, err := br.readLine()
	if err == io.EOF {
		return Header{}, &LineError{Line: 1, Err: errors.New("empty bundle")}
	}
	if err != nil {
		return Header{}, err
	}
	var h Header
	if err := json.Unmarshal(line, &h); err != nil {
		return Header{}, &LineError{Line: br.line, Err: fmt.Errorf("not a bundle header: %v", err)}
	}
	if h.Format != Format {
		return Header{}, &LineError{Line: br.line, Err: fmt.Errorf("format %q, want %q", h.Format, Format)}
	}
	if err := canonicalLine(line, h); err != nil {
		return Header{}, &LineError{Line: br.line, Err: err}
	}
	return h, nil
}

// Next returns the next record, io.EOF after the last one, a *LineError for
// a line that is not a canonical entry or object line, or the reading
// error.
func (br *BundleReader) Next() (Record, error) {
	line, err := br.readLine()
	if err != nil {
		return Record{}, err
	}
	var m map[string]json.RawMessage
	fail := func(err error) (Record, error) {
		le := &LineError{Line: br.line, ID: lenientID(line), Err: err}
		if len(m) == 1 && (m["entry"] != nil || m["object"] != nil) {
			le.Kind = "entry"
			if m["object"] != nil {
				le.Kind = "object"
			}
		}
		return Record{}, le
	}
	if err := json.Unmarshal(line, &m); err != nil {
		m = nil
		return fail(fmt.Errorf("not a JSON object: %v", err))
	}
	if len(m) != 1 {
		return fail(fmt.Errorf("a record line has one key, this one %d", len(m)))
	}
	switch {
	case m["entry"] != nil:
		var e trail.Entry
		if err := json.Unmarshal(m["entry"], &e); err != nil {
			return fail(fmt.Errorf("entry: %v", err))
		}
		if err := canonicalLine(line, entryLine{Entry: e}); err != nil {
			return fail(err)
		}
		return Record{Line: br.line, Entry: &e}, nil
	case m["object"] != nil:
		var o objectJSON
		if err := json.Unmarshal(m["object"], &o); err != nil {
			return fail(fmt.Errorf("object: %v", err))
		}
		d, err := casstore.Parse(o.Digest)
		if err != nil {
			return fail(fmt.Errorf("object digest: %v", err))
		}
		data, err := base64.StdEncoding.DecodeString(o.Data)
		if err != nil {
			return fail(fmt.Errorf("object data: %v", err))
		}
		obj := objectJSON{Digest: d.String(), Data: base64.StdEncoding.EncodeToString(data)}
		if err := canonicalLine(line, objectLine{Object: obj}); err != nil {
			return fail(err)
		}
		return Record{Line: br.line, Object: &Object{Digest: d, Data: data}}, nil
	}
	return fail(errors.New(`neither an "entry" nor an "object" line`))
}

// canonicalLine checks that line is exactly the canonical form of v, the
// record decoded from it. Go's JSON decoding accepts other spellings
// (key case, duplicate and unknown keys, escapes, whitespace); a bundle
// may not use them.
func canonicalLine(line []byte, v any) error {
	want, err := trail.Canonical(v)
	if err != nil {
		return fmt.Errorf("re-encode record: %v", err)
	}
	if !bytes.Equal(line, want) {
		return errors.New("line is not the canonical form of its record")
	}
	return nil
}

// readLine returns the next line without its "\n", io.EOF at the end. A
// last line without "\n" or a line over MaxLine is a *LineError, after
// which reading ends (io.EOF).
func (br *BundleReader) readLine() ([]byte, error) {
	if br.err != nil {
		return nil, br.err
	}
	var line []byte
	for {
		chunk, err := br.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine+1 {
			br.line++
			br.err = io.EOF
			return nil, &LineError{Line: br.line, Err: fmt.Errorf("line longer than %d bytes", MaxLine)}
		}
		switch {
		case err == nil:
			br.line++
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) == 0:
			br.err = io.EOF
			return nil, io.EOF
		case err == io.EOF:
			br.line++
			br.err = io.EOF
			return nil, &LineError{Line: br.line, ID: lenientID(line), Err: errors.New("last line does not end in a newline")}
		}
		br.err = fmt.Errorf("read bundle: %w", err)
		return nil, br.err
	}
}

// idPattern finds an entry's id in its canonical line, whose keys are
// sorted: "event_type" comes right before "id".
var idPattern = regexp.MustCompile(`"event_type":"[^"]*","id":"([0-9A-HJKMNP-TV-Z]{26})"`)

// lenientID returns the entry id or object digest a damaged line seems to
// carry, for reports; "" if it finds none.
func lenientID(line []byte) string {
	var m map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(line)).Decode(&m) == nil {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			var x struct {
				ID     string `json:"id"`
				Digest string `json:"digest"`
			}
			if json.Unmarshal(m[k], &x) == nil {
				if x.ID != "" {
					return x.ID
				}
				if x.Digest != "" {
					return x.Digest
				}
			}
		}
	}
	if sm := idPattern.FindSubmatch(line); sm != nil {
		return string(sm[1])
	}
	return ""
}
