// Package secret seals the secrets a store keeps at rest, so that reading the
// database does not reveal them.
//
// A [Sealer] turns a secret into authenticated ciphertext bound to associated
// data (AAD) that names the record it belongs to, and back. [Keyring] is the
// standard implementation: AES-256-GCM under host-provided keys, each with an
// id, one of them current. Sealed bytes name the key that sealed them, so a
// keyring can take a new current key while older keys still open what they
// sealed: keys rotate without rewriting stored rows.
//
// # Sealed format
//
// Version 1, the only one:
//
//	0x01 || len(id) (1 byte, 1..MaxKeyIDLen) || id || nonce (12 bytes) || ciphertext || tag (16 bytes)
//
// The GCM additional data is the header (version, id length, id) followed by
// the caller's AAD, so neither the key id nor the record binding can be
// changed without Open failing. Nonces are 96 random bits from crypto/rand:
// seal fewer than 2^32 secrets under one key (rotate well before that).
//
// The package uses only the standard library (crypto/aes, crypto/cipher).
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
)

// Sealer seals secrets before they are stored and opens them after they are
// read.
//
// Seal returns an authenticated encryption of plaintext bound to aad; Open
// returns the plaintext only for bytes Seal produced with the same aad, and
// an error for anything else (other aad, altered or truncated bytes, a key
// the Sealer does not hold). The sealed form identifies the key that sealed
// it, so an implementation can rotate keys and still open older values.
// Implementations are safe for concurrent use and retain neither argument.
type Sealer interface {
	Seal(plaintext, aad []byte) (sealed []byte, err error)
	Open(sealed, aad []byte) (plaintext []byte, err error)
}

// Sizes of keys and of the sealed format.
const (
	// KeySize is the length of a [Key]'s secret: AES-256.
	KeySize = 32
	// MaxKeyIDLen is the longest key id, in bytes.
	MaxKeyIDLen = 64
	// FormatVersion is the first byte of every sealed value this package
	// writes, and the only version it opens.
	FormatVersion = 1
	nonceSize     = 12
	tagSize       = 16
)

// Errors of [Keyring.Open] and [KeyID]; test with errors.Is.
var (
	// ErrMalformed: the bytes are not a sealed value of FormatVersion.
	ErrMalformed = errors.New("secret: malformed sealed value")
	// ErrUnknownKey: the sealed value names a key id the keyring does not
	// hold.
	ErrUnknownKey = errors.New("secret: sealed under a key the keyring does not hold")
	// ErrNotAuthentic: the tag does not verify: the bytes were altered, or
	// the AAD differs from the one they were sealed with.
	ErrNotAuthentic = errors.New("secret: sealed value does not authenticate")
)

// Key is one AES-256 key of a [Keyring]: its id, written into every value it
// seals, and its KeySize secret bytes. An id is 1 to MaxKeyIDLen characters
// of A-Z, a-z, 0-9, '.', '_' and '-'; it is not secret. The secret is
// unexported and formatting a Key with the fmt package (any verb) prints only
// its id, so a Key logged by mistake does not leak; [Key.Encode] is the one
// way to write the secret out. The zero Key is invalid.
type Key struct {
	id     string
	secret []byte
}

// NewKey returns the key id with a copy of secret, which must be exactly
// KeySize bytes (from a secret manager or [GenerateKey], never a password).
func NewKey(id string, secret []byte) (Key, error) {
	if err := checkID(id); err != nil {
		return Key{}, err
	}
	if len(secret) != KeySize {
		return Key{}, fmt.Errorf("secret: key %s is %d bytes, want %d", id, len(secret), KeySize)
	}
	return Key{id: id, secret: append([]byte(nil), secret...)}, nil
}

// GenerateKey returns a new key with id whose secret is KeySize bytes read
// from rand (crypto/rand when nil).
func GenerateKey(rand io.Reader, id string) (Key, error) {
	if rand == nil {
		return NewKey(id, randKey())
	}
	sec := make([]byte, KeySize)
	if _, err := io.ReadFull(rand, sec); err != nil {
		return Key{}, fmt.Errorf("secret: generating key %s: %w", id, err)
	}
	return NewKey(id, sec)
}

func randKey() []byte {
	b := make([]byte, KeySize)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it crashes the program instead)
	return b
}

// ParseKey reads a key in the form "<id>:<base64 secret>" (the form
// [Key.Encode] writes; standard or URL alphabet, padded or not), as a host
// would keep it in an environment variable or a secret manager. The secret
// must decode to exactly KeySize bytes. Errors never echo the secret.
func ParseKey(s string) (Key, error) {
	id, b64, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Key{}, errors.New(`secret: a key is written "<id>:<base64 of 32 bytes>"`)
	}
	if err := checkID(id); err != nil {
		return Key{}, err
	}
	b64 = strings.TrimRight(b64, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(b64, "-_") {
		enc = base64.RawURLEncoding
	}
	sec, err := enc.DecodeString(b64)
	if err != nil {
		return Key{}, fmt.Errorf("secret: key %s: the secret is not base64", id)
	}
	return NewKey(id, sec)
}

// ID returns the key's id.
func (k Key) ID() string { return k.id }

// Encode returns the key as "<id>:<base64 secret>" (standard alphabet,
// padded), which [ParseKey] reads. The result is secret.
func (k Key) Encode() string { return k.id + ":" + base64.StdEncoding.EncodeToString(k.secret) }

// String returns "secret.Key(<id>)", never the secret.
func (k Key) String() string { return "secret.Key(" + k.id + ")" }

// Format writes [Key.String] for every verb, so no fmt verb (%x, %d, %#v
// included) prints the secret.
func (k Key) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

func checkID(id string) error {
	if id == "" || len(id) > MaxKeyIDLen {
		return fmt.Errorf("secret: a key id is 1 to %d bytes, got %d", MaxKeyIDLen, len(id))
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return fmt.Errorf("secret: key id %q may hold only A-Z, a-z, 0-9, '.', '_' and '-'", id)
		}
	}
	return nil
}

func idByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// Keyring is a [Sealer] using AES-256-GCM: it seals under its current key
// and opens values sealed under any key it holds. It is safe for concurrent
// use, [Keyring.Rotate] included; Seal and Open take no lock. The zero value
// holds no key: Seal and Open fail until Rotate gives it one; so do they on
// a nil *Keyring (what a failed NewKeyring returns), rather than panic. Use
// [NewKeyring].
type Keyring struct {
	mu    sync.Mutex // serializes Rotate
	state atomic.Pointer[ringState]
}

// ringState is an immutable snapshot of a keyring.
type ringState struct {
	current *ringKey
	keys    map[string]*ringKey
}

type ringKey struct {
	header []byte // FormatVersion || len(id) || id
	secret []byte
	aead   cipher.AEAD
}

// NewKeyring returns a keyring that seals under current and opens values
// sealed under current or any of older. A zero Key, or one id given with two
// different secrets, is an error.
func NewKeyring(current Key, older ...Key) (*Keyring, error) {
	st := &ringState{keys: map[string]*ringKey{}}
	for _, k := range append([]Key{current}, older...) {
		if err := st.add(k); err != nil {
			return nil, err
		}
	}
	st.current = st.keys[current.id]
	r := &Keyring{}
	r.state.Store(st)
	return r, nil
}

// add puts k into st, which must not be published yet.
func (st *ringState) add(k Key) error {
	if checkID(k.id) != nil || len(k.secret) != KeySize {
		return errors.New("secret: a zero or invalid Key (make keys with NewKey, GenerateKey or ParseKey)")
	}
	if have, ok := st.keys[k.id]; ok {
		if subtle.ConstantTimeCompare(have.secret, k.secret) != 1 {
			return fmt.Errorf("secret: key id %s is given with two different secrets", k.id)
		}
		return nil
	}
	sec := append([]byte(nil), k.secret...)
	block, err := aes.NewCipher(sec)
	if err != nil {
		return fmt.Errorf("secret: key %s: %w", k.id, err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return fmt.Errorf("secret: key %s: %w", k.id, err)
	}
	h := append([]byte{FormatVersion, byte(len(k.id))}, k.id...)
	st.keys[k.id] = &ringKey{header: h, secret: sec, aead: aead}
	return nil
}

// Rotate makes next the current key: values sealed from now on name it,
// and every key the keyring held still opens what it sealed. Rotating to an
// id the keyring holds with the same secret only makes it current again;
// with another secret it is an error and nothing changes.
func (r *Keyring) Rotate(next Key) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.state.Load()
	st := &ringState{keys: map[string]*ringKey{}}
	if old != nil {
		for id, k := range old.keys {
			st.keys[id] = k
		}
	}
	if err := st.add(next); err != nil {
		return err
	}
	st.current = st.keys[next.id]
	r.state.Store(st)
	return nil
}

// CurrentKeyID returns the id of the key Seal uses; empty for the zero
// Keyring.
func (r *Keyring) CurrentKeyID() string {
	if r == nil {
		return ""
	}
	if st := r.state.Load(); st != nil {
		return string(st.current.header[2:])
	}
	return ""
}

var errNoKey = errors.New("secret: the keyring holds no key (use NewKeyring)")

// Seal encrypts plaintext under the current key, bound to aad, and returns
// the sealed value in the format of the package documentation: 2 + len(id) +
// 28 bytes longer than plaintext.
func (r *Keyring) Seal(plaintext, aad []byte) ([]byte, error) {
	if r == nil {
		return nil, errNoKey
	}
	st := r.state.Load()
	if st == nil {
		return nil, errNoKey
	}
	k := st.current
	out := make([]byte, len(k.header), len(k.header)+nonceSize+len(plaintext)+tagSize)
	copy(out, k.header)
	return k.aead.Seal(out, nil, plaintext, additionalData(k.header, aad)), nil
}

// Open returns the plaintext of a value Seal produced with the same aad,
// under any key the keyring holds. Errors wrap [ErrMalformed],
// [ErrUnknownKey] or [ErrNotAuthentic]; none of them echoes the sealed
// bytes.
func (r *Keyring) Open(sealed, aad []byte) ([]byte, error) {
	if r == nil {
		return nil, errNoKey
	}
	st := r.state.Load()
	if st == nil {
		return nil, errNoKey
	}
	header, body, err := parse(sealed)
	if err != nil {
		return nil, err
	}
	k, ok := st.keys[string(header[2:])]
	if !ok {
		return nil, fmt.Errorf("%w (key id %q)", ErrUnknownKey, header[2:])
	}
	pt, err := k.aead.Open(nil, nil, body, additionalData(header, aad))
	if err != nil {
		return nil, ErrNotAuthentic
	}
	return pt, nil
}

// KeyID returns the id of the key a sealed value names, without opening it:
// a host re-sealing stored values before retiring a key finds them with it.
// It checks the format only; the value may still fail to authenticate.
func KeyID(sealed []byte) (string, error) {
	header, _, err := parse(sealed)
	if err != nil {
		return "", err
	}
	return string(header[2:]), nil
}

// parse splits a sealed value into its header (version, id length, key id)
// and the nonce, ciphertext and tag that follow.
func parse(b []byte) (header, body []byte, err error) {
	if len(b) < 2 {
		return nil, nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	if b[0] != FormatVersion {
		return nil, nil, fmt.Errorf("%w: version %d, want %d", ErrMalformed, b[0], FormatVersion)
	}
	n := int(b[1])
	if n == 0 || n > MaxKeyIDLen || len(b) < 2+n {
		return nil, nil, fmt.Errorf("%w: key id length %d", ErrMalformed, n)
	}
	for _, c := range b[2 : 2+n] {
		if !idByte(c) {
			return nil, nil, fmt.Errorf("%w: the key id holds a byte outside A-Z, a-z, 0-9, '.', '_', '-'", ErrMalformed)
		}
	}
	header, body = b[:2+n], b[2+n:]
	if len(body) < nonceSize+tagSize {
		return nil, nil, fmt.Errorf("%w: %d bytes after the header, want at least %d", ErrMalformed, len(body), nonceSize+tagSize)
	}
	return header, body, nil
}

// additionalData is the GCM AAD: the header, then the caller's AAD. The
// header states its own length, so the split is unambiguous.
func additionalData(header, aad []byte) []byte {
	ad := make([]byte, 0, len(header)+len(aad))
	return append(append(ad, header...), aad...)
}
