package sandbox

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
)

// Pagination of the list endpoints (GET /customers, GET
// /customers/external-accounts, GET /internal-accounts).
const (
	// DefaultListLimit is the page size when limit is absent.
	DefaultListLimit = 20
	// MaxListLimit is the largest limit accepted.
	MaxListLimit = 100
)

// cursorPrefix versions the opaque cursor encoding.
const cursorPrefix = "v1|"

// ListOptions selects one page of a list: the limit and cursor query
// parameters of the HTTP list routes, for the Go methods
// ([Simulator.ListCustomers], [Simulator.ListExternalAccounts],
// [Simulator.ListInternalAccounts]). A cursor from either works in the
// other.
type ListOptions struct {
	// Limit is the page size, 1 to MaxListLimit; zero means
	// DefaultListLimit.
	Limit int
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
}

// Page is one page of a list, oldest first, as the HTTP list routes
// answer it: Data (never nil), HasMore, NextCursor when HasMore (the
// Cursor of the next page) and TotalCount, the number of items of the
// whole list. The cursor names the page's last item, not an offset, so
// items created while a client pages are neither read twice nor make it
// skip any.
type Page[T any] struct {
	Data       []T    `json:"data"`
	HasMore    bool   `json:"hasMore"`
	NextCursor string `json:"nextCursor,omitempty"`
	TotalCount int    `json:"totalCount"`
}

// page is a validated limit and cursor.
type page struct {
	limit int
	// after is the id and creation time of the last item of the previous
	// page; empty without a cursor.
	afterID string
	afterAt time.Time
}

// page validates o: a Limit outside 0 to MaxListLimit or a Cursor that is
// not a NextCursor of this simulator is 400 INVALID_INPUT on that field
// ("limit", "cursor").
func (o ListOptions) page() (page, error) {
	p := page{limit: o.Limit}
	if p.limit == 0 {
		p.limit = DefaultListLimit
	}
	var v apierror.Validation
	if o.Limit < 0 || o.Limit > MaxListLimit {
		v.Add("limit", apierror.Pattern(`^[1-9][0-9]*$`), "must be an integer from 1 to "+strconv.Itoa(MaxListLimit))
	}
	if o.Cursor != "" {
		id, at, good := decodeCursor(o.Cursor)
		if !good {
			v.Add("cursor", nil, "is not a nextCursor of this list")
		}
		p.afterID, p.afterAt = id, at
	}
	return p, v.Err()
}

// listOptions reads limit and cursor from a list query: limit is an
// integer from 1 to MaxListLimit (DefaultListLimit when absent), cursor a
// nextCursor this simulator answered. Either one invalid (repeated, empty,
// or not such a value) is 400 INVALID_INPUT on that field.
func listOptions(q url.Values) (ListOptions, error) {
	var o ListOptions
	var v apierror.Validation
	if raw, ok := q["limit"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(raw[0]))
		if err != nil || n < 1 || n > MaxListLimit || len(raw) > 1 {
			v.Add("limit", apierror.Pattern(`^[1-9][0-9]*$`), "must be an integer from 1 to "+strconv.Itoa(MaxListLimit))
		} else {
			o.Limit = n
		}
	}
	if raw, ok := q["cursor"]; ok {
		if _, _, good := decodeCursor(raw[0]); !good || len(raw) > 1 {
			v.Add("cursor", nil, "is not a nextCursor of this list")
		} else {
			o.Cursor = raw[0]
		}
	}
	return o, v.Err()
}

// encodeCursor is the opaque cursor of the item (id, created): base64url of
// "v1|<created unix nanoseconds>|<id>".
func encodeCursor(id string, created time.Time) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(created.UnixNano(), 10) + "|" + id))
}

func decodeCursor(c string) (string, time.Time, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || c == "" {
		return "", time.Time{}, false
	}
	rest, ok := strings.CutPrefix(string(raw), cursorPrefix)
	if !ok {
		return "", time.Time{}, false
	}
	ns, id, ok := strings.Cut(rest, "|")
	if !ok || id == "" {
		return "", time.Time{}, false
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return id, time.Unix(0, n).UTC(), true
}

// paginate cuts one page out of items, which are in creation order (key
// returns an item's id and creation time). The page starts after the
// cursor's item, found by id, so items inserted later (at the end, or, with
// equal creation times, anywhere before the cursor) neither repeat nor shift
// the items of the next page; when the cursor's item is gone the page starts
// at the first item ordered after it by (creation time, id). nextCursor is
// set when hasMore.
func paginate[T any](items []T, key func(*T) (string, time.Time), p page) *Page[T] {
	return paginateVisible(items, key, p, nil)
}

// paginateVisible is paginate over the items for which visible is true (all
// when visible is nil); the hidden ones still anchor a cursor naming them,
// so deleting the last item of a page does not lose the reader's place.
func paginateVisible[T any](items []T, key func(*T) (string, time.Time), p page, visible func(i int) bool) *Page[T] {
	shown := func(i int) bool { return visible == nil || visible(i) }
	start := 0
	if p.afterID != "" {
		start = len(items)
		found := false
		for i := range items {
			if id, _ := key(&items[i]); id == p.afterID {
				start, found = i+1, true
				break
			}
		}
		if !found {
			for i := range items {
				id, at := key(&items[i])
				if at.After(p.afterAt) || at.Equal(p.afterAt) && id > p.afterID {
					start = i
					break
				}
			}
		}
	}
	out := &Page[T]{Data: []T{}}
	last := -1
	for i := range items {
		if !shown(i) {
			continue
		}
		out.TotalCount++
		if i < start {
			continue
		}
		if len(out.Data) < p.limit {
			out.Data = append(out.Data, items[i])
			last = i
		} else {
			out.HasMore = true
		}
	}
	if out.HasMore && last >= 0 {
		id, at := key(&items[last])
		out.NextCursor = encodeCursor(id, at)
	}
	return out
}
