package grammar

// inlineBudget bounds how much inlining may grow a grammar, in nodes.
const inlineBudget = 200000

// inline returns a copy of g's rules in which every rule that is not
// the start rule and does not refer to itself is replaced, at each
// reference, by its body; rules that refer to themselves stay as calls.
// A rule whose inlining would exceed the budget stays too. This changes
// no language, only how the parser sees it: a JSON string inlined into
// "object" ends inside "object", so the tokens that close it and go on
// (`":`, `",`) are judged without looking below the current rule.
func inline(rules []Rule, start string) []Rule {
	bodies := map[string]*Node{}
	for _, r := range rules {
		bodies[r.Name] = r.Body
	}
	total := 0
	for _, r := range rules {
		total += size(r.Body)
	}
	budget := max(inlineBudget, 4*total)
	inlined := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, r := range rules {
			name := r.Name
			if name == start || inlined[name] || refersTo(bodies[name], name) {
				continue
			}
			n := size(bodies[name])
			uses := 0
			for other, b := range bodies {
				if other != name && !inlined[other] {
					uses += countRefs(b, name)
				}
			}
			if total+uses*n > budget {
				continue
			}
			for other, b := range bodies {
				if other != name && !inlined[other] {
					bodies[other] = substitute(b, name, bodies[name])
				}
			}
			total += uses * n
			inlined[name] = true
			changed = true
		}
	}
	out := make([]Rule, 0, len(rules))
	for _, r := range rules {
		if !inlined[r.Name] {
			out = append(out, Rule{Name: r.Name, Pos: r.Pos, Body: bodies[r.Name]})
		}
	}
	return out
}

func size(n *Node) int {
	s := 1
	for _, c := range n.Subs {
		s += size(c)
	}
	return s
}

func refersTo(n *Node, name string) bool { return countRefs(n, name) > 0 }

func countRefs(n *Node, name string) int {
	c := 0
	if n.Op == OpRef && n.Name == name {
		c++
	}
	for _, s := range n.Subs {
		c += countRefs(s, name)
	}
	return c
}

// substitute returns n with every reference to name replaced by body,
// sharing unchanged subtrees.
func substitute(n *Node, name string, body *Node) *Node {
	if n.Op == OpRef && n.Name == name {
		return body
	}
	var subs []*Node
	for i, s := range n.Subs {
		t := substitute(s, name, body)
		if t != s && subs == nil {
			subs = append([]*Node(nil), n.Subs...)
		}
		if subs != nil {
			subs[i] = t
		}
	}
	if subs == nil {
		return n
	}
	c := *n
	c.Subs = subs
	return &c
}
