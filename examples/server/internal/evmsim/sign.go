package evmsim

import (
	"bytes"
	"crypto/ecdsa"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/walletgate/walletgate/ownership"
)

// The client's side of the test wallets, for the tests that prove them.

// PersonalSign is an EIP-191 personal_sign of message by key as wallets
// return it: r‖s‖v with v 27 or 28, which an owner wallet accepts.
func PersonalSign(key *ecdsa.PrivateKey, message string) ([]byte, error) {
	h := ownership.EVMMessageHash([]byte(message))
	sig, err := crypto.Sign(h[:], key)
	if err != nil {
		return nil, err
	}
	sig[64] += 27
	return sig, nil
}

// erc6492Suffix ends an ERC-6492 signature.
var erc6492Suffix = bytes.Repeat([]byte{0x64, 0x92}, 16)

// WrapERC6492 wraps sig of a wallet not deployed yet as ERC-6492 does:
// abi.encode(address factory, bytes calldata, bytes sig) followed by the
// 32 bytes 0x6492…6492. factory and calldata are a
// [CounterfactualResponse]'s.
func WrapERC6492(factory common.Address, calldata, sig []byte) ([]byte, error) {
	args := make(abi.Arguments, 3)
	for i, name := range []string{"address", "bytes", "bytes"} {
		t, err := abi.NewType(name, "", nil)
		if err != nil {
			return nil, err
		}
		args[i] = abi.Argument{Type: t}
	}
	enc, err := args.Pack(factory, calldata, sig)
	if err != nil {
		return nil, err
	}
	return append(enc, erc6492Suffix...), nil
}
