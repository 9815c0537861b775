package sandbox_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/sandbox"
)

type page[T any] struct {
	Data       []T
	HasMore    bool
	NextCursor string
	TotalCount int
}

// walk reads a list page by page (limit n), calling between after the first
// page, and returns the ids in the order read.
func walk[T any](t *testing.T, e *env, path string, n int, id func(T) string, between func()) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for i := 0; ; i++ {
		q := path + "limit=" + strconv.Itoa(n)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		var p page[T]
		e.do("GET", q, nil).ok(t, 200, &p)
		if len(p.Data) > n || p.HasMore != (p.NextCursor != "") || p.HasMore && len(p.Data) != n {
			t.Fatalf("page %d of %s: %+v", i, path, p)
		}
		for _, x := range p.Data {
			ids = append(ids, id(x))
		}
		if i == 0 && between != nil {
			between()
		}
		if !p.HasMore {
			return ids
		}
		cursor = p.NextCursor
	}
}

func noDuplicates(t *testing.T, ids []string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("%s twice in %v", id, ids)
		}
		seen[id] = true
	}
	return seen
}

func TestListPaginationCustomers(t *testing.T) {
	e := newEnv(t)
	var before []string
	for i := range 21 {
		c, _ := e.customer(fmt.Sprintf("Page Customer %d", i))
		before = append(before, c.ID)
	}
	// Default limit 20.
	var p page[sandbox.Customer]
	e.do("GET", "/customers", nil).ok(t, 200, &p)
	if len(p.Data) != sandbox.DefaultListLimit || !p.HasMore || p.NextCursor == "" || p.TotalCount != 21 {
		t.Fatalf("default page: %d %v %q %d", len(p.Data), p.HasMore, p.NextCursor, p.TotalCount)
	}
	p = page[sandbox.Customer]{}
	e.do("GET", "/customers?limit="+strconv.Itoa(sandbox.MaxListLimit), nil).ok(t, 200, &p)
	if len(p.Data) != 21 || p.HasMore || p.NextCursor != "" {
		t.Fatalf("max page: %d %v %q", len(p.Data), p.HasMore, p.NextCursor)
	}
	// A customer created between pages: every earlier customer is read
	// exactly once, in the same order as without the insert.
	var inserted string
	ids := walk(t, e, "/customers?", 4, func(c sandbox.Customer) string { return c.ID }, func() {
		c, _ := e.customer("Inserted Between Pages")
		inserted = c.ID
	})
	seen := noDuplicates(t, ids)
	var order []string
	for _, id := range ids {
		if id != inserted {
			order = append(order, id)
		}
	}
	var sorted []string
	for _, c := range p.Data {
		sorted = append(sorted, c.ID)
	}
	if fmt.Sprint(order) != fmt.Sprint(sorted) {
		t.Fatalf("order with an insert %v, without %v", order, sorted)
	}
	for _, id := range before {
		if !seen[id] {
			t.Fatalf("%s skipped", id)
		}
	}
}

func TestListPaginationExternalAccounts(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Page External")
	var before []string
	for i := range 5 {
		before = append(before, e.external(c.ID, usdAccount(fmt.Sprintf("1234567%d0", i))).ID)
	}
	var inserted string
	ids := walk(t, e, "/customers/external-accounts?customerId="+c.ID+"&", 2, func(a sandbox.ExternalAccount) string { return a.ID }, func() {
		inserted = e.external(c.ID, usdAccount("9876543210")).ID
	})
	noDuplicates(t, ids)
	want := fmt.Sprint(append(before, inserted))
	if fmt.Sprint(ids) != want {
		t.Fatalf("read %v, want %v (inserted at the end)", ids, want)
	}
	// A deleted account leaves the list; a cursor naming it still works.
	var p page[sandbox.ExternalAccount]
	e.do("GET", "/customers/external-accounts?customerId="+c.ID+"&limit=2", nil).ok(t, 200, &p)
	e.do("DELETE", "/customers/external-accounts/"+before[1], nil).ok(t, 204, nil)
	var next page[sandbox.ExternalAccount]
	e.do("GET", "/customers/external-accounts?customerId="+c.ID+"&limit=2&cursor="+p.NextCursor, nil).ok(t, 200, &next)
	if len(next.Data) != 2 || next.Data[0].ID != before[2] || next.TotalCount != 5 {
		t.Fatalf("after a delete: %+v", next)
	}
}

func TestListPaginationInternalAccounts(t *testing.T) {
	e := newEnv(t)
	c, walletID := e.customer("Page Internal")
	var p page[sandbox.InternalAccount]
	e.do("GET", "/internal-accounts?customerId="+c.ID+"&limit=1", nil).ok(t, 200, &p)
	if len(p.Data) != 1 || p.Data[0].ID != walletID || p.HasMore || p.NextCursor != "" || p.TotalCount != 1 {
		t.Fatalf("page %+v", p)
	}
}

func TestListPaginationErrors(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Page Errors")
	badCursor := base64.RawURLEncoding.EncodeToString([]byte("v2|1|x"))
	for _, path := range []string{"/customers?", "/internal-accounts?customerId=" + c.ID + "&", "/customers/external-accounts?customerId=" + c.ID + "&"} {
		for _, q := range []string{"limit=0", "limit=101", "limit=-1", "limit=abc", "limit=", "limit=1&limit=2"} {
			err := e.do("GET", path+q, nil).fails(t, 400, apierror.InvalidInput)
			apierrortest.WantFields(t, err, apierror.InvalidInput, "limit")
		}
		for _, q := range []string{"cursor=", "cursor=!!", "cursor=" + badCursor, "cursor=" + base64.RawURLEncoding.EncodeToString([]byte("v1|x|id"))} {
			err := e.do("GET", path+q, nil).fails(t, 400, apierror.InvalidInput)
			apierrortest.WantFields(t, err, apierror.InvalidInput, "cursor")
		}
	}
}

// TestListUnknownCustomer: a customerId filter naming no customer answers an
// empty list (200), on every list that takes one; a malformed one is 400.
func TestListUnknownCustomer(t *testing.T) {
	e := newEnv(t)
	unknown := "Customer:00000000-0000-4000-8000-000000000000"
	for _, path := range []string{"/internal-accounts", "/customers/external-accounts"} {
		var p page[map[string]any]
		e.do("GET", path+"?customerId="+unknown, nil).ok(t, 200, &p)
		if p.Data == nil || len(p.Data) != 0 || p.HasMore || p.TotalCount != 0 {
			t.Errorf("%s: %+v", path, p)
		}
		e.do("GET", path+"?customerId=bob", nil).fails(t, 400, apierror.InvalidInput)
		e.do("GET", path, nil).fails(t, 400, apierror.InvalidInput)
	}
}

// TestListGoPagesEqualHTTPPages: the Go list methods page with the same
// cursor as the HTTP routes: for each list, the pages read in Go equal the
// pages read over HTTP, also when a client alternates between the two, and
// invalid options are the same 400s.
func TestListGoPagesEqualHTTPPages(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c, _ := e.customer("Go Pages")
	for i := range 7 {
		e.customer(fmt.Sprintf("Go Pages %d", i))
		e.external(c.ID, usdAccount(fmt.Sprintf("51515%d11", i)))
	}
	var ext page[sandbox.ExternalAccount]
	e.do("GET", "/customers/external-accounts?customerId="+c.ID, nil).ok(t, 200, &ext)
	e.do("DELETE", "/customers/external-accounts/"+ext.Data[2].ID, nil).ok(t, 204, nil)

	lists := []struct {
		path   string
		goPage func(sandbox.ListOptions) (any, string, error)
	}{
		{"/customers?", func(o sandbox.ListOptions) (any, string, error) {
			p, err := e.sim.ListCustomers(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return p, p.NextCursor, nil
		}},
		{"/customers/external-accounts?customerId=" + c.ID + "&", func(o sandbox.ListOptions) (any, string, error) {
			p, err := e.sim.ListExternalAccounts(ctx, c.ID, o)
			if err != nil {
				return nil, "", err
			}
			return p, p.NextCursor, nil
		}},
		{"/internal-accounts?customerId=" + c.ID + "&", func(o sandbox.ListOptions) (any, string, error) {
			p, err := e.sim.ListInternalAccounts(ctx, c.ID, o)
			if err != nil {
				return nil, "", err
			}
			return p, p.NextCursor, nil
		}},
	}
	for _, l := range lists {
		for _, limit := range []int{1, 2, 3, 0} {
			cursor, pages := "", 0
			for {
				got, next, err := l.goPage(sandbox.ListOptions{Limit: limit, Cursor: cursor})
				if err != nil {
					t.Fatalf("%s limit %d: %v", l.path, limit, err)
				}
				q := l.path
				if limit != 0 {
					q += "limit=" + strconv.Itoa(limit) + "&"
				}
				if cursor != "" {
					q += "cursor=" + cursor
				}
				r := e.do("GET", q, nil)
				r.ok(t, 200, nil)
				goJSON, _ := json.Marshal(got)
				if !jsonEqual(t, goJSON, r.body) {
					t.Fatalf("%s limit %d page %d:\nGo   %s\nHTTP %s", l.path, limit, pages, goJSON, r.body)
				}
				pages++
				if next == "" {
					break
				}
				// Alternate: the next cursor read over HTTP equals Go's.
				var hp page[json.RawMessage]
				r.ok(t, 200, &hp)
				if hp.NextCursor != next {
					t.Fatalf("cursors differ: %q %q", hp.NextCursor, next)
				}
				cursor = next
			}
			if limit == 1 && !strings.HasPrefix(l.path, "/internal-accounts") && pages < 6 {
				t.Fatalf("%s limit %d: %d pages", l.path, limit, pages)
			}
		}
		for _, o := range []sandbox.ListOptions{{Limit: -1}, {Limit: sandbox.MaxListLimit + 1}} {
			_, _, err := l.goPage(o)
			apierrortest.WantFields(t, err, apierror.InvalidInput, "limit")
		}
		_, _, err := l.goPage(sandbox.ListOptions{Cursor: "!!"})
		apierrortest.WantFields(t, err, apierror.InvalidInput, "cursor")
	}
}

// jsonEqual reports whether two JSON documents are the same value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}
