package sandbox

import (
	"context"
	"strings"

	"github.com/walletgate/walletgate/apierror"
)

// ReceiveRequest is the body of POST /sandbox/uma/receive: an incoming UMA
// payment from senderUmaAddress to a customer, named by receiverUmaAddress
// or customerId.
type ReceiveRequest struct {
	SenderUMAAddress        string `json:"senderUmaAddress"`
	ReceiverUMAAddress      string `json:"receiverUmaAddress,omitempty"`
	CustomerID              string `json:"customerId,omitempty"`
	ReceivingCurrencyCode   string `json:"receivingCurrencyCode"`
	ReceivingCurrencyAmount int64  `json:"receivingCurrencyAmount"`
}

// Receive simulates an incoming UMA payment and returns its transaction.
// The sender decides the outcome:
//
//	$success.usd@sandbox.uma.money       completes at once (sender pays USD)
//	$success.eur@sandbox.uma.money       completes at once (sender pays EUR)
//	$success.mxn@sandbox.uma.money       completes at once (sender pays MXN)
//	$pending.long.usd@sandbox.uma.money  PENDING for LongPendingUMAAfter, then completes
//	$fail.compliance.usd@sandbox.uma.money  FAILED at once (COMPLIANCE_CHECK_FAILED)
//	any other address at another domain  completes at once (sender pays the receiving currency)
//
// The money goes to the customer's default UMA deposit account when one is
// set (the simulator keeps no balance for it), otherwise it credits the
// customer's embedded wallet in the receiving currency on completion.
//
// Errors: 400 INVALID_UMA_ADDRESS, 400 INVALID_INPUT (no receiver, or two
// that disagree), 400 INVALID_AMOUNT / AMOUNT_OUT_OF_RANGE /
// INVALID_CURRENCY, 404 UMA_NOT_FOUND (an unknown receiver address, or an
// unknown address at the sandbox domain), 404 USER_NOT_FOUND.
func (s *Simulator) Receive(ctx context.Context, req ReceiveRequest) (*Transaction, error) {
	sender := strings.ToLower(strings.TrimSpace(req.SenderUMAAddress))
	if !umaRe.MatchString(sender) {
		return nil, apierror.New(apierror.InvalidUMAAddress, "senderUmaAddress %q is not a UMA address", req.SenderUMAAddress).WithDetail("field", "senderUmaAddress")
	}
	receiver := strings.ToLower(strings.TrimSpace(req.ReceiverUMAAddress))
	if receiver != "" && !umaRe.MatchString(receiver) {
		return nil, apierror.New(apierror.InvalidUMAAddress, "receiverUmaAddress %q is not a UMA address", req.ReceiverUMAAddress).WithDetail("field", "receiverUmaAddress")
	}
	if receiver == "" && req.CustomerID == "" {
		return nil, apierror.InvalidField("receiverUmaAddress", nil, "give receiverUmaAddress or customerId")
	}
	cur := req.ReceivingCurrencyCode
	if err := checkAmount("receivingCurrencyAmount", req.ReceivingCurrencyAmount, cur); err != nil {
		return nil, err
	}
	sc, known := umaScenarios[sender]
	if !known {
		if strings.HasSuffix(sender, "@"+SandboxUMADomain) {
			return nil, apierror.New(apierror.UMANotFound, "%s is not a sandbox sender", sender)
		}
		sc = umaScenario{currency: cur, outcome: "success"}
	}
	sent, ok := convert(req.ReceivingCurrencyAmount, cur, sc.currency, true)
	if !ok {
		return nil, apierror.New(apierror.AmountOutOfRange, "the sending amount is outside the sandbox range")
	}
	id, err := s.newID("Transaction")
	if err != nil {
		return nil, err
	}
	var c *customer
	err = s.read(ctx, func(st *state) error {
		if receiver != "" {
			cid, err := st.owner(kindUMA, receiver)
			if err != nil {
				return err
			}
			if cid == "" {
				return apierror.New(apierror.UMANotFound, "no customer has the UMA address %s", receiver)
			}
			if req.CustomerID != "" && req.CustomerID != cid {
				return apierror.InvalidField("customerId", nil, "does not own receiverUmaAddress")
			}
			c, err = st.customer(cid)
			return err
		}
		var err error
		c, err = st.customer(req.CustomerID)
		return err
	})
	if err != nil {
		return nil, err
	}
	var out *Transaction
	err = s.atomic(ctx, func(st *state) error {
		now := st.now
		tx := &transaction{Rec: Transaction{ID: id, Type: Incoming, CustomerID: c.Rec.ID,
			Source:         Endpoint{UMAAddress: sender, Currency: sc.currency},
			SentAmount:     &Money{sent, sc.currency},
			ReceivedAmount: &Money{req.ReceivingCurrencyAmount, cur}, ExchangeRate: rateFloat(sc.currency, cur),
			CreatedAt: now, UpdatedAt: now}}
		var credit []move
		ext, err := st.defaultUMA(c.Rec.ID)
		if err != nil {
			return err
		}
		if ext != "" {
			tx.Rec.Destination = Endpoint{AccountID: ext, UMAAddress: c.Rec.UMAAddress, Currency: cur}
		} else {
			tx.Rec.Destination = Endpoint{AccountID: c.WalletID, UMAAddress: c.Rec.UMAAddress, Currency: cur}
			credit = []move{{c.WalletID, cur, req.ReceivingCurrencyAmount}}
		}
		tx.Steps = umaSteps(sc, now, nil, credit, nil)
		if err := st.schedule(tx); err != nil {
			return err
		}
		out = tx.view(now)
		return nil
	})
	return out, err
}
