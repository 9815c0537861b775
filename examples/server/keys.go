package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// Environment variables holding the at-rest keys of OTP issuances (see
// walletauth.Config.Sealer and CodeMACKey). Keys are read from the
// environment, not from flags, so they do not show in process listings.
const (
	// envSealKeys is a comma-separated list of "<id>:<base64 of 32 bytes>"
	// keys: the first seals, every one opens (list a retired key after the
	// new one until the rows it sealed have expired).
	envSealKeys = "WALLETGATE_SEAL_KEYS"
	// envCodeMACKey is the base64 of at least 32 random bytes.
	envCodeMACKey = "WALLETGATE_CODE_MAC_KEY"
)

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

// printNewKeys writes fresh values of both variables, as shell assignments,
// for -gen-keys.
func printNewKeys(out io.Writer) error {
	k, err := secret.GenerateKey(nil, "k1")
	if err != nil {
		return err
	}
	mac := make([]byte, walletauth.MinCodeMACKeyLen)
	_, _ = rand.Read(mac) // crypto/rand.Read never fails
	_, err = fmt.Fprintf(out, "%s=%s\n%s=%s\n", envSealKeys, k.Encode(), envCodeMACKey, base64.StdEncoding.EncodeToString(mac))
	return err
}
