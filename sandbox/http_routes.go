package sandbox

import (
	"net/http"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage/idempotency"
	"github.com/walletgate/walletgate/walletauth"
)

func (s *Simulator) hCreateCustomer(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, nil, true)
	if !ok {
		return
	}
	req, err := ParseCustomerCreate(body, s.now())
	if err != nil {
		apierror.Write(w, err)
		return
	}
	c, err := s.createCustomer(r.Context(), req)
	signedretry.WriteAnswer(w, http.StatusCreated, c, nil, err)
}

func (s *Simulator) hGetCustomer(w http.ResponseWriter, r *http.Request) {
	c, err := s.GetCustomer(r.Context(), r.PathValue("id"))
	signedretry.WriteAnswer(w, http.StatusOK, c, nil, err)
}

func (s *Simulator) hUpdateCustomer(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, nil, true)
	if !ok {
		return
	}
	req, err := ParseCustomerUpdate(body, s.now())
	if err != nil {
		apierror.Write(w, err)
		return
	}
	c, ch, err := s.updateCustomer(r.Context(), r.PathValue("id"), req, signedretry.RequestFrom(r, body))
	signedretry.WriteAnswer(w, http.StatusOK, c, ch, err)
}

func (s *Simulator) hListInternal(w http.ResponseWriter, r *http.Request) {
	o, err := listOptions(r.URL.Query())
	if err != nil {
		apierror.Write(w, err)
		return
	}
	p, err := s.ListInternalAccounts(r.Context(), r.URL.Query().Get("customerId"), o)
	signedretry.WriteAnswer(w, http.StatusOK, p, nil, err)
}

func (s *Simulator) hGetInternal(w http.ResponseWriter, r *http.Request) {
	a, err := s.GetInternalAccount(r.Context(), r.PathValue("id"))
	signedretry.WriteAnswer(w, http.StatusOK, a, nil, err)
}

func (s *Simulator) hUpdateWallet(w http.ResponseWriter, r *http.Request) {
	var req walletauth.PrivacyRequest
	body, ok := readBody(w, r, &req, true)
	if !ok {
		return
	}
	a, ch, err := s.UpdateWallet(r.Context(), r.PathValue("id"), req, signedretry.RequestFrom(r, body))
	signedretry.WriteAnswer(w, http.StatusOK, a, ch, err)
}

func (s *Simulator) hExport(w http.ResponseWriter, r *http.Request) {
	var req walletauth.ExportRequest
	body, ok := readBody(w, r, &req, true)
	if !ok {
		return
	}
	e, ch, err := s.ExportWallet(r.Context(), r.PathValue("id"), req, signedretry.RequestFrom(r, body))
	signedretry.WriteAnswer(w, http.StatusOK, e, ch, err)
}

func (s *Simulator) hVerify(w http.ResponseWriter, r *http.Request) {
	var req VerificationRequest
	if _, ok := readBody(w, r, &req, true); !ok {
		return
	}
	v, err := s.VerifyCustomer(r.Context(), req)
	signedretry.WriteAnswer(w, http.StatusOK, v, nil, err)
}

func (s *Simulator) hCreateExternal(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, nil, true)
	if !ok {
		return
	}
	p, err := parseExternalCreateOn(body, s.cfg.Network)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	a, err := s.createExternal(r.Context(), p)
	signedretry.WriteAnswer(w, http.StatusCreated, a, nil, err)
}

func (s *Simulator) hGetExternal(w http.ResponseWriter, r *http.Request) {
	a, err := s.GetExternalAccount(r.Context(), r.PathValue("id"))
	signedretry.WriteAnswer(w, http.StatusOK, a, nil, err)
}

func (s *Simulator) hDeleteExternal(w http.ResponseWriter, r *http.Request) {
	signedretry.WriteAnswer(w, 0, nil, nil, s.DeleteExternalAccount(r.Context(), r.PathValue("id")))
}

func (s *Simulator) hTrust(trust bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := readBody(w, r, nil, false); !ok {
			return
		}
		t, err := s.StartTrust(r.Context(), r.PathValue("id"), trust)
		signedretry.WriteAnswer(w, http.StatusOK, t, nil, err)
	}
}

func (s *Simulator) hConfirm(trust bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req TrustConfirmRequest
		if _, ok := readBody(w, r, &req, true); !ok {
			return
		}
		t, err := s.ConfirmTrust(r.Context(), r.PathValue("id"), trust, req)
		signedretry.WriteAnswer(w, http.StatusOK, t, nil, err)
	}
}

func (s *Simulator) hTransfer(in bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req TransferRequest
		body, ok := readBody(w, r, &req, true)
		if !ok {
			return
		}
		key, err := idempotency.FromHeader(r.Header)
		if err != nil {
			apierror.Write(w, err)
			return
		}
		req.IdempotencyKey = key
		if in {
			tx, replayed, err := s.transferIn(r.Context(), req, body)
			writeKeyed(w, http.StatusCreated, tx, nil, replayed, err)
			return
		}
		o, ch, replayed, err := s.transferOutKeyed(r.Context(), req, signedretry.RequestFrom(r, body))
		status := http.StatusCreated
		if o != nil {
			status = o.keyedStatus(status)
		}
		writeKeyed(w, status, o.body(), ch, replayed, err)
	}
}

func (s *Simulator) hCreateQuote(w http.ResponseWriter, r *http.Request) {
	var req QuoteRequest
	body, ok := readBody(w, r, &req, true)
	if !ok {
		return
	}
	key, err := idempotency.FromHeader(r.Header)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	req.IdempotencyKey = key
	q, replayed, err := s.createQuoteKeyed(r.Context(), req, body)
	writeKeyed(w, http.StatusCreated, q, nil, replayed, err)
}

func (s *Simulator) hGetQuote(w http.ResponseWriter, r *http.Request) {
	q, err := s.GetQuote(r.Context(), r.PathValue("id"))
	signedretry.WriteAnswer(w, http.StatusOK, q, nil, err)
}

func (s *Simulator) hExecute(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, &struct{}{}, false)
	if !ok {
		return
	}
	key, err := idempotency.FromHeader(r.Header)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	q, ch, replayed, err := s.executeQuoteKeyed(r.Context(), r.PathValue("id"), key, signedretry.RequestFrom(r, body))
	writeKeyed(w, http.StatusOK, q, ch, replayed, err)
}

func (s *Simulator) hGetTransaction(w http.ResponseWriter, r *http.Request) {
	tx, err := s.GetTransaction(r.Context(), r.PathValue("id"))
	signedretry.WriteAnswer(w, http.StatusOK, tx, nil, err)
}

func (s *Simulator) hCreateCard(w http.ResponseWriter, r *http.Request) {
	var req CardRequest
	if _, ok := readBody(w, r, &req, true); !ok {
		return
	}
	c, err := s.CreateCard(r.Context(), req)
	signedretry.WriteAnswer(w, http.StatusCreated, c, nil, err)
}

func (s *Simulator) hGetCard(w http.ResponseWriter, r *http.Request) {
	c, err := s.GetCard(r.Context(), r.PathValue("id"))
	signedretry.WriteAnswer(w, http.StatusOK, c, nil, err)
}

func (s *Simulator) hUpdateCard(w http.ResponseWriter, r *http.Request) {
	var req CardUpdate
	if _, ok := readBody(w, r, &req, true); !ok {
		return
	}
	c, err := s.UpdateCard(r.Context(), r.PathValue("id"), req)
	signedretry.WriteAnswer(w, http.StatusOK, c, nil, err)
}

func (s *Simulator) hFund(w http.ResponseWriter, r *http.Request) {
	var req FundRequest
	if _, ok := readBody(w, r, &req, true); !ok {
		return
	}
	a, err := s.Fund(r.Context(), r.PathValue("accountId"), req)
	signedretry.WriteAnswer(w, http.StatusOK, a, nil, err)
}

func (s *Simulator) hSend(w http.ResponseWriter, r *http.Request) {
	var req SendRequest
	if _, ok := readBody(w, r, &req, true); !ok {
		return
	}
	tx, err := s.Send(r.Context(), req)
	signedretry.WriteAnswer(w, http.StatusOK, tx, nil, err)
}

func (s *Simulator) hReceive(w http.ResponseWriter, r *http.Request) {
	var req ReceiveRequest
	if _, ok := readBody(w, r, &req, true); !ok {
		return
	}
	tx, err := s.Receive(r.Context(), req)
	signedretry.WriteAnswer(w, http.StatusOK, tx, nil, err)
}
