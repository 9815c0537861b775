package evmsim

import (
	"context"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
)

// Routes of [Chains.Register], relative to the sandbox's base path, beside
// the sandbox's own sandbox-only routes (/sandbox/...).
const (
	// RouteDeploy deploys an OwnerWallet.
	RouteDeploy = "POST /sandbox/contract-wallets"
	// RouteCounterfactual describes an OwnerWallet not deployed yet.
	RouteCounterfactual = "POST /sandbox/contract-wallets/counterfactual"
)

// maxBodyBytes bounds a request body; the largest valid one is under 200
// bytes.
const maxBodyBytes = 4 << 10

// chainTimeout bounds the chain work of one request. The work is not
// cancelled with the request: a deployment the client gave up on still
// finishes, and the next one starts from a sealed block.
const chainTimeout = 10 * time.Second

// DeployRequest is the body of POST /sandbox/contract-wallets.
type DeployRequest struct {
	// ChainID is the chain to deploy on: one of [Chains.Served] (8453,
	// 1, 9745 or 137 on mainnet). Required.
	ChainID uint64 `json:"chainId"`
	// Owner is the EVM address whose signatures the wallet accepts: 0x and
	// 40 hex digits, in one case or with a valid EIP-55 checksum, not the
	// zero address. Required.
	Owner string `json:"owner"`
}

// DeployResponse is the 201 answer of POST /sandbox/contract-wallets.
type DeployResponse struct {
	// ChainID is the chain the wallet is deployed on.
	ChainID uint64 `json:"chainId"`
	// Owner is the owner, in EIP-55 case.
	Owner string `json:"owner"`
	// Address is the deployed wallet, in EIP-55 case: the address of a
	// contract account, accountInfo.address with
	// accountInfo.contractAccount.chainId = ChainID.
	Address string `json:"address"`
}

// CounterfactualRequest is the body of POST
// /sandbox/contract-wallets/counterfactual: [DeployRequest] and a salt.
type CounterfactualRequest struct {
	// ChainID is the chain, as in [DeployRequest]. Required.
	ChainID uint64 `json:"chainId"`
	// Owner is the owner, as in [DeployRequest]. Required.
	Owner string `json:"owner"`
	// Salt is the CREATE2 salt: 0x and 64 hex digits. Required. Another
	// salt gives another address for the same owner.
	Salt string `json:"salt"`
}

// CounterfactualResponse is the 200 answer of POST
// /sandbox/contract-wallets/counterfactual. Nothing is deployed: an
// ERC-6492 signature of the wallet is abi.encode(address factory, bytes
// factoryCalldata, bytes ownerSignature) followed by the 32 bytes
// 0x6492…6492.
type CounterfactualResponse struct {
	// ChainID is the chain whose factory was asked. The factory, and so
	// the address, is the same on every simulated chain.
	ChainID uint64 `json:"chainId"`
	// Owner is the owner, in EIP-55 case.
	Owner string `json:"owner"`
	// Salt is the salt, 0x and 64 lowercase hex digits.
	Salt string `json:"salt"`
	// Address is where the factory would deploy the wallet, in EIP-55
	// case.
	Address string `json:"address"`
	// Factory is the WalletFactory, in EIP-55 case.
	Factory string `json:"factory"`
	// FactoryCalldata is the call deploy(owner, salt), 0x and lowercase
	// hex.
	FactoryCalldata string `json:"factoryCalldata"`
}

// Register registers the two sandbox-only routes with handle, which
// takes a pattern relative to the sandbox's base path (as
// sandbox.Simulator.Handle, behind the platform's HTTP Basic
// credentials):
//
//	POST /sandbox/contract-wallets                 201 DeployResponse: an OwnerWallet of owner deployed on chainId
//	POST /sandbox/contract-wallets/counterfactual  200 CounterfactualResponse: what ERC-6492 wraps for an OwnerWallet not deployed
//
// Bodies are read with apierror's strict decoder, as every route reads
// them (an unknown member is ignored): a case variant of a member, a value of the
// wrong JSON type, a chainId not in [Chains.Served], an owner that is not
// an EVM address (or is the zero address) and a salt that is not 32 bytes
// of hex are 400 INVALID_INPUT naming the field. A chain that fails is 500
// INTERNAL_ERROR. It returns handle's first error.
func (c *Chains) Register(handle func(pattern string, h http.Handler) error) error {
	if err := handle(RouteDeploy, http.HandlerFunc(c.serveDeploy)); err != nil {
		return err
	}
	return handle(RouteCounterfactual, http.HandlerFunc(c.serveCounterfactual))
}

func (c *Chains) serveDeploy(w http.ResponseWriter, r *http.Request) {
	body, err := apierror.Decoder{MaxBytes: maxBodyBytes}.ReadBody(r)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	req, err := parseDeploy(body, c.rows)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), chainTimeout)
	defer cancel()
	addr, err := c.DeployOwnerWallet(ctx, req.chainID, req.owner)
	if err != nil {
		apierror.Write(w, apierror.Internal(err))
		return
	}
	apierror.WriteJSON(w, http.StatusCreated, DeployResponse{ChainID: req.chainID, Owner: req.owner.Hex(), Address: addr.Hex()})
}

func (c *Chains) serveCounterfactual(w http.ResponseWriter, r *http.Request) {
	body, err := apierror.Decoder{MaxBytes: maxBodyBytes}.ReadBody(r)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	req, err := parseCounterfactual(body, c.rows)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), chainTimeout)
	defer cancel()
	cf, err := c.Counterfactual(ctx, req.chainID, req.owner, req.salt)
	if err != nil {
		apierror.Write(w, apierror.Internal(err))
		return
	}
	apierror.WriteJSON(w, http.StatusOK, CounterfactualResponse{ChainID: req.chainID, Owner: req.owner.Hex(),
		Salt: "0x" + hex.EncodeToString(req.salt[:]), Address: cf.Address.Hex(), Factory: cf.Factory.Hex(),
		FactoryCalldata: "0x" + hex.EncodeToString(cf.FactoryCalldata)})
}

// request is a checked body of either route.
type request struct {
	chainID uint64
	owner   common.Address
	salt    [32]byte
}

// parseDeploy decodes and checks a [DeployRequest] for the chains served.
func parseDeploy(body []byte, served []ownership.ContractChain) (request, error) {
	var b DeployRequest
	if err := decodeStrict(body, &b); err != nil {
		return request{}, err
	}
	var v apierror.Validation
	req := check(&v, b.ChainID, b.Owner, served)
	return req, v.Err()
}

// parseCounterfactual decodes and checks a [CounterfactualRequest] for the
// chains served.
func parseCounterfactual(body []byte, served []ownership.ContractChain) (request, error) {
	var b CounterfactualRequest
	if err := decodeStrict(body, &b); err != nil {
		return request{}, err
	}
	var v apierror.Validation
	req := check(&v, b.ChainID, b.Owner, served)
	switch s, ok := strings.CutPrefix(b.Salt, "0x"); {
	case b.Salt == "":
		v.Add("salt", saltPattern, "is required: 0x and 64 hex digits")
	case !ok || len(s) != 64:
		v.Add("salt", saltPattern, "must be 0x and 64 hex digits")
	default:
		if _, err := hex.Decode(req.salt[:], []byte(s)); err != nil {
			v.Add("salt", saltPattern, "must be 0x and 64 hex digits")
		}
	}
	return req, v.Err()
}

var (
	saltPattern    = apierror.Pattern("^0x[0-9a-fA-F]{64}$")
	addressPattern = apierror.Pattern("^0x[0-9a-fA-F]{40}$")
)

// decodeStrict decodes body with apierror's strict request decoder, the one
// every route uses. Every refusal is 400 INVALID_INPUT.
func decodeStrict(body []byte, dst any) error {
	return apierror.DecodeBytes(body, dst)
}

// check checks the members both bodies share, recording each failure in v.
func check(v *apierror.Validation, chainID uint64, owner string, served []ownership.ContractChain) request {
	var req request
	ids := make([]string, len(served))
	ok := false
	for i, row := range served {
		ids[i] = strconv.FormatUint(row.ChainID, 10)
		ok = ok || row.ChainID == chainID
	}
	if ok {
		req.chainID = chainID
	} else {
		names := make([]string, len(served))
		for i, row := range served {
			names[i] = row.String() + " for " + row.AccountType
		}
		v.Add("chainId", apierror.OneOf(ids...), "must be the chain id of a simulated chain: "+strings.Join(names, ", "))
	}
	switch {
	case owner == "":
		v.Add("owner", addressPattern, "is required: the EVM address of the wallet's owner")
	case strings.TrimSpace(owner) != owner:
		v.Add("owner", addressPattern, "must be an EVM address without surrounding space")
	default:
		if err := (ownership.EVMVerifier{}).ValidateAddress(ownership.Wallet{AccountType: ownership.AccountEthereum, Address: owner}); err != nil {
			v.Add("owner", addressPattern, "must be an EVM address: "+reasonOf(err))
			break
		}
		req.owner = common.HexToAddress(owner)
		if req.owner == (common.Address{}) {
			v.Add("owner", addressPattern, "must not be the zero address, which no key signs for")
		}
	}
	return req
}

// reasonOf is the reason of an ownership refusal, or its text.
func reasonOf(err error) string {
	if e := apierror.As(err); e != nil && e.Reason() != "" {
		return e.Reason()
	}
	return err.Error()
}
