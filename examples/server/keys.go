package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// Environment variables holding the service's keys (see walletauth.Keys):
// the at-rest keys of OTP issuances and the bundle signing key. Keys are
// read from the environment, not from flags, so they do not show in process
// listings.
const (
	// envSealKeys is a comma-separated list of "<id>:<base64 of 32 bytes>"
	// keys: the first seals, every one opens (list a retired key after the
	// new one until the rows it sealed have expired).
	envSealKeys = "WALLETGATE_SEAL_KEYS"
	// envCodeMACKey is the base64 of at least 32 random bytes.
	envCodeMACKey = "WALLETGATE_CODE_MAC_KEY"
	// envSigningKey is the base64 of the 32-byte P-256 private scalar that
	// signs the OTP and export bundles, the key clients pin.
	envSigningKey = "WALLETGATE_BUNDLE_SIGNING_KEY"
)

// signingKey reads the bundle signing key from the environment: nil when
// the variable is unset (the sandbox generates one per process), an error
// naming the variable, never echoing its value, when it does not parse.
func signingKey() (*ecdsa.PrivateKey, error) {
	v := os.Getenv(envSigningKey)
	if v == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil {
		return nil, fmt.Errorf("%s is not standard base64", envSigningKey)
	}
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), b)
	if err != nil {
		return nil, fmt.Errorf("%s is not a P-256 private key", envSigningKey)
	}
	return k, nil
}

// atRestKeys reads the keys from the environment. Both variables unset
// gives nil keys (the sandbox generates its own per process); one without
// the other, or a value that does not parse, is an error naming the
// variable but never echoing its value.
func atRestKeys() (secret.Sealer, []byte, error) {
	seal, mac := os.Getenv(envSealKeys), os.Getenv(envCodeMACKey)
	if seal == "" && mac == "" {
		return nil, nil, nil
	}
	if seal == "" || mac == "" {
		return nil, nil, fmt.Errorf("set both %s and %s, or neither", envSealKeys, envCodeMACKey)
	}
	var keys []secret.Key
	for i, s := range strings.Split(seal, ",") {
		k, err := secret.ParseKey(s)
		if err != nil {
			return nil, nil, fmt.Errorf("%s, key %d: %w", envSealKeys, i+1, err)
		}
		keys = append(keys, k)
	}
	ring, err := secret.NewKeyring(keys[0], keys[1:]...)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", envSealKeys, err)
	}
	macKey, err := base64.StdEncoding.DecodeString(strings.TrimSpace(mac))
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not standard base64", envCodeMACKey)
	}
	if len(macKey) < walletauth.MinCodeMACKeyLen {
		return nil, nil, fmt.Errorf("%s is %d bytes, want at least %d", envCodeMACKey, len(macKey), walletauth.MinCodeMACKeyLen)
	}
	return ring, macKey, nil
}

// printNewKeys writes fresh values of the three variables, as shell
// assignments, for -gen-keys.
func printNewKeys(out io.Writer) error {
	k, err := secret.GenerateKey(nil, "k1")
	if err != nil {
		return err
	}
	mac := make([]byte, walletauth.MinCodeMACKeyLen)
	_, _ = rand.Read(mac) // crypto/rand.Read never fails
	sign, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	raw, err := sign.Bytes()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s=%s\n%s=%s\n%s=%s\n", envSealKeys, k.Encode(), envCodeMACKey, base64.StdEncoding.EncodeToString(mac),
		envSigningKey, base64.StdEncoding.EncodeToString(raw))
	return err
}
