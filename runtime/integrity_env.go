package runtime

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/envelope/envstore"
	"github.com/wacpd/wacpd/internal/atomicfile"
	"github.com/wacpd/wacpd/runtime/delivery"
)

// Files of the envelope proof key, in DataDir (the Badger directory).
const (
	// EnvelopeKeyFile holds the Ed25519 seed that proves envelopes
	// (standard base64, one line), mode 0600.
	EnvelopeKeyFile = "envelope.key"
	// EnvelopePublicKeyFile holds its public key as envelope.KeyID
	// writes it ("ed25519:<base64>"), for auditors.
	EnvelopePublicKeyFile = "envelope.pub"
	// envelopeKeyPending is the key while the envelopes of an earlier
	// release are proved with it (proveLegacyEnvelopes); renamed to
	// EnvelopeKeyFile when they all are.
	envelopeKeyPending = EnvelopeKeyFile + ".new"
)

// envelopeKey is the engine's envelope proof key (WACP Security §4.1):
// every envelope the engine creates is signed with it on behalf of its
// authenticated sender, and verified with it whenever a stored envelope
// is read back to be delivered or handed out. Set at open, then only read.
type envelopeKey struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	// legacy is set while the data dir's envelopes of a release before
	// proofs have yet to be proved (the key is envelope.key.new).
	legacy bool
}

// loadEnvelopeKey reads the data dir's envelope key, or makes one: in
// envelope.key.new when the data dir has none, so that open proves the
// envelopes an earlier release stored (proveLegacyEnvelopes) before the
// key becomes envelope.key. An in-memory engine has a key of its own run.
func loadEnvelopeKey(cfg Config) (*envelopeKey, error) {
	if cfg.InMemory {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate envelope key: %w", err)
		}
		return &envelopeKey{priv: priv, pub: pub}, nil
	}
	path := filepath.Join(cfg.DataDir, EnvelopeKeyFile)
	k, err := readEnvelopeKey(path)
	if err == nil {
		// The public key auditors were given must be this key's: a key
		// file changed since would prove envelopes nobody can check, and
		// refuse every envelope stored before.
		pub, perr := os.ReadFile(filepath.Join(cfg.DataDir, EnvelopePublicKeyFile))
		if perr == nil && strings.TrimSpace(string(pub)) != envelope.KeyID(k.pub) {
			return nil, fmt.Errorf("%s does not match %s: the envelope key was changed; restore it from a backup", path, EnvelopePublicKeyFile)
		}
		if perr != nil && !errors.Is(perr, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", EnvelopePublicKeyFile, perr)
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	pending := filepath.Join(cfg.DataDir, envelopeKeyPending)
	k, err = readEnvelopeKey(pending)
	if errors.Is(err, fs.ErrNotExist) {
		// crypto/rand, not cfg.Entropy: tests seed that for ids.
		_, priv, gerr := ed25519.GenerateKey(rand.Reader)
		if gerr != nil {
			return nil, fmt.Errorf("generate envelope key: %w", gerr)
		}
		line := base64.StdEncoding.EncodeToString(priv.Seed()) + "\n"
		if err := atomicfile.WriteFile(pending, []byte(line), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", pending, err)
		}
		k, err = readEnvelopeKey(pending)
	}
	if err != nil {
		return nil, err
	}
	k.legacy = true
	return k, nil
}

// readEnvelopeKey reads a key file, refusing one others may read.
func readEnvelopeKey(path string) (*envelopeKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read envelope key: %w", err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %v); chmod 600 it", path, st.Mode().Perm())
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s: not the base64 of a %d-byte Ed25519 seed", path, ed25519.SeedSize)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return &envelopeKey{priv: priv, pub: priv.Public().(ed25519.PublicKey)}, nil
}

// legacyBatch bounds the envelopes proved in one commit.
const legacyBatch = 256

// proveLegacyEnvelopes proves, once, the envelopes a release before proofs
// stored without one, then makes the key envelope.key (and writes
// envelope.pub). It runs at open before anything is delivered; after it
// an envelope without a proof is a violation (proof_missing). The data
// dir is trusted at that moment, as the rights table built from the trail
// is: docs/conformance.md, deviation 61.
func (e *Engine) proveLegacyEnvelopes(ctx context.Context) error {
	k := e.envKey
	if !k.legacy {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var after string
	proved := 0
	for {
		var n int
		err := e.run(ctx, 0, func() error {
			return e.commit(func(t *tx) error {
				envs, err := envstore.Unproven(t.txn, after, legacyBatch)
				if err != nil {
					return err
				}
				n = len(envs)
				for i := range envs {
					envelope.Prove(k.priv, &envs[i])
					if err := t.step("envelope_proved"); err != nil {
						return err
					}
					if err := envstore.Put(t.txn, envs[i]); err != nil {
						return err
					}
					after = envs[i].ID
				}
				return nil
			})
		})
		if err != nil {
			return fmt.Errorf("prove the envelopes stored before proofs: %w", err)
		}
		proved += n
		if n < legacyBatch {
			break
		}
	}
	if proved > 0 {
		e.lg.Info("proved the envelopes an earlier release stored without an integrity proof", "envelopes", proved)
	}
	if e.cfg.InMemory {
		k.legacy = false
		return nil
	}
	pub := envelope.KeyID(k.pub) + "\n"
	if err := atomicfile.WriteFile(filepath.Join(e.cfg.DataDir, EnvelopePublicKeyFile), []byte(pub), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", EnvelopePublicKeyFile, err)
	}
	if err := os.Rename(filepath.Join(e.cfg.DataDir, envelopeKeyPending), filepath.Join(e.cfg.DataDir, EnvelopeKeyFile)); err != nil {
		return fmt.Errorf("install envelope key: %w", err)
	}
	if err := atomicfile.SyncDir(e.cfg.DataDir); err != nil {
		return err
	}
	k.legacy = false
	return nil
}

// EnvelopePublicKey returns the public key that verifies the proofs of
// this engine's envelopes (envelope.VerifyProof).
func (e *Engine) EnvelopePublicKey() ed25519.PublicKey { return e.envKey.pub }

// Prove is delivery's hook (deliveryTx): the envelope's proof, made on
// behalf of its sender, whom the caller authenticated.
func (d deliveryTx) Prove(env *envelope.Envelope) { envelope.Prove(d.t.e.envKey.priv, env) }

// Verify is delivery's hook (deliveryTx): the stored envelope's proof
// against the engine's key.
func (d deliveryTx) Verify(env envelope.Envelope) error {
	return envelope.VerifyProof(d.t.e.envKey.pub, env)
}

// rejectTampered returns the plan that rejects env, held at a gate, whose
// proof does not verify (ierr) instead of delivering it.
func rejectTampered(env envelope.Envelope, ierr error) func(*tx) error {
	return func(t *tx) error {
		var ie *envelope.IntegrityError
		if !errors.As(ierr, &ie) {
			return ierr
		}
		return delivery.Reject(deliveryTx{t}, &env, ie)
	}
}
