package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wacpd/wacpd/internal/atomicfile"
	"github.com/wacpd/wacpd/wire"
)

// Files the daemon keeps in its data dir (wire-v1 §1).
const (
	AdminTokenFile = "admin.token" // the coordinator's bearer token, mode 0600
	InfoFile       = "wacpd.json"  // written once the daemon accepts requests
)

// adminToken returns the admin token of dir, creating admin.token (0600) on
// the first start. A token file readable by others is refused.
func adminToken(dir string) (string, error) {
	path := filepath.Join(dir, AdminTokenFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		tok, err := newToken()
		if err != nil {
			return "", err
		}
		if err := atomicfile.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("write %s: %w", path, err)
		}
		return tok, nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is readable by others (mode %v); chmod 600 it", path, st.Mode().Perm())
	}
	tok := strings.TrimSpace(string(b))
	if !strings.HasPrefix(tok, "wacp_") {
		return "", fmt.Errorf("%s does not hold a wacp token", path)
	}
	return tok, nil
}

// writeInfo writes wacpd.json atomically.
func writeInfo(dir string, info wire.DaemonFile) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, InfoFile), append(b, '\n'), 0o644)
}
