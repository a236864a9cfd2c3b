package program

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
	"github.com/reins-go/reins/internal/fileread"
)

// Bounds on a template. A template is written by hand; these keep a
// hostile one from costing more than a long program would.
const (
	// MaxTemplateBytes bounds a template's source.
	MaxTemplateBytes = 1 << 20
	// MaxHoles bounds the gen and select tags of a program (before
	// {{#each}} repeats them).
	MaxHoles = 1024
	// MaxOptions bounds the options of one select.
	MaxOptions = 1024
	// MaxNesting bounds how deeply blocks nest.
	MaxNesting = 16
	// MaxStops bounds a gen's stop strings, MaxStopBytes each one.
	MaxStops     = 16
	MaxStopBytes = 256
	// MaxGenTokens bounds a gen's max_tokens.
	MaxGenTokens = 1 << 16
	// MaxFileBytes bounds a grammar= or schema= file.
	MaxFileBytes = 1 << 20
)

// The tree participle builds. Lowering it to Nodes is a separate pass
// (lower), which checks what the syntax alone cannot.

type templateAST struct {
	Parts []*partAST `parser:"@@*"`
}

type partAST struct {
	Pos     lexer.Position
	Text    *string `parser:"  @Text"`
	Comment *string `parser:"| @Comment"`
	Tag     *tagAST `parser:"| Open @@ Close"`
}

// tagAST is any tag: {{#block arg}}, {{/block}}, {{name}}, {{"text"}},
// {{gen "name" key=value ...}}.
type tagAST struct {
	Pos  lexer.Position
	Mark string    `parser:"@('#' | '/')?"`
	Name *string   `parser:"( @Ident"`
	Str  *string   `parser:"| @String )"`
	Args []*argAST `parser:"@@*"`
}

type argAST struct {
	Pos   lexer.Position
	Key   string    `parser:"( @Ident '=' )?"`
	Value *valueAST `parser:"@@"`
}

type valueAST struct {
	Pos   lexer.Position
	Str   *string  `parser:"  @String"`
	Num   *string  `parser:"| @Number"`
	Ident *string  `parser:"| @Ident"`
	List  *listAST `parser:"| @@"`
}

type listAST struct {
	Pos   lexer.Position
	Open  bool        `parser:"@'['"`
	Items []*valueAST `parser:"( @@ ( ',' @@ )* ','? )? ']'"`
}

var templateLexer = lexer.MustStateful(lexer.Rules{
	"Root": {
		{Name: "Comment", Pattern: `\{\{!--(?s:.*?)--\}\}|\{\{![^}]*\}\}`},
		{Name: "Open", Pattern: `\{\{`, Action: lexer.Push("Tag")},
		{Name: "Text", Pattern: `[^{]+|\{`},
	},
	"Tag": {
		{Name: "space", Pattern: `[ \t\r\n]+`},
		{Name: "Close", Pattern: `\}\}`, Action: lexer.Pop()},
		{Name: "String", Pattern: `"(?:[^"\\\n]|\\.)*"`},
		{Name: "Number", Pattern: `[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?`},
		{Name: "Ident", Pattern: `@?[A-Za-z_][A-Za-z0-9_]*`},
		{Name: "Punct", Pattern: `[=\[\],#/]`},
	},
})

var templateParser = participle.MustBuild[templateAST](
	participle.Lexer(templateLexer),
	participle.Elide("space"),
	participle.UseLookahead(3),
)

// ParseOptions configures Parse.
type ParseOptions struct {
	// Dir is the folder that grammar= and schema= files are read from
	// (and only from: a path must stay inside it). Without one, a
	// template that names a file is an error.
	Dir string
}

// ParseFile reads a template from path (at most MaxTemplateBytes) and
// parses it; grammar= and schema= files are read from path's folder.
func ParseFile(path string) (*Program, error) {
	src, err := fileread.Read(path, MaxTemplateBytes)
	if err != nil {
		return nil, &Error{Pos: Pos{File: path}, Kind: KindFile, Msg: "read the template", Err: err}
	}
	return Parse(path, string(src), &ParseOptions{Dir: filepath.Dir(path)})
}

// Parse parses a template. name is used in positions (a file name,
// say). Every error is an *Error with the position of the mistake.
// opts may be nil.
//
// The syntax: literal text, and tags in double braces:
//
//	{{gen "name" regex="[0-9]+" max_tokens=8 stop="\n" temperature=0.7}}
//	{{gen "name" grammar="file.gbnf"}}  {{gen "name" schema="file.json"}}  {{gen "name" json=true}}
//	{{select "name" options=["yes", "no", "maybe"]}}
//	{{name}}                 an input variable or an earlier capture
//	{{"{{"}}                 a quoted string is literal text (here, two braces)
//	{{! comment }}  {{!-- comment with }} in it --}}
//	{{#system}}...{{/system}}  {{#user}}...{{/user}}  {{#assistant}}...{{/assistant}}
//	{{#each items}}...{{this}}...{{@index}}...{{/each}}
//
// Strings are Go string literals ("\n", "\"", "\u00e9"). Inside a role
// block, one newline right after the opening tag and one right before
// the closing tag are dropped, so that blocks may stand on lines of
// their own; in a program with role blocks, text outside them must be
// white space, which is dropped.
func Parse(name, src string, opts *ParseOptions) (p *Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, errorf(Pos{File: name}, KindSyntax, "internal error parsing the template (a bug in reins): %v", r)
		}
	}()
	if opts == nil {
		opts = &ParseOptions{}
	}
	if len(src) > MaxTemplateBytes {
		return nil, errorf(Pos{File: name}, KindLimit, "the template has %d bytes, more than MaxTemplateBytes (%d)", len(src), MaxTemplateBytes)
	}
	if !utf8.ValidString(src) {
		off := 0
		for off < len(src) {
			r, n := utf8.DecodeRuneInString(src[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		return nil, errorf(posAt(name, src, off), KindSyntax, "the template is not valid UTF-8")
	}
	if off, kind, what := prescan(src); off >= 0 {
		return nil, errorf(posAt(name, src, off), kind, "%s", what)
	}
	ast, err := templateParser.ParseString(name, src)
	if err != nil {
		var pe participle.Error
		if errors.As(err, &pe) {
			msg := pe.Message()
			if strings.Contains(msg, `"<EOF>"`) {
				msg = "the template ends inside a tag (want }})"
			}
			if strings.HasPrefix(msg, "lexer: invalid input text") {
				msg = lexerMessage(src, pe.Position().Offset, msg)
			}
			return nil, errorf(pos(name, pe.Position()), KindSyntax, "%s", msg)
		}
		return nil, &Error{Pos: Pos{File: name}, Kind: KindSyntax, Msg: "parse", Err: err}
	}
	standalone(ast.Parts)
	l := &lowerer{name: name}
	nodes, err := l.lower(ast.Parts)
	if err != nil {
		return nil, err
	}
	return compileProgram(name, nodes, opts.Dir, true)
}

// lexerMessage says in the template's terms what the lexer could not
// read at byte off (its own message, msg, quotes the text only).
func lexerMessage(src string, off int, msg string) string {
	if off < 0 || off > len(src) {
		return msg
	}
	rest := src[off:]
	switch {
	case strings.HasPrefix(rest, "!") && strings.HasSuffix(src[:off], "{{"):
		return "a comment is not closed ({{!-- wants --}}, {{! wants }} with no } inside)"
	case strings.HasPrefix(rest, "{{"):
		return "a tag is not closed before the next one begins (want }})"
	case strings.HasPrefix(rest, `"`):
		return `a string is not closed (a string ends with " on its line)`
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return fmt.Sprintf("%q cannot appear inside a tag (a tag holds names, quoted strings, numbers, lists, = # / and ,)", r)
}

func pos(name string, p lexer.Position) Pos {
	return Pos{File: name, Line: p.Line, Col: p.Column}
}

// posAt returns the position of byte offset off in src.
func posAt(name, src string, off int) Pos {
	p := Pos{File: name, Line: 1, Col: 1}
	for i, r := range src[:off] {
		_ = i
		if r == '\n' {
			p.Line++
			p.Col = 1
		} else {
			p.Col++
		}
	}
	return p
}

// standalone removes the lines that hold only a comment or a block tag
// ({{#each}}, {{/user}}, ...), as Handlebars does: the white space
// around the tag and the newline after it are layout, not text.
func standalone(parts []*partAST) {
	type cut struct{ start, end int }
	cuts := map[int]*cut{}
	cutOf := func(i int) *cut {
		if cuts[i] == nil {
			cuts[i] = &cut{0, len(*parts[i].Text)}
		}
		return cuts[i]
	}
	for i, p := range parts {
		if p.Comment == nil && (p.Tag == nil || p.Tag.Mark == "") {
			continue
		}
		// At the start of a line: the text before ends with a newline
		// and blanks, or the tag opens the template.
		before := -1 // where the blanks before the tag begin in parts[i-1]
		switch {
		case i == 0:
		case parts[i-1].Text != nil:
			t := *parts[i-1].Text
			j := len(t)
			for j > 0 && (t[j-1] == ' ' || t[j-1] == '\t') {
				j--
			}
			if j > 0 && t[j-1] != '\n' || j == 0 && i > 1 {
				continue
			}
			before = j
		default:
			continue
		}
		// At the end of a line: blanks, then a newline or the template's end.
		after := -1
		switch {
		case i == len(parts)-1:
		case parts[i+1].Text != nil:
			t := *parts[i+1].Text
			j := 0
			for j < len(t) && (t[j] == ' ' || t[j] == '\t' || t[j] == '\r') {
				j++
			}
			switch {
			case j < len(t) && t[j] == '\n':
				after = j + 1
			case j == len(t) && i+1 == len(parts)-1:
				after = j
			default:
				continue
			}
		default:
			continue
		}
		if before >= 0 {
			cutOf(i - 1).end = min(cutOf(i-1).end, before)
		}
		if after >= 0 {
			cutOf(i + 1).start = max(cutOf(i+1).start, after)
		}
	}
	for i, c := range cuts {
		t := *parts[i].Text
		s := ""
		if c.start < c.end {
			s = t[c.start:c.end]
		}
		parts[i].Text = &s
	}
}

// lowerer turns the parse tree into Nodes, matching blocks.
type lowerer struct {
	name string
}

// frame is an open block.
type frame struct {
	tag   *tagAST
	kind  string // "each" or a role
	arg   string // each's list
	nodes []Node
}

func (l *lowerer) pos(p lexer.Position) Pos { return pos(l.name, p) }

func (l *lowerer) lower(parts []*partAST) ([]Node, error) {
	stack := []*frame{{}}
	add := func(n Node) {
		top := stack[len(stack)-1]
		if t, ok := n.(*Text); ok && t.Text == "" {
			return
		}
		if t, ok := n.(*Text); ok && len(top.nodes) > 0 {
			if prev, ok := top.nodes[len(top.nodes)-1].(*Text); ok {
				prev.Text += t.Text
				return
			}
		}
		top.nodes = append(top.nodes, n)
	}
	for _, part := range parts {
		switch {
		case part.Comment != nil:
		case part.Text != nil:
			add(&Text{Pos: l.pos(part.Pos), Text: *part.Text})
		case part.Tag != nil:
			t := part.Tag
			t.Pos = part.Pos // a tag is where its "{{" is
			switch t.Mark {
			case "#":
				f, err := l.open(t)
				if err != nil {
					return nil, err
				}
				if len(stack) > MaxNesting {
					return nil, errorf(l.pos(t.Pos), KindLimit, "blocks nest deeper than MaxNesting (%d)", MaxNesting)
				}
				stack = append(stack, f)
			case "/":
				if t.Name == nil {
					return nil, errorf(l.pos(t.Pos), KindSyntax, "{{/...}} closes a block by name: {{/each}}, {{/user}}, ...")
				}
				if len(t.Args) > 0 {
					return nil, errorf(l.pos(t.Args[0].Pos), KindSyntax, "{{/%s}} takes no arguments", *t.Name)
				}
				top := stack[len(stack)-1]
				if top.tag == nil {
					return nil, errorf(l.pos(t.Pos), KindSyntax, "{{/%s}} closes no block", *t.Name)
				}
				if *t.Name != top.kind {
					return nil, errorf(l.pos(t.Pos), KindSyntax, "{{/%s}} does not close {{#%s}} (opened at %s)", *t.Name, top.kind, l.pos(top.tag.Pos))
				}
				stack = stack[:len(stack)-1]
				add(top.node(l))
			default:
				n, err := l.tag(t)
				if err != nil {
					return nil, err
				}
				add(n)
			}
		}
	}
	if top := stack[len(stack)-1]; top.tag != nil {
		return nil, errorf(l.pos(top.tag.Pos), KindSyntax, "{{#%s}} is never closed (want {{/%s}})", top.kind, top.kind)
	}
	return stack[0].nodes, nil
}

func (l *lowerer) open(t *tagAST) (*frame, error) {
	if t.Name == nil {
		return nil, errorf(l.pos(t.Pos), KindSyntax, "{{#...}} opens a block by name: {{#each list}}, {{#user}}, ...")
	}
	switch name := *t.Name; {
	case name == "each":
		if len(t.Args) != 1 || t.Args[0].Key != "" || t.Args[0].Value.Ident == nil {
			return nil, errorf(l.pos(t.Pos), KindSyntax, "{{#each}} takes the name of a list variable: {{#each items}}")
		}
		v := *t.Args[0].Value.Ident
		if !validName(v) {
			return nil, errorf(l.pos(t.Args[0].Pos), KindName, "%q is not a variable name", v)
		}
		return &frame{tag: t, kind: name, arg: v}, nil
	case isRole(name):
		if len(t.Args) > 0 {
			return nil, errorf(l.pos(t.Args[0].Pos), KindSyntax, "{{#%s}} takes no arguments", name)
		}
		return &frame{tag: t, kind: name}, nil
	default:
		return nil, errorf(l.pos(t.Pos), KindSyntax, "unknown block {{#%s}} (want each, system, user or assistant)", name)
	}
}

// node returns the block f as a Node.
func (f *frame) node(l *lowerer) Node {
	p := l.pos(f.tag.Pos)
	if f.kind == "each" {
		return &Each{Pos: p, List: f.arg, Body: f.nodes}
	}
	body := f.nodes
	// A newline right after {{#role}} and one right before {{/role}}
	// are layout, not content.
	if len(body) > 0 {
		if t, ok := body[0].(*Text); ok {
			t.Text = trimOneNewline(t.Text, true)
		}
		if t, ok := body[len(body)-1].(*Text); ok {
			t.Text = trimOneNewline(t.Text, false)
		}
		body = dropEmptyText(body)
	}
	return &Role{Pos: p, Role: f.kind, Body: body}
}

func trimOneNewline(s string, leading bool) string {
	if leading {
		if strings.HasPrefix(s, "\r\n") {
			return s[2:]
		}
		return strings.TrimPrefix(s, "\n")
	}
	if strings.HasSuffix(s, "\r\n") {
		return s[:len(s)-2]
	}
	return strings.TrimSuffix(s, "\n")
}

func dropEmptyText(nodes []Node) []Node {
	out := nodes[:0]
	for _, n := range nodes {
		if t, ok := n.(*Text); ok && t.Text == "" {
			continue
		}
		out = append(out, n)
	}
	return out
}

// tag lowers a tag that is not a block: gen, select, a variable or a
// quoted string.
func (l *lowerer) tag(t *tagAST) (Node, error) {
	p := l.pos(t.Pos)
	if t.Str != nil {
		if len(t.Args) > 0 {
			return nil, errorf(l.pos(t.Args[0].Pos), KindSyntax, "a quoted string in a tag is literal text, and takes no arguments")
		}
		s, err := l.unquote(*t.Str, t.Pos)
		if err != nil {
			return nil, err
		}
		return &Text{Pos: p, Text: s}, nil
	}
	switch name := *t.Name; name {
	case "gen":
		return l.gen(t)
	case "select":
		return l.selectTag(t)
	default:
		if len(t.Args) > 0 {
			return nil, errorf(p, KindSyntax, "unknown tag %q (want gen, select, or a variable's name alone)", name)
		}
		if !validVarRef(name) {
			return nil, errorf(p, KindName, "%q is not a variable name", name)
		}
		return &Var{Pos: p, Name: name}, nil
	}
}

// captureName reads the first, positional argument of gen and select.
func (l *lowerer) captureName(t *tagAST) (string, []*argAST, error) {
	if len(t.Args) == 0 || t.Args[0].Key != "" || t.Args[0].Value.Str == nil {
		return "", nil, errorf(l.pos(t.Pos), KindSyntax, "%s needs the capture's name as a quoted string first: {{%s \"name\" ...}}", *t.Name, *t.Name)
	}
	name, err := l.unquote(*t.Args[0].Value.Str, t.Args[0].Pos)
	if err != nil {
		return "", nil, err
	}
	if !validName(name) {
		return "", nil, errorf(l.pos(t.Args[0].Pos), KindName, "capture name %q: want letters, digits and _, not starting with a digit", name)
	}
	rest := t.Args[1:]
	seen := map[string]lexer.Position{}
	for _, a := range rest {
		if a.Key == "" {
			return "", nil, errorf(l.pos(a.Pos), KindSyntax, "%s takes one positional argument, the name; the others are key=value", *t.Name)
		}
		if first, dup := seen[a.Key]; dup {
			return "", nil, errorf(l.pos(a.Pos), KindArgument, "%s repeats %s (first at %s)", *t.Name, a.Key, l.pos(first))
		}
		seen[a.Key] = a.Pos
	}
	return name, rest, nil
}

func (l *lowerer) gen(t *tagAST) (Node, error) {
	name, args, err := l.captureName(t)
	if err != nil {
		return nil, err
	}
	g := &Gen{Pos: l.pos(t.Pos), Name: name, args: map[string]Pos{}}
	for _, a := range args {
		g.args[a.Key] = l.pos(a.Value.Pos)
	}
	o := &g.GenOptions
	var constraint *argAST // the first constraint argument, for the error on a second
	setConstraint := func(a *argAST) error {
		if constraint != nil {
			return errorf(l.pos(a.Pos), KindArgument, "gen %q has two constraints: %s (at %s) and %s; give one", name, constraint.Key, l.pos(constraint.Pos), a.Key)
		}
		constraint = a
		return nil
	}
	for _, a := range args {
		switch a.Key {
		case "regex", "grammar", "schema":
			if err := setConstraint(a); err != nil {
				return nil, err
			}
			s, err := l.str(a)
			if err != nil {
				return nil, err
			}
			if s == "" {
				return nil, errorf(l.pos(a.Value.Pos), KindArgument, "%s is empty", a.Key)
			}
			switch a.Key {
			case "regex":
				o.Regex = s
			case "grammar":
				o.GrammarFile = s
			case "schema":
				o.SchemaFile = s
			}
		case "json":
			b, err := l.boolean(a)
			if err != nil {
				return nil, err
			}
			if b {
				if err := setConstraint(a); err != nil {
					return nil, err
				}
			}
			o.JSON = b
		case "max_tokens":
			n, err := l.integer(a, 1, MaxGenTokens)
			if err != nil {
				return nil, err
			}
			o.MaxTokens = n
		case "stop":
			if a.Value.List != nil {
				if len(a.Value.List.Items) == 0 {
					return nil, errorf(l.pos(a.Value.Pos), KindArgument, "stop=[] lists no strings")
				}
				for _, it := range a.Value.List.Items {
					s, err := l.strValue(it, "stop")
					if err != nil {
						return nil, err
					}
					o.Stop = append(o.Stop, s)
				}
			} else {
				s, err := l.str(a)
				if err != nil {
					return nil, err
				}
				o.Stop = append(o.Stop, s)
			}
		case "temperature":
			f, err := l.number(a, 0, 100)
			if err != nil {
				return nil, err
			}
			o.Temperature = &f
		case "top_k":
			n, err := l.integer(a, 0, 1<<30)
			if err != nil {
				return nil, err
			}
			o.TopK = n
		case "top_p":
			f, err := l.number(a, 0, 1)
			if err != nil {
				return nil, err
			}
			o.TopP = f
		case "min_p":
			f, err := l.number(a, 0, 1)
			if err != nil {
				return nil, err
			}
			o.MinP = f
		default:
			return nil, errorf(l.pos(a.Pos), KindArgument, "gen has no argument %q (want regex, grammar, schema, json, max_tokens, stop, temperature, top_k, top_p or min_p)", a.Key)
		}
	}
	return g, nil
}

func (l *lowerer) selectTag(t *tagAST) (Node, error) {
	name, args, err := l.captureName(t)
	if err != nil {
		return nil, err
	}
	s := &Select{Pos: l.pos(t.Pos), Name: name, args: map[string]Pos{}}
	for _, a := range args {
		s.args[a.Key] = l.pos(a.Value.Pos)
	}
	hasOptions := false
	for _, a := range args {
		switch a.Key {
		case "options":
			hasOptions = true
			if a.Value.List == nil {
				return nil, errorf(l.pos(a.Value.Pos), KindArgument, "options is a list: options=[\"yes\", \"no\"]")
			}
			for _, it := range a.Value.List.Items {
				o, err := l.strValue(it, "an option")
				if err != nil {
					return nil, err
				}
				s.Options = append(s.Options, o)
			}
			if len(s.Options) == 0 {
				return nil, errorf(l.pos(a.Value.Pos), KindArgument, "select %q has no options", name)
			}
		case "temperature":
			f, err := l.number(a, 0, 100)
			if err != nil {
				return nil, err
			}
			s.Temperature = &f
		default:
			return nil, errorf(l.pos(a.Pos), KindArgument, "select has no argument %q (want options or temperature)", a.Key)
		}
	}
	if !hasOptions {
		return nil, errorf(l.pos(t.Pos), KindArgument, "select %q has no options: options=[\"yes\", \"no\"]", name)
	}
	return s, nil
}

func (l *lowerer) unquote(s string, p lexer.Position) (string, error) {
	u, err := strconv.Unquote(s)
	if err != nil {
		return "", errorf(l.pos(p), KindSyntax, "bad string %s: %v", s, err)
	}
	if !utf8.ValidString(u) {
		return "", errorf(l.pos(p), KindSyntax, "string %s is not valid UTF-8", s)
	}
	return u, nil
}

func (l *lowerer) str(a *argAST) (string, error) { return l.strValue(a.Value, a.Key) }

func (l *lowerer) strValue(v *valueAST, what string) (string, error) {
	if v.Str == nil {
		return "", errorf(l.pos(v.Pos), KindArgument, "%s is a quoted string", what)
	}
	return l.unquote(*v.Str, v.Pos)
}

func (l *lowerer) boolean(a *argAST) (bool, error) {
	if v := a.Value.Ident; v != nil && (*v == "true" || *v == "false") {
		return *v == "true", nil
	}
	return false, errorf(l.pos(a.Value.Pos), KindArgument, "%s is true or false", a.Key)
}

func (l *lowerer) integer(a *argAST, lo, hi int) (int, error) {
	if a.Value.Num == nil {
		return 0, errorf(l.pos(a.Value.Pos), KindArgument, "%s is a whole number", a.Key)
	}
	n, err := strconv.Atoi(*a.Value.Num)
	if err != nil || n < lo || n > hi {
		return 0, errorf(l.pos(a.Value.Pos), KindArgument, "%s=%s: want a whole number from %d to %d", a.Key, *a.Value.Num, lo, hi)
	}
	return n, nil
}

func (l *lowerer) number(a *argAST, lo, hi float64) (float64, error) {
	if a.Value.Num == nil {
		return 0, errorf(l.pos(a.Value.Pos), KindArgument, "%s is a number", a.Key)
	}
	f, err := strconv.ParseFloat(*a.Value.Num, 64)
	if err != nil || !(f >= lo && f <= hi) {
		return 0, errorf(l.pos(a.Value.Pos), KindArgument, "%s=%s: want a number from %g to %g", a.Key, *a.Value.Num, lo, hi)
	}
	return f, nil
}

// validName reports whether s can name a capture or variable: letters,
// digits and _, not starting with a digit.
func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// validVarRef: a name, or @index.
func validVarRef(s string) bool { return s == "@index" || validName(s) }
