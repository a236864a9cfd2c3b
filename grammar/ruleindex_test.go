package grammar

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestRuleIndexFinds looks up thousands of names, as the rules' own
// strings (the cache's hits) and as copies in other storage (its
// misses), in random order: every lookup must name its own rule, however
// the names collide in the cache.
func TestRuleIndexFinds(t *testing.T) {
	const n = 5000
	rules := make([]Rule, n)
	for i := range rules {
		rules[i].Name = "r" + strconv.Itoa(i)
	}
	x := newRuleIndex(len(rules))
	for i, r := range rules {
		if !x.add(r.Name, i) {
			t.Fatalf("add(%q) reports a duplicate", r.Name)
		}
	}
	if i, ok := x.find(""); ok { // the cache's empty slots hold no name
		t.Errorf("find(\"\") = %d on a fresh index", i)
	}
	if x.add(strings.Clone(rules[7].Name), 99) {
		t.Fatalf("add of a name defined before (in other storage) was not refused")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 * n {
		i := rng.IntN(n)
		name := rules[i].Name
		if rng.IntN(3) == 0 {
			name = strings.Clone(name)
		}
		got, ok := x.find(name)
		if !ok || got != i {
			t.Fatalf("find(%q) = %d, %v; want %d", name, got, ok, i)
		}
	}
	for _, name := range []string{"", "r", "r5000", "x1"} {
		if i, ok := x.find(name); ok {
			t.Errorf("find(%q) = %d for a name no rule has", name, i)
		}
	}
	// A prefix of a rule's name in the same storage is another name,
	// even just after the name was found.
	x.find(rules[1234].Name)
	if i, ok := x.find(rules[1234].Name[:4]); !ok || i != 123 {
		t.Errorf("find(%q) = %d, %v; want 123", rules[1234].Name[:4], i, ok)
	}
}
