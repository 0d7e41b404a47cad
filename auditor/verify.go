package auditor

import (
	"errors"
	"fmt"
	"io"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/trail"
)

// Report is the outcome of Verify. On failure the counts cover what was
// checked before the first violation.
type Report struct {
	OK         bool   `json:"ok"`
	Entries    int    `json:"entries"`    // entries whose hashes and chains verified
	Workspaces int    `json:"workspaces"` // workspace chains among them
	Objects    int    `json:"objects"`    // referenced objects that verified
	Size       uint64 `json:"size"`       // the signed tree head's size
	Root       string `json:"root,omitempty"`
	Origin     string `json:"origin,omitempty"`
	Timestamp  string `json:"timestamp,omitempty"`  // when the tree head was signed
	PublicKey  string `json:"public_key,omitempty"` // the key the tree head verified with

	// FirstBad names where the first violation is: an entry id ("#N" for
	// entry N without one); "sth" for the tree head; an object's digest for
	// an object no entry claims; or "line N" for a line too damaged to name
	// anything.
	FirstBad  string    `json:"first_bad,omitempty"`
	Violation Violation `json:"violation,omitempty"`
	Detail    string    `json:"detail,omitempty"`
}

// Verify checks a bundle read from r (see the package documentation for
// the checks and their order) and reports the first violation. The tree
// head is checked against the bundle's own public key: compare
// Report.PublicKey with the key you trust, or use VerifyWithKey. An error
// means the check could not run (r failed); a broken bundle is a Report
// with OK false.
func Verify(r io.Reader) (Report, error) { return VerifyWithKey(r, "") }

// VerifyWithKey is Verify with the public key the auditor trusts: a bundle
// whose header names another key fails with signature_invalid. An empty
// publicKey trusts the bundle's.
func VerifyWithKey(r io.Reader, publicKey string) (Report, error) {
	v := newVerifier(publicKey, false)
	br := NewBundleReader(r)
	h, err := br.Header()
	var le *LineError
	switch {
	case errors.As(err, &le):
		v.fail("sth", ViolationSignatureInvalid, "header: %v", le.Err)
		return v.report(), nil
	case err != nil:
		return Report{}, err
	}
	if !v.header(h) {
		return v.report(), nil
	}
	objects := false // the entries have ended
	for {
		rec, err := br.Next()
		if err == io.EOF {
			break
		}
		if errors.As(err, &le) {
			if le.Kind == "object" && !objects {
				objects = true
				if !v.endEntries() {
					return v.report(), nil
				}
			}
			if objects {
				v.objectLineError(le)
				continue
			}
			v.fail(orLine(le.ID, le.Line), ViolationHashMismatch, "line %d: %v", le.Line, le.Err)
			return v.report(), nil
		}
		if err != nil {
			return Report{}, err
		}
		switch {
		case rec.Entry != nil && objects:
			v.fail(orLine(rec.Entry.ID, rec.Line), ViolationHashMismatch, "line %d: entry after the objects", rec.Line)
			return v.report(), nil
		case rec.Entry != nil:
			if !v.entry(*rec.Entry) {
				return v.report(), nil
			}
		default:
			if !objects {
				objects = true
				if !v.endEntries() {
					return v.report(), nil
				}
			}
			v.object(rec.Object.Digest, rec.Object.Data)
		}
	}
	if !objects && !v.endEntries() {
		return v.report(), nil
	}
	v.endObjects()
	return v.report(), nil
}

func orLine(id string, line int) string {
	if id != "" {
		return id
	}
	return fmt.Sprintf("line %d", line)
}

// verifier holds the state of one verification, fed in order: header,
// entries, endEntries, objects, endObjects. Each step returns false once a
// violation was found.
type verifier struct {
	trusted   string // the public key to require, "" for the header's
	allowTail bool   // entries beyond the signed size are checked by hashes and chains only

	rep      Report
	sth      trail.TreeHead
	n        uint64        // entries seen
	walk     *trail.Walker // the trail's rule set over the entries
	prevName string        // the last entry's id, or "#N" when it has none

	refs    []claim // in entry order
	claimed map[casstore.Ref]bool
	objs    map[casstore.Ref]objInfo
	stray   []problem // object lines no reference accounts for, in line order
	last    casstore.Ref
	anyObj  bool
}

// claim is what a checkpoint_created entry says of its object.
type claim struct {
	Reference
	body checkpointBody
}

// objInfo is what an object line turned out to hold.
type objInfo struct {
	problem             string // "" when the object hashes and decodes
	id, ws, typ, status string
}

type problem struct{ where, detail string }

func newVerifier(trusted string, allowTail bool) *verifier {
	return &verifier{
		trusted: trusted, allowTail: allowTail,
		claimed: map[casstore.Ref]bool{}, objs: map[casstore.Ref]objInfo{},
	}
}

func (v *verifier) fail(where string, kind Violation, format string, args ...any) bool {
	if v.rep.Violation == "" {
		v.rep.FirstBad, v.rep.Violation, v.rep.Detail = where, kind, fmt.Sprintf(format, args...)
	}
	return false
}

func (v *verifier) report() Report {
	r := v.rep
	if v.walk != nil {
		r.Workspaces = v.walk.Workspaces()
	}
	r.OK = r.Violation == ""
	return r
}

// VerifyHeader checks a signed tree head against its public key, or
// against trusted when that is not "": the Report has the head's size,
// root, origin and time, and OK false with ViolationSignatureInvalid at
// "sth" when the head does not verify. Verify and package auditor/datadir
// check heads with it.
func VerifyHeader(h Header, trusted string) Report {
	v := newVerifier(trusted, true)
	v.header(h)
	return v.report()
}

// header checks the signed tree head.
func (v *verifier) header(h Header) bool {
	v.rep.Size, v.rep.Root, v.rep.Origin, v.rep.Timestamp = h.STH.Size, h.STH.Root, h.STH.Origin, h.STH.Timestamp
	if v.trusted != "" && h.PublicKey != v.trusted {
		return v.fail("sth", ViolationSignatureInvalid, "the bundle's public key %q is not the trusted key %q", h.PublicKey, v.trusted)
	}
	signed, err := trail.OpenTreeHead(h.STH.Note, h.PublicKey)
	if err != nil {
		return v.fail("sth", ViolationSignatureInvalid, "%v", err)
	}
	v.rep.PublicKey = h.PublicKey
	if signed.Origin != h.STH.Origin || signed.Size != h.STH.Size || signed.Root != h.STH.Root ||
		signed.Timestamp != h.STH.Timestamp || h.Origin != h.STH.Origin {
		return v.fail("sth", ViolationSignatureInvalid,
			"the header says origin %q size %d root %s at %s, the signed note origin %q size %d root %s at %s",
			h.STH.Origin, h.STH.Size, h.STH.Root, h.STH.Timestamp, signed.Origin, signed.Size, signed.Root, signed.Timestamp)
	}
	v.sth = signed
	return true
}

// entry checks the next entry in global order with the trail's rule set
// (trail.Walker: hashes, both chains, per-workspace timestamps, nothing
// after a terminal state, the Merkle root at the signed size).
func (v *verifier) entry(e trail.Entry) bool {
	pos := v.n + 1
	id := e.ID
	if id == "" {
		id = fmt.Sprintf("#%d", pos)
	}
	if !v.allowTail && pos > v.sth.Size {
		return v.fail(id, ViolationChainBroken, "entry #%d is beyond the signed size %d", pos, v.sth.Size)
	}
	if v.walk == nil {
		root, err := trail.HashBytes(v.sth.Root)
		if err != nil {
			return v.fail("sth", ViolationRootMismatch, "root: %v", err)
		}
		v.walk = trail.NewWalker(v.sth.Size, root)
	}
	if f := v.walk.Next(e); f != nil {
		if f.Violation == trail.ViolationRootMismatch {
			v.rep.Entries++ // the entry passed; the tree of the signed size did not
			return v.fail("sth", ViolationRootMismatch, "%s", f.Detail)
		}
		return v.fail(id, Violation(f.Violation), "entry #%d: %s", pos, f.Detail)
	}
	body, ref, ok, err := reference(e)
	if err != nil {
		return v.fail(id, ViolationHashMismatch, "entry #%d: %v", pos, err)
	}
	if ok {
		ref.Entry = id
		v.refs = append(v.refs, claim{ref, body})
		v.claimed[ref.Digest] = true
	}
	v.n, v.prevName = pos, id
	v.rep.Entries++
	return true
}

// endEntries checks the entry count and the Merkle root.
func (v *verifier) endEntries() bool {
	if v.n < v.sth.Size {
		where := v.prevName
		if where == "" {
			where = "sth"
		}
		return v.fail(where, ViolationChainBroken, "the trail ends after %d entries; the tree head signs %d", v.n, v.sth.Size)
	}
	if v.sth.Size == 0 {
		if got := trail.FormatHash(trail.Hasher{}.EmptyRoot()); got != v.sth.Root {
			return v.fail("sth", ViolationRootMismatch, "the empty trail has root %s, the tree head signs %s", got, v.sth.Root)
		}
		return true
	}
	if v.walk == nil || !v.walk.RootChecked() {
		return v.fail("sth", ViolationRootMismatch, "the root of the first %d entries was not checked", v.sth.Size)
	}
	return true
}

// object checks one object line's content; what it proves is judged in
// endObjects, against the references.
func (v *verifier) object(digest casstore.Ref, data []byte) {
	if v.anyObj && digest.Compare(v.last) <= 0 {
		v.stray = append(v.stray, problem{digest.String(), "object lines are not sorted by digest, each once"})
		return
	}
	v.anyObj, v.last = true, digest
	if !v.claimed[digest] {
		v.stray = append(v.stray, problem{digest.String(), "object referenced by no checkpoint_created entry"})
		return
	}
	v.objs[digest] = checkObject(digest, data)
}

// objectLineError records a damaged object line: against the object it
// names, if it names a referenced one.
func (v *verifier) objectLineError(le *LineError) {
	if d, err := casstore.Parse(le.ID); err == nil && v.claimed[d] {
		if _, seen := v.objs[d]; !seen {
			v.objs[d] = objInfo{problem: fmt.Sprintf("line %d: %v", le.Line, le.Err)}
			return
		}
	}
	v.stray = append(v.stray, problem{orLine(le.ID, le.Line), fmt.Sprintf("line %d: %v", le.Line, le.Err)})
}

func checkObject(digest casstore.Ref, data []byte) objInfo {
	if got := casstore.RefOf(data); got != digest {
		return objInfo{problem: fmt.Sprintf("object %s hashes to %s", digest, got)}
	}
	c, err := checkpointchain.Decode(data)
	if err != nil {
		return objInfo{problem: fmt.Sprintf("object %s: %v", digest, err)}
	}
	return objInfo{id: c.ID, ws: c.Workspace, typ: c.Type, status: c.Status}
}

// endObjects judges the objects against the references, in entry order,
// then reports object lines no reference accounts for.
func (v *verifier) endObjects() bool {
	if v.rep.Violation != "" {
		return false
	}
	for _, ref := range v.refs {
		o, ok := v.objs[ref.Digest]
		switch {
		case !ok:
			return v.fail(ref.Entry, ViolationMissingObject, "checkpoint %s: no object %s", ref.Checkpoint, ref.Digest)
		case o.problem != "":
			return v.fail(ref.Entry, ViolationHashMismatch, "checkpoint %s: %s", ref.Checkpoint, o.problem)
		case o.id != ref.Checkpoint || o.ws != ref.body.Workspace || o.typ != ref.body.Type || o.status != ref.body.Status:
			return v.fail(ref.Entry, ViolationHashMismatch,
				"object %s holds checkpoint %s of %s (%s, %s), the entry says %s of %s (%s, %s)", ref.Digest,
				o.id, o.ws, o.typ, o.status, ref.Checkpoint, ref.body.Workspace, ref.body.Type, ref.body.Status)
		}
	}
	if len(v.stray) > 0 {
		return v.fail(v.stray[0].where, ViolationHashMismatch, "%s", v.stray[0].detail)
	}
	v.rep.Objects = len(v.objs)
	return true
}
