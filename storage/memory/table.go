package memory

import (
	"slices"
	"sync"
	"time"
)

// table is a map from string keys to V split into nShards shards, each with
// its own mutex. The mutex guards the map itself and is held only for one
// access; what a transaction may read or change is decided by the record
// locks (locks.go), which it takes before it touches a table.
type table[V any] struct {
	shards [nShards]tableShard[V]
}

type tableShard[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

func (tb *table[V]) get(k string) (V, bool) {
	sh := &tb.shards[shardOf(k)]
	sh.mu.RLock()
	v, ok := sh.m[k]
	sh.mu.RUnlock()
	return v, ok
}

// swap sets tb[k] = v and returns the previous entry.
func (tb *table[V]) swap(k string, v V) (old V, had bool) {
	sh := &tb.shards[shardOf(k)]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = map[string]V{}
	}
	old, had = sh.m[k]
	sh.m[k] = v
	sh.mu.Unlock()
	return old, had
}

// remove deletes tb[k] and returns the deleted entry.
func (tb *table[V]) remove(k string) (old V, had bool) {
	sh := &tb.shards[shardOf(k)]
	sh.mu.Lock()
	old, had = sh.m[k]
	delete(sh.m, k)
	sh.mu.Unlock()
	return old, had
}

// Writes of a transaction, each recording its undo entry.

// tput sets tb[k] = v and records how to restore the previous entry.
func tput[V any](t *tx, tb *table[V], k string, v V) {
	old, had := tb.swap(k, v)
	t.b.undo = append(t.b.undo, func() {
		if had {
			tb.swap(k, old)
		} else {
			tb.remove(k)
		}
	})
}

// tdel deletes tb[k] and records how to restore it.
func tdel[V any](t *tx, tb *table[V], k string) {
	old, had := tb.remove(k)
	if had {
		t.b.undo = append(t.b.undo, func() { tb.swap(k, old) })
	}
}

// appendIndex appends id to the index slice tb[k], in place when it has
// room, so a long list grows in amortized constant time. Restoring the old
// header undoes the append. This is safe because nobody keeps an index
// slice: readers use it under a shared lock of k and copy what they need
// before the transaction ends, t holds k exclusively, and removeIndex always
// makes a new slice.
func appendIndex(t *tx, tb *table[[]string], k, id string) {
	old, _ := tb.get(k)
	tput(t, tb, k, append(old, id))
}

// removeIndex removes id from the index slice tb[k] into a new slice.
func removeIndex(t *tx, tb *table[[]string], k, id string) {
	old, _ := tb.get(k)
	i := slices.Index(old, id)
	if i < 0 {
		return
	}
	next := make([]string, 0, len(old)-1)
	next = append(append(next, old[:i]...), old[i+1:]...)
	if len(next) == 0 {
		tdel(t, tb, k)
		return
	}
	tput(t, tb, k, next)
}

// Expiry.

type recordKind uint8

const (
	kindPending recordKind = iota
	kindOTP
	kindChallenge
	kindSession
	kindLimit
	kindIdempotency
	kindUsage
	kindApproval
)

type expiryEntry struct {
	at   time.Time
	key  string
	kind recordKind
}

// expiryHeap is a min-heap on at. It is typed rather than a
// container/heap, which would box every entry pushed or popped into an
// interface: an allocation for every record written with an expiry, and
// 4 to 14% more time on the benchmarks that create and sweep records.
type expiryHeap []expiryEntry

// push and pop move entries into a hole rather than swapping them: an
// entry holds pointers, and every pointer written costs a write barrier
// while the garbage collector marks.
func (h *expiryHeap) push(e expiryEntry) {
	*h = append(*h, expiryEntry{})
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !e.at.Before(a[p].at) {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = e
}

// pop removes and returns the earliest entry; h must not be empty.
func (h *expiryHeap) pop() expiryEntry {
	a := *h
	top := a[0]
	n := len(a) - 1
	last := a[n]
	a[n] = expiryEntry{} // drop the key for the garbage collector
	a = a[:n]
	*h = a
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && a[r].at.Before(a[c].at) {
			c = r
		}
		if !a[c].at.Before(last.at) {
			break
		}
		a[i] = a[c]
		i = c
	}
	a[i] = last
	return top
}

// expiryShard is a min-heap on expiry of the records whose keys fall in one
// shard.
type expiryShard struct {
	mu sync.Mutex
	h  expiryHeap
}

// push schedules a check of a record at its expiry.
func (s *Store) push(e expiryEntry) {
	sh := &s.expiry[shardOf(e.key)]
	sh.mu.Lock()
	sh.h.push(e)
	sh.mu.Unlock()
}

// popExpired removes the earliest entries of shard i that are due before
// cutoff, at most max of them, and returns them appended to out[:0].
func (s *Store) popExpired(i int, cutoff time.Time, max int, out []expiryEntry) []expiryEntry {
	out = out[:0]
	sh := &s.expiry[i]
	sh.mu.Lock()
	for len(out) < max && len(sh.h) > 0 && sh.h[0].at.Before(cutoff) {
		out = append(out, sh.h.pop())
	}
	sh.mu.Unlock()
	return out
}
