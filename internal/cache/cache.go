// Package cache holds the library's two in-process caches: Loaded, values read from
// the table by key and shared by the readers that ask while a read is under way or
// young enough (an event's config), and Ring, a bounded map that drops its oldest
// entry when full (the duplicate clicks a process answers without a call). Neither
// decides anything on its own: what they hold only saves reads.
package cache

import (
	"context"
	"sync"
	"time"
)

// Loaded caches a *T by key for a time to live, each value from one read shared by
// every caller that asks for it while it is under way or young enough. It is safe
// for concurrent use.
type Loaded[T any] struct {
	ttl     time.Duration // ≤ 0: no caching
	clock   func() time.Time
	timeout time.Duration // bounds a shared read, whatever its first caller does

	mu      sync.Mutex
	entries map[string]*entry[T]
}

// entry is one read of a Loaded: under way until loaded is closed.
type entry[T any] struct {
	loaded   chan struct{} // closed when v and err are set
	v        *T
	err      error
	loadedAt time.Time // when the read began
}

// NewLoaded returns a cache keeping each value for ttl (none when ttl ≤ 0) by
// clock's time, each shared read bounded by timeout.
func NewLoaded[T any](ttl time.Duration, clock func() time.Time, timeout time.Duration) *Loaded[T] {
	return &Loaded[T]{ttl: ttl, clock: clock, timeout: timeout, entries: map[string]*entry[T]{}}
}

// Get returns key's value from a read within the time to live, or from load.
func (c *Loaded[T]) Get(ctx context.Context, key string, load func(context.Context) (*T, error)) (*T, error) {
	v, _, err := c.GetAged(ctx, key, c.ttl, load)
	return v, err
}

// GetAged returns key's value from a read that began less than maxAge ago (and
// within the time to live), sharing a read under way that began within it, else from
// a read of its own; and when that read began. Without caching (ttl ≤ 0) it reads at
// once.
func (c *Loaded[T]) GetAged(ctx context.Context, key string, maxAge time.Duration, load func(context.Context) (*T, error)) (*T, time.Time, error) {
	if c.ttl <= 0 {
		began := c.clock()
		v, err := load(ctx)
		return v, began, err
	}
	maxAge = min(maxAge, c.ttl)
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok && c.clock().Sub(e.loadedAt) >= maxAge {
		ok = false // too old, loaded or still under way
	}
	if !ok {
		// loadedAt is when the read began: what it returns is at least that fresh.
		e = &entry[T]{loaded: make(chan struct{}), loadedAt: c.clock()}
		c.entries[key] = e
		// Others may share this read: the caller's end does not cut it short, and
		// the caller waits for it as they do.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
		go func() {
			defer cancel()
			e.v, e.err = load(lctx)
			close(e.loaded)
			if e.err != nil {
				c.forgetEntry(key, e)
			}
		}()
	}
	c.mu.Unlock()
	select {
	case <-e.loaded:
		return e.v, e.loadedAt, e.err
	case <-ctx.Done():
		return nil, time.Time{}, ctx.Err()
	}
}

// Peek returns key's cached value and when it was read, without reading; ok is false
// when none is cached (or its read is under way, or failed, or found nothing).
func (c *Loaded[T]) Peek(key string) (v *T, loadedAt time.Time, ok bool) {
	c.mu.Lock()
	e := c.entries[key]
	c.mu.Unlock()
	if e == nil {
		return nil, time.Time{}, false
	}
	select {
	case <-e.loaded:
		return e.v, e.loadedAt, e.err == nil && e.v != nil
	default:
		return nil, time.Time{}, false
	}
}

// Forget drops key's value, so the next read sees the table.
func (c *Loaded[T]) Forget(key string) {
	c.mu.Lock()
	delete(c.entries, key)
	c.mu.Unlock()
}

// forgetEntry drops e, a failed read, unless a newer one took its place.
func (c *Loaded[T]) forgetEntry(key string, e *entry[T]) {
	c.mu.Lock()
	if c.entries[key] == e {
		delete(c.entries, key)
	}
	c.mu.Unlock()
}

// Ring is a bounded map that drops its oldest entry when full. It is safe for
// concurrent use; a Ring of size ≤ 0 holds nothing.
type Ring[K comparable, V any] struct {
	mu    sync.Mutex
	m     map[K]V
	order []K // ring of keys, oldest at next
	next  int
	size  int
}

// NewRing returns a Ring of at most size entries.
func NewRing[K comparable, V any](size int) *Ring[K, V] {
	return &Ring[K, V]{m: map[K]V{}, size: size}
}

// Get returns k's value.
func (r *Ring[K, V]) Get(k K) (V, bool) {
	if r.size <= 0 {
		var zero V
		return zero, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[k]
	return v, ok
}

// Put sets k's value unless k has one, dropping the oldest entry when full.
func (r *Ring[K, V]) Put(k K, v V) {
	if r.size <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[k]; ok {
		return
	}
	if len(r.order) < r.size {
		r.order = append(r.order, k)
	} else {
		delete(r.m, r.order[r.next])
		r.order[r.next] = k
		r.next = (r.next + 1) % r.size
	}
	r.m[k] = v
}
