package auditor

import (
	"encoding/json"
	"fmt"

	"github.com/wacpd/wacpd/trail"
)

// Genesis is what trail entry #1 of a daemon's trail records: the creation
// of the root workspace, with the hash algorithm and the taxonomy of the
// run. Daemons of one deployment (issue 20) each keep a copy of the same
// root, so their entries #1 name the same root but differ in id, time and
// hash.
type Genesis struct {
	Root             string `json:"root"`       // the root workspace's id; "" when entry #1 is not a workspace_created
	EntryHash        string `json:"entry_hash"` // entry #1's entry_hash: the same in two trails only if they are copies
	HashAlgorithm    string `json:"hash_algorithm"`
	TaxonomyID       string `json:"taxonomy_id"`
	TaxonomyChecksum string `json:"taxonomy_checksum"`
}

// GenesisOf returns what entry e, a trail's entry #1, records. An entry
// that is not a workspace_created has no Root; body fields it lacks are
// empty.
func GenesisOf(e trail.Entry) Genesis {
	g := Genesis{EntryHash: e.Integrity.EntryHash}
	if e.EventType != trail.EventWorkspaceCreated {
		return g
	}
	g.Root = e.Workspace
	var body struct {
		HashAlgorithm    string `json:"hash_algorithm"`
		TaxonomyID       string `json:"taxonomy_id"`
		TaxonomyChecksum string `json:"taxonomy_checksum"`
	}
	if json.Unmarshal(e.Body, &body) == nil {
		g.HashAlgorithm, g.TaxonomyID, g.TaxonomyChecksum = body.HashAlgorithm, body.TaxonomyID, body.TaxonomyChecksum
	}
	return g
}

// Member is one daemon of a deployment as the verification of its trail
// found it (datadir.VerifyMember): what VerifySet compares.
type Member struct {
	Name    string  `json:"name"`   // where it was read from: the data dir's path
	Report  Report  `json:"report"` // the daemon's own verification
	Genesis Genesis `json:"genesis"`
	// Created lists the workspaces the trail creates (workspace_created)
	// after entry #1, in trail order. It is empty unless Report.OK.
	Created []string `json:"-"`
}

// SetViolation names the first check of VerifySet that failed.
type SetViolation string

// The checks of VerifySet, in the order it runs them.
const (
	// SetNoMembers: there is nothing to verify.
	SetNoMembers SetViolation = "no_members"
	// SetMemberBroken: the member's own verification failed
	// (Member.Report says where and why).
	SetMemberBroken SetViolation = "member_broken"
	// SetNoRoot: the member's entry #1 does not create a root workspace.
	SetNoRoot SetViolation = "no_root"
	// SetSameDaemon: two members are one daemon: their tree heads verify
	// with the same public key, or their trails begin with the same entry
	// (the same data dir given twice, or a copy of one).
	SetSameDaemon SetViolation = "same_daemon"
	// SetRootDiffers: the member's root workspace is not the first
	// member's.
	SetRootDiffers SetViolation = "root_differs"
	// SetHashAlgorithmDiffers: the member's entry #1 records another hash
	// algorithm than the first member's.
	SetHashAlgorithmDiffers SetViolation = "hash_algorithm_differs"
	// SetTaxonomyDiffers: the member's entry #1 records another taxonomy
	// (id or checksum) than the first member's.
	SetTaxonomyDiffers SetViolation = "taxonomy_differs"
	// SetWorkspaceInTwo: a workspace other than the root is created in two
	// members' trails; each lives in exactly one daemon.
	SetWorkspaceInTwo SetViolation = "workspace_in_two"
)

// SetReport is the outcome of VerifySet. When a check fails, Violation
// names it, Member (and Other, for a check between two members) name the
// members by Name, and Detail says what differs.
type SetReport struct {
	OK      bool     `json:"ok"`
	Root    string   `json:"root,omitempty"` // the deployment's root workspace, when OK
	Members []Member `json:"members"`

	Violation SetViolation `json:"violation,omitempty"`
	Member    string       `json:"member,omitempty"`
	Other     string       `json:"other,omitempty"`
	Detail    string       `json:"detail,omitempty"`
}

// VerifySet checks that members, each verified on its own, are the daemons
// of one deployment (issue 20): each verified (member_broken) and its entry
// #1 creates a root (no_root); no two are the same daemon (same_daemon: the
// same public key or the same entry #1); every one has the first member's
// root workspace, hash algorithm and taxonomy (root_differs,
// hash_algorithm_differs, taxonomy_differs); and no workspace but the root
// is created in two of them (workspace_in_two). The checks run in that
// order, each over the members in order, and the first failure is
// reported. It does no I/O: members are what each verification returned.
// A set of one member holds when that member verified; an empty set does
// not hold.
func VerifySet(members []Member) SetReport {
	r := SetReport{Members: members}
	fail := func(v SetViolation, m, other *Member, format string, args ...any) SetReport {
		r.Violation, r.Member, r.Detail = v, m.Name, fmt.Sprintf(format, args...)
		if other != nil {
			r.Other = other.Name
		}
		return r
	}
	if len(members) == 0 {
		r.Violation, r.Detail = SetNoMembers, "no members to verify"
		return r
	}
	for i := range members {
		m := &members[i]
		switch rep := m.Report; {
		case !rep.OK:
			return fail(SetMemberBroken, m, nil, "its trail is broken: %s at %s", rep.Violation, rep.FirstBad)
		case m.Genesis.Root == "":
			return fail(SetNoRoot, m, nil, "its entry #1 does not create a root workspace")
		}
	}
	for j := range members {
		for i := range j {
			a, b := &members[i], &members[j]
			switch {
			case a.Report.PublicKey == b.Report.PublicKey:
				return fail(SetSameDaemon, b, a, "both tree heads verify with public key %s", b.Report.PublicKey)
			case a.Genesis.EntryHash == b.Genesis.EntryHash:
				return fail(SetSameDaemon, b, a, "both trails begin with entry %s", b.Genesis.EntryHash)
			}
		}
	}
	first := &members[0]
	for i := 1; i < len(members); i++ {
		m, g, want := &members[i], members[i].Genesis, first.Genesis
		switch {
		case g.Root != want.Root:
			return fail(SetRootDiffers, m, first, "root workspace %s, not %s", g.Root, want.Root)
		case g.HashAlgorithm != want.HashAlgorithm:
			return fail(SetHashAlgorithmDiffers, m, first, "hash algorithm %q, not %q", g.HashAlgorithm, want.HashAlgorithm)
		case g.TaxonomyID != want.TaxonomyID || g.TaxonomyChecksum != want.TaxonomyChecksum:
			return fail(SetTaxonomyDiffers, m, first, "taxonomy %s (%s), not %s (%s)", g.TaxonomyID, g.TaxonomyChecksum, want.TaxonomyID, want.TaxonomyChecksum)
		}
	}
	in := map[string]int{} // workspace → the first member creating it
	for i := range members {
		for _, ws := range members[i].Created {
			j, seen := in[ws]
			switch {
			case !seen:
				in[ws] = i
			case j != i:
				return fail(SetWorkspaceInTwo, &members[i], &members[j], "workspace %s is created in both", ws)
			}
		}
	}
	r.OK, r.Root = true, first.Genesis.Root
	return r
}
