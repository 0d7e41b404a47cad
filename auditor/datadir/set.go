package datadir

import (
	"context"
	"errors"
	"fmt"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/traillog"
)

// VerifyMember is VerifyWithKey, which, when dir verifies, also reads what
// auditor.VerifySet compares from its trail: entry #1 (auditor.GenesisOf)
// and the workspaces created after it. Member.Name is dir. It reads the
// trail a second time, after the check, from the same read-only database.
func VerifyMember(dir, publicKey string) (auditor.Member, error) {
	m := auditor.Member{Name: dir}
	var err error
	m.Report, err = verify(dir, publicKey, func(l *traillog.Log) error {
		return l.ScanAfter(context.Background(), 0, func(seq uint64, e trail.Entry) bool {
			switch {
			case seq == 1:
				m.Genesis = auditor.GenesisOf(e)
			case e.EventType == trail.EventWorkspaceCreated:
				m.Created = append(m.Created, e.Workspace)
			}
			return true
		})
	})
	if err != nil {
		return auditor.Member{}, fmt.Errorf("%s: %w", dir, err)
	}
	return m, nil
}

// VerifySet verifies the data dirs of the stopped daemons of one
// deployment, offline: each as VerifyWithKey does (VerifyMember), then
// the set (auditor.VerifySet). publicKeys is nil, trusting each dir's
// trail.pub, or holds the key trusted for each dir, in order ("" trusts
// that dir's trail.pub). An error means a dir could not be checked (it
// names the dir); a dir or a set that fails a check is a SetReport with OK
// false.
func VerifySet(dirs, publicKeys []string) (auditor.SetReport, error) {
	if publicKeys != nil && len(publicKeys) != len(dirs) {
		return auditor.SetReport{}, errors.New("datadir: one public key per data dir, or none")
	}
	members := make([]auditor.Member, len(dirs))
	for i, dir := range dirs {
		key := ""
		if publicKeys != nil {
			key = publicKeys[i]
		}
		m, err := VerifyMember(dir, key)
		if err != nil {
			return auditor.SetReport{}, err
		}
		members[i] = m
	}
	return auditor.VerifySet(members), nil
}
