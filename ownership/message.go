package ownership

import (
	"encoding/base32"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// nonceEncoding writes nonces in lowercase base32 without padding: letters
// and digits only, so a nonce never reads as hex or as a number.
var nonceEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// nonce returns 128 random bits as 26 base32 characters.
func nonce(r io.Reader) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	return nonceEncoding.EncodeToString(b[:]), nil
}

// chainNames names the chain of each wallet account type in messages.
var chainNames = map[string]string{
	AccountBase: "Base", AccountEthereum: "Ethereum", AccountPolygon: "Polygon", AccountPlasma: "Plasma",
	AccountSolana: "Solana", AccountTron: "TRON", AccountSpark: "Spark", AccountBitcoin: "Bitcoin",
}

// message builds messageToSign: plain ASCII with \n line endings, binding the
// service, the address, the chain and network, the account, a fresh nonce and
// the validity window, so a signature cannot be replayed for another account,
// chain or service. Its first line is prose, so no wallet mistakes it for hex
// or typed data. The address is the stored one, which account creation
// validated; anything outside printable ASCII in it is replaced by '?'. A
// contract account's message also names its chain id.
func (s *Service) message(a *storage.ExternalAccount, nonce string, issued, expires time.Time) string {
	chain := chainNames[a.AccountType]
	if chain == "" {
		chain = a.AccountType
	}
	var b strings.Builder
	b.WriteString(s.cfg.Service + " asks you to prove that you control this wallet.\n")
	b.WriteString("Signing this message is free and authorizes nothing.\n\n")
	b.WriteString("Service: " + s.cfg.Service + "\n")
	b.WriteString("Address: " + ascii(a.Address) + "\n")
	b.WriteString("Network: " + ascii(chain) + " " + s.cfg.Network.String() + "\n")
	if id, _, err := contractChainOf(a.Info); err == nil && id != 0 {
		// A contract account is proven by its code on one chain: the
		// message names the chain, so its hash differs per chain.
		b.WriteString("Chain ID: " + strconv.FormatUint(id, 10) + "\n")
	}
	b.WriteString("Account: " + ascii(a.ID) + "\n")
	b.WriteString("Nonce: " + nonce + "\n")
	b.WriteString("Issued At: " + issued.UTC().Format(time.RFC3339) + "\n")
	b.WriteString("Expiration Time: " + expires.UTC().Format(time.RFC3339))
	return b.String()
}

func ascii(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}
