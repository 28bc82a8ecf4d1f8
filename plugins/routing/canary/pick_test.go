package canary

import (
	"fmt"
	"math"
	"testing"
)

func split(t *testing.T, weights ...int) *Config {
	t.Helper()
	js := `{"keys":["$header_x-user-id"],"targets":[`
	for i, w := range weights {
		if i > 0 {
			js += ","
		}
		js += fmt.Sprintf(`{"name":"t%d","cluster":"c%d","weight":%d}`, i, i, w)
	}
	c, _ := parse(t, js+"]}")
	return c
}

func assign(c *Config, users int) []string {
	out := make([]string, users)
	for u := range out {
		out[u] = c.pick(c.keyHash(fmt.Sprintf("user-%d", u))).Name
	}
	return out
}

// The split follows the weights.
func TestPickFollowsTheWeights(t *testing.T) {
	const users = 100_000
	for _, weights := range [][]int{{90, 10}, {50, 50}, {1, 99}, {70, 20, 10}, {1, 1, 1, 1, 1}} {
		c := split(t, weights...)
		got := map[string]int{}
		for _, n := range assign(c, users) {
			got[n]++
		}
		total := 0
		for _, w := range weights {
			total += w
		}
		for i, w := range weights {
			want := float64(users) * float64(w) / float64(total)
			n := float64(got[fmt.Sprintf("t%d", i)])
			// Binomial: 5 standard deviations.
			if sd := math.Sqrt(want * (1 - float64(w)/float64(total))); math.Abs(n-want) > 5*sd {
				t.Errorf("weights %v: t%d got %.0f of %d users, want %.0f ± %.0f", weights, i, n, users, want, 5*sd)
			}
		}
	}
}

// Moving the canary from 10% to 20% moves only users from stable to canary,
// and about as many as must move (10% of all users).
func TestRaisingTheWeightMovesOnlyTheUsersThatMust(t *testing.T) {
	const users = 20_000
	before := assign(split(t, 90, 10), users)
	after := assign(split(t, 80, 20), users)
	toCanary, toStable := 0, 0
	for u := range before {
		switch {
		case before[u] == "t0" && after[u] == "t1":
			toCanary++
		case before[u] == "t1" && after[u] == "t0":
			toStable++
		}
	}
	t.Logf("10%% -> 20%%: %d of %d users switched to the canary (%.2f%%), %d back to stable", toCanary, users, 100*float64(toCanary)/users, toStable)
	if toStable != 0 {
		t.Errorf("%d canary users were moved back to stable", toStable)
	}
	// Exactly 10% must move; allow the sampling error (5 sd of a 10% binomial).
	if want, sd := 0.10*users, math.Sqrt(users*0.1*0.9); math.Abs(float64(toCanary)-want) > 5*sd {
		t.Errorf("%d users switched, want about %.0f", toCanary, want)
	}
	// Back to 10%: exactly the same users return.
	again := assign(split(t, 90, 10), users)
	for u := range before {
		if again[u] != before[u] {
			t.Fatalf("user-%d: %s at 10%%, %s after 20%% and back", u, before[u], again[u])
		}
	}
}

// With three targets, changing the canary's weight never moves a user
// between the two others; removing one moves only its own users.
func TestChangingOneTargetMovesNoOneBetweenTheOthers(t *testing.T) {
	const users = 20_000
	before := assign(split(t, 70, 20, 10), users)
	after := assign(split(t, 70, 20, 30), users)
	for u := range before {
		if before[u] != after[u] && after[u] != "t2" {
			t.Fatalf("user-%d moved %s -> %s when only t2 grew", u, before[u], after[u])
		}
	}
	removed := assign(split(t, 70, 20, 0), users)
	for u := range before {
		if before[u] != "t2" && removed[u] != before[u] {
			t.Fatalf("user-%d moved %s -> %s when t2 was drained", u, before[u], removed[u])
		}
		if removed[u] == "t2" {
			t.Fatalf("user-%d still on drained t2", u)
		}
	}
}

// The salt picks a different set of users; without it the choice is the
// same in every process (the hash is not seeded per process).
func TestSaltAndStability(t *testing.T) {
	a := split(t, 90, 10)
	// Pinned values: a change of hash would move every user of a fleet.
	for user, want := range map[string]string{"user-1": "t0", "user-2": "t0", "alice": "t0", "user-34": "t1", "user-59": "t1"} {
		if got := a.pick(a.keyHash(user)).Name; got != want {
			t.Errorf("%s -> %s, want %s (the hash must not change between versions)", user, got, want)
		}
	}
	b, _ := parse(t, `{"salt":"checkout-2026","targets":[{"name":"t0","cluster":"c0","weight":90},{"name":"t1","cluster":"c1","weight":10}]}`)
	same := 0
	for u := 0; u < 10_000; u++ {
		k := fmt.Sprintf("user-%d", u)
		if a.pick(a.keyHash(k)).Name == "t1" && b.pick(b.keyHash(k)).Name == "t1" {
			same++
		}
	}
	// Independent 10% sets overlap on ~1% of users.
	if same > 200 {
		t.Errorf("%d users are in both salted canaries, want ~100", same)
	}
}

func TestHostChoiceIsStickyAndSpread(t *testing.T) {
	c, _ := parse(t, `{"keys":["$header_x-user-id"],"targets":[{"name":"v2","weight":1,"hosts":["127.0.0.1:1","127.0.0.1:2","127.0.0.1:3"]}]}`)
	tg := c.byName["v2"]
	got := map[string]int{}
	for u := 0; u < 3000; u++ {
		h := c.keyHash(fmt.Sprintf("u%d", u))
		a, b := tg.host(h), tg.host(h)
		if a != b {
			t.Fatal("host choice not stable")
		}
		got[a]++
	}
	for _, h := range tg.Hosts {
		if got[h] < 800 || got[h] > 1200 {
			t.Errorf("host %s got %d of 3000", h, got[h])
		}
	}
}
