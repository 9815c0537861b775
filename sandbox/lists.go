package sandbox

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

func internalKey(a *InternalAccount) (string, time.Time) { return a.ID, a.CreatedAt }
func externalKey(a *ExternalAccount) (string, time.Time) { return a.ID, a.CreatedAt }
func customerKey(c *Customer) (string, time.Time)        { return c.ID, c.CreatedAt }

// listRoutes registers the list endpoints that have no other home.
func (s *Simulator) listRoutes(r func(string, http.HandlerFunc)) {
	r("GET /customers", func(w http.ResponseWriter, req *http.Request) {
		o, err := listOptions(req.URL.Query())
		if err != nil {
			apierror.Write(w, err)
			return
		}
		p, err := s.ListCustomers(req.Context(), o)
		signedretry.WriteAnswer(w, http.StatusOK, p, nil, err)
	})
	r("GET /customers/external-accounts", func(w http.ResponseWriter, req *http.Request) {
		o, err := listOptions(req.URL.Query())
		if err != nil {
			apierror.Write(w, err)
			return
		}
		p, err := s.ListExternalAccounts(req.Context(), req.URL.Query().Get("customerId"), o)
		signedretry.WriteAnswer(w, http.StatusOK, p, nil, err)
	})
}

// ListCustomers returns one page of the customers, oldest first (creation
// time, then id): the page GET /customers?limit=&cursor= answers for the
// same options. Invalid options are 400 INVALID_INPUT ([ListOptions]).
func (s *Simulator) ListCustomers(ctx context.Context, opts ListOptions) (*Page[Customer], error) {
	p, err := opts.page()
	if err != nil {
		return nil, err
	}
	out := []Customer{}
	err = s.read(ctx, func(st *state) error {
		all, err := list[customer](st, kindCustomer, "")
		for _, c := range all {
			out = append(out, *c.Rec.clone())
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Customer) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return paginate(out, customerKey, p), nil
}

// ListExternalAccounts returns one page of a customer's external accounts
// in creation order, without deleted ones: the page GET
// /customers/external-accounts?customerId=&limit=&cursor= answers for the
// same options. A cursor naming an account deleted since still works. An
// unknown customer has none (an empty page), as in
// [Simulator.ListInternalAccounts]. A customerId that is not a Customer id,
// and invalid options ([ListOptions]), are 400 INVALID_INPUT.
func (s *Simulator) ListExternalAccounts(ctx context.Context, customerID string, opts ListOptions) (*Page[ExternalAccount], error) {
	p, err := opts.page()
	if err != nil {
		return nil, err
	}
	all, deleted, err := s.externalAccounts(ctx, customerID)
	if err != nil {
		return nil, err
	}
	return paginateVisible(all, externalKey, p, func(i int) bool { return !deleted[i] }), nil
}

// externalAccounts returns all of a customer's external accounts in creation
// order, deleted ones included, and which are deleted.
func (s *Simulator) externalAccounts(ctx context.Context, customerID string) ([]ExternalAccount, []bool, error) {
	if !storage.ValidID(customerID, "Customer") {
		return nil, nil, apierror.InvalidField("customerId", apierror.Pattern(`^Customer:[0-9a-fA-F-]{36}$`), "must be a Customer id")
	}
	var recs []storage.ExternalAccount
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		recs, err = tx.ExternalAccounts().ListByCustomer(ctx, customerID)
		return err
	})
	if err != nil {
		return nil, nil, apierror.As(err)
	}
	out := make([]ExternalAccount, 0, len(recs))
	deleted := make([]bool, 0, len(recs))
	err = s.read(ctx, func(st *state) error {
		for i := range recs {
			m, err := st.metaOf(recs[i].ID)
			if err != nil {
				return err
			}
			out = append(out, *externalView(&recs[i], m))
			deleted = append(deleted, m != nil && m.Deleted)
		}
		return nil
	})
	return out, deleted, err
}

// platformRoutes registers POST /platform/external-accounts, which creates
// an account of the platform tree (no customer; see
// [Simulator.CreatePlatformExternalAccount]).
func (s *Simulator) platformRoutes(r func(string, http.HandlerFunc)) {
	r("POST /platform/external-accounts", func(w http.ResponseWriter, req *http.Request) {
		body, ok := readBody(w, req, nil, true)
		if !ok {
			return
		}
		p, err := parseExternalCreateTree(body, s.cfg.Network, true)
		if err != nil {
			apierror.Write(w, err)
			return
		}
		a, err := s.createExternal(req.Context(), p)
		signedretry.WriteAnswer(w, http.StatusCreated, a, nil, err)
	})
}

// CreatePlatformExternalAccount creates an external account on behalf of the
// platform (the platform tree: no customerId; req.CustomerID must be empty
// and req.DefaultUMADepositAccount false), through
// ownership.Service.RegisterAccountIn as [Simulator.CreateExternalAccount]
// does; its ownership is verified under /platform/external-accounts/{id}.
// Errors: 400 INVALID_INPUT listing every invalid field, 400
// INVALID_BANK_ACCOUNT.
func (s *Simulator) CreatePlatformExternalAccount(ctx context.Context, req ExternalAccountCreate) (*ExternalAccount, error) {
	body, err := marshalBody(req)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, apierror.Internal(err)
	}
	if raw["customerId"] == "" {
		delete(raw, "customerId")
	}
	if body, err = json.Marshal(raw); err != nil {
		return nil, apierror.Internal(err)
	}
	p, err := parseExternalCreateTree(body, s.cfg.Network, true)
	if err != nil {
		return nil, err
	}
	return s.createExternal(ctx, p)
}
