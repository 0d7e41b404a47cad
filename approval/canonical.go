package approval

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"

	"github.com/gowebpki/jcs"
)

// CanonicalizationVersion names how a request is put in canonical form:
// the JSON object Canonical, in RFC 8785 (JCS) form, hashed with SHA-256.
// A change to either is a new version.
const CanonicalizationVersion = "wacp-approval/jcs-sha256/1"

// Context is the execution context a request is bound to: the session
// (workspace) and agent that ask, the atlas whose action it is and that
// atlas's policy version. The resolution, request id, timestamps and
// telemetry are not part of it: a request asked again under a new
// resolution is the same request.
type Context struct {
	Session       string `json:"session"`
	Agent         string `json:"agent"`
	Atlas         string `json:"atlas"`
	PolicyVersion string `json:"policy_version"`
}

// Canonical is an action request in canonical form.
type Canonical struct {
	Version   string         `json:"canonicalization_version"`
	Tool      string         `json:"tool"` // the action_id
	Arguments map[string]any `json:"arguments"`
	Context   Context        `json:"context"`
	// Form is the request's canonical JSON (RFC 8785), Digest its
	// SHA-256 ("sha256:<hex>"); neither is part of the form itself.
	Form   json.RawMessage `json:"-"`
	Digest string          `json:"-"`
}

// Canonicalize returns tool's request with args in ctx in canonical form.
// args must be JSON (what the request decoded to).
func Canonicalize(tool string, args map[string]any, ctx Context) (Canonical, error) {
	if tool == "" {
		return Canonical{}, fmt.Errorf("%w: a request needs a tool", ErrRequest)
	}
	if args == nil {
		args = map[string]any{}
	}
	c := Canonical{Version: CanonicalizationVersion, Tool: tool, Arguments: args, Context: ctx}
	b, err := json.Marshal(c)
	if err != nil {
		return Canonical{}, fmt.Errorf("%w: %v", ErrRequest, err)
	}
	form, err := jcs.Transform(b)
	if err != nil {
		return Canonical{}, fmt.Errorf("%w: %v", ErrRequest, err)
	}
	sum := sha256.Sum256(form)
	c.Form, c.Digest = form, "sha256:"+hex.EncodeToString(sum[:])
	return c, nil
}

// SameDigest compares two digests in constant time.
func SameDigest(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// Paths returns the cleaned, sorted, distinct paths the request touches:
// the values of the parameters named (a string, or a list of strings;
// anything else is not a path and the action's schema refuses it).
func (c Canonical) Paths(params []string) []string {
	var out []string
	add := func(v any) {
		if s, ok := v.(string); ok && s != "" {
			out = append(out, path.Clean(s))
		}
	}
	for _, p := range params {
		switch v := c.Arguments[p].(type) {
		case []any:
			for _, x := range v {
				add(x)
			}
		case []string:
			for _, x := range v {
				add(x)
			}
		default:
			add(v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
