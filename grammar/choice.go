package grammar

// Choice returns the grammar whose language is exactly the given
// strings (as raw bytes). Its only rule is "root".
func Choice(options ...string) *Grammar {
	subs := make([]*Node, len(options))
	for i, o := range options {
		if o == "" {
			subs[i] = &Node{Op: OpEmpty}
		} else {
			subs[i] = &Node{Op: OpBytes, Leaf: &Leaf{Bytes: []byte(o)}}
		}
	}
	body := &Node{Op: OpAlt, Subs: subs}
	if len(subs) == 1 {
		body = subs[0]
	}
	return &Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: body}}}
}
