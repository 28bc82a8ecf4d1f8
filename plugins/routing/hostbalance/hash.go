package hostbalance

import (
	"math"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Consistent hashing, the two ways Envoy offers (xxHash64 as Envoy's hash
// policies use). Written here because both are short and must follow the
// host set's availability (ejections), which the libraries we looked at do
// not model.

// buildRing is a ketama-style ring: each host gets ring entries in
// proportion to its weight (at least one), at the hashes of "<addr>_<i>",
// sorted. A key goes to the first entry at or after its hash, wrapping.
// Entries per unit of weight are ring_size / total weight rounded up to a
// power of two, so a host joining or leaving rarely changes the others'
// entries (their keys stay put); the ring holds ring_size to 2 x ring_size
// entries.
func buildRing(hosts []*host, size int) []ringEntry {
	if len(hosts) == 0 {
		return nil
	}
	total := 0.0
	for _, h := range hosts {
		total += h.weight
	}
	perWeight := 1.0
	for perWeight < float64(size)/total {
		perWeight *= 2
	}
	ring := make([]ringEntry, 0, 2*size+len(hosts))
	buf := make([]byte, 0, 64)
	for i, h := range hosts {
		n := max(1, int(math.Round(perWeight*h.weight)))
		for j := 0; j < n; j++ {
			buf = strconv.AppendInt(append(append(buf[:0], h.addr...), '_'), int64(j), 10)
			ring = append(ring, ringEntry{hash: xxhash.Sum64(buf), host: int32(i)})
		}
	}
	slices.SortFunc(ring, func(a, b ringEntry) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return int(a.host - b.host)
	})
	return ring
}

// ringLookup walks the ring from the key's position to the first available
// host.
func (s *hostSet) ringLookup(key uint64, now int64) *host {
	n := len(s.ring)
	i, _ := slices.BinarySearchFunc(s.ring, key, func(e ringEntry, k uint64) int {
		if e.hash < k {
			return -1
		}
		if e.hash > k {
			return 1
		}
		return 0
	})
	if h := s.hosts[s.ring[i%n].host]; h.available(now) {
		return h
	}
	if !s.anyAvailable(now) {
		return nil
	}
	for k := 1; k < n; k++ {
		if h := s.hosts[s.ring[(i+k)%n].host]; h.available(now) {
			return h
		}
	}
	return nil
}

// buildMaglev fills a lookup table of a prime size M with the maglev paper's
// permutations (offset, skip per host), weighted as Envoy does: in round r a
// host places an entry only if r*weight has caught up with its target, so a
// host of half the largest weight places one every other round.
func buildMaglev(hosts []*host, m int) []int32 {
	if len(hosts) == 0 {
		return nil
	}
	table := make([]int32, m)
	for i := range table {
		table[i] = -1
	}
	type entry struct {
		offset, skip, next uint64
		weight, target     float64
	}
	maxW := 0.0
	for _, h := range hosts {
		maxW = max(maxW, h.weight)
	}
	es := make([]entry, len(hosts))
	for i, h := range hosts {
		es[i] = entry{
			offset: xxhash.Sum64String(h.addr) % uint64(m),
			skip:   xxhash.Sum64String(h.addr+"#skip")%uint64(m-1) + 1,
			weight: h.weight / maxW,
		}
	}
	filled := 0
	for round := 1.0; filled < m; round++ {
		for i := range es {
			if filled == m {
				break
			}
			e := &es[i]
			if round*e.weight < e.target {
				continue
			}
			e.target++
			c := (e.offset + e.skip*e.next) % uint64(m)
			for table[c] >= 0 {
				e.next++
				c = (e.offset + e.skip*e.next) % uint64(m)
			}
			table[c] = int32(i)
			e.next++
			filled++
		}
	}
	return table
}

// maglevLookup takes the key's table entry, or the next entries' hosts while
// that one is ejected (neighbouring entries belong to pseudo-random hosts, so
// an ejected host's keys spread over the others, and stay put).
func (s *hostSet) maglevLookup(key uint64, now int64) *host {
	m := uint64(len(s.table))
	i := key % m
	if h := s.hosts[s.table[i]]; h.available(now) {
		return h
	}
	if !s.anyAvailable(now) {
		return nil
	}
	for k := uint64(1); k < m; k++ {
		if h := s.hosts[s.table[(i+k)%m]]; h.available(now) {
			return h
		}
	}
	return nil
}
