package program

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Format writes nodes as a template that Parse reads back as the same
// nodes. A gen whose constraint has no template syntax (GBNF source, a
// grammar built in Go, a schema given as bytes) cannot be written.
func Format(nodes []Node) (string, error) {
	var b strings.Builder
	if err := format(&b, nodes); err != nil {
		return "", err
	}
	return b.String(), nil
}

func format(b *strings.Builder, nodes []Node) error {
	for i, n := range nodes {
		switch n := n.(type) {
		case *Text:
			// Text beside a block tag goes in a quoted string, so that
			// the standalone-line rule leaves it as it is; a brace is
			// always quoted, so that it cannot begin a tag.
			block := func(j int) bool {
				if j < 0 || j >= len(nodes) {
					return false
				}
				switch nodes[j].(type) {
				case *Role, *Each:
					return true
				}
				return false
			}
			if block(i-1) || block(i+1) || i == 0 || i == len(nodes)-1 {
				quoted(b, n.Text)
				continue
			}
			for s := n.Text; s != ""; {
				j := strings.IndexByte(s, '{')
				if j < 0 {
					b.WriteString(s)
					break
				}
				b.WriteString(s[:j])
				b.WriteString(`{{"{"}}`)
				s = s[j+1:]
			}
		case *Var:
			fmt.Fprintf(b, "{{%s}}", n.Name)
		case *Gen:
			if err := formatGen(b, n); err != nil {
				return err
			}
		case *Select:
			fmt.Fprintf(b, "{{select %s options=[", strconv.Quote(n.Name))
			for i, o := range n.Options {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Quote(o))
			}
			b.WriteString("]")
			if n.Temperature != nil {
				b.WriteString(" temperature=" + num(*n.Temperature))
			}
			b.WriteString("}}")
		case *Role:
			fmt.Fprintf(b, "{{#%s}}", n.Role)
			body := n.Body
			// Parse drops one newline at each end of a role's body: write
			// one more where the body has one.
			if len(body) > 0 {
				if t, ok := body[0].(*Text); ok && strings.HasPrefix(t.Text, "\n") {
					b.WriteString(`{{"\n"}}`)
				}
			}
			if err := format(b, body); err != nil {
				return err
			}
			if len(body) > 0 {
				if t, ok := body[len(body)-1].(*Text); ok && strings.HasSuffix(t.Text, "\n") {
					b.WriteString(`{{"\n"}}`)
				}
			}
			fmt.Fprintf(b, "{{/%s}}", n.Role)
		case *Each:
			fmt.Fprintf(b, "{{#each %s}}", n.List)
			if err := format(b, n.Body); err != nil {
				return err
			}
			b.WriteString("{{/each}}")
		default:
			return fmt.Errorf("program: cannot format a %T", n)
		}
	}
	return nil
}

func quoted(b *strings.Builder, s string) {
	if s != "" {
		b.WriteString("{{" + strconv.Quote(s) + "}}")
	}
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func formatGen(b *strings.Builder, g *Gen) error {
	o := &g.GenOptions
	if o.GBNF != "" || o.Grammar != nil || len(o.Schema) > 0 {
		return errors.New("program: a gen whose constraint was given in Go has no template syntax")
	}
	fmt.Fprintf(b, "{{gen %s", strconv.Quote(g.Name))
	str := func(k, v string) {
		if v != "" {
			fmt.Fprintf(b, " %s=%s", k, strconv.Quote(v))
		}
	}
	str("regex", o.Regex)
	str("grammar", o.GrammarFile)
	str("schema", o.SchemaFile)
	if o.JSON {
		b.WriteString(" json=true")
	}
	if o.MaxTokens != 0 {
		fmt.Fprintf(b, " max_tokens=%d", o.MaxTokens)
	}
	if len(o.Stop) > 0 {
		b.WriteString(" stop=[")
		for i, s := range o.Stop {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(s))
		}
		b.WriteString("]")
	}
	if o.Temperature != nil {
		b.WriteString(" temperature=" + num(*o.Temperature))
	}
	if o.TopK != 0 {
		fmt.Fprintf(b, " top_k=%d", o.TopK)
	}
	if o.TopP != 0 {
		b.WriteString(" top_p=" + num(o.TopP))
	}
	if o.MinP != 0 {
		b.WriteString(" min_p=" + num(o.MinP))
	}
	b.WriteString("}}")
	return nil
}
