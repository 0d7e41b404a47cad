package steward

import (
	"sync"
	"time"
)

// Default TTLs of cached evaluations (seed 001, "TTL Configuration").
const (
	DefaultKeywordTTL = 10 * time.Second
	DefaultPolicyTTL  = 60 * time.Second
	maxCached         = 4096 // entries; the cache is cleared when full
)

// cache holds a Set's cached evaluations: keyword matches by checkpoint
// and input, custom triggers' answers by checkpoint and input. It lives
// as long as its Set: a change of the atlases compiles a new Set, so
// every cached evaluation is dropped with the old one.
type cache struct {
	mu      sync.Mutex
	entries map[string]cached
}

type cached struct {
	ok      bool
	matched []string
	expires time.Time
}

func newCache() *cache { return &cache{entries: map[string]cached{}} }

func (c *cache) get(key string, now time.Time) (cached, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[key]
	if !ok || !now.Before(v.expires) {
		return cached{}, false
	}
	return v, true
}

func (c *cache) put(key string, v cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCached {
		clear(c.entries)
	}
	c.entries[key] = v
}

func (set *Set) ttl(atlasID string, keyword bool) time.Duration {
	m := set.atlases[atlasID]
	if m != nil && m.CacheConfig != nil {
		if keyword && m.CacheConfig.KeywordTTLSeconds > 0 {
			return time.Duration(m.CacheConfig.KeywordTTLSeconds) * time.Second
		}
		if !keyword && m.CacheConfig.PolicyTTLSeconds > 0 {
			return time.Duration(m.CacheConfig.PolicyTTLSeconds) * time.Second
		}
	}
	if keyword {
		return DefaultKeywordTTL
	}
	return DefaultPolicyTTL
}

// matchKeywords matches d's keywords against input, cached for the
// atlas's keyword TTL.
func (set *Set) matchKeywords(d *Def, input, inputHash string, now time.Time) (bool, []string) {
	key := "k\x00" + d.Key + "\x00" + inputHash
	if v, ok := set.cache.get(key, now); ok {
		return v.ok, v.matched
	}
	ok, matched := d.keywords.Match(input)
	set.cache.put(key, cached{ok: ok, matched: matched, expires: now.Add(set.ttl(d.AtlasID, true))})
	return ok, matched
}

// CachedCustom returns custom checkpoint key's cached answer for input.
func (set *Set) CachedCustom(key, input string, now time.Time) (triggered, ok bool) {
	v, ok := set.cache.get("c\x00"+key+"\x00"+input, now)
	return v.ok, ok
}

// StoreCustom caches custom checkpoint key's answer for input for its
// atlas's policy TTL.
func (set *Set) StoreCustom(key, input string, triggered bool, now time.Time) {
	d, ok := set.byKey[key]
	if !ok {
		return
	}
	set.cache.put("c\x00"+key+"\x00"+input, cached{ok: triggered, expires: now.Add(set.ttl(d.AtlasID, false))})
}
