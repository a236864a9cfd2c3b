package program

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/grammar/regex"
	"github.com/reins-go/reins/internal/fileread"
)

// DefaultGenTokens is a gen's budget when it sets no max_tokens.
const DefaultGenTokens = 128

// Program is a checked program: its nodes, with every hole's constraint
// compiled. It is immutable and safe for concurrent use (one Program
// may run on several models at once).
type Program struct {
	name  string
	nodes []Node
	holes map[*Gen]*hole
	roles bool // the program has role blocks

	mu    sync.Mutex
	cache map[boundKey]*reins.Constraint // a hole's constraint with its boundary
}

// hole is a gen's compiled constraint.
type hole struct {
	g    *grammar.Grammar      // nil for free text
	json *jsonschema.Validator // schema holes: the value is validated
	isJS bool                  // the value is JSON (schema or json=true)
	desc string
}

type boundKey struct {
	g        *Gen
	boundary string
}

// maxCache bounds the constraints a Program keeps compiled.
const maxCache = 256

// Nodes returns the program's nodes. They must not be changed.
func (p *Program) Nodes() []Node { return p.nodes }

// Roles reports whether the program has role blocks (whose chat format
// Run takes from RunOptions.Chat or the model).
func (p *Program) Roles() bool { return p.roles }

// Name returns the template's name (its file, for ParseFile).
func (p *Program) Name() string { return p.name }

// String returns a compact dump of the program, one top-level node per
// line (text{"..."} gen{name regex="..."} ...), for tests.
func (p *Program) String() string { return Dump(p.nodes) }

// compileProgram checks nodes and compiles every hole's constraint,
// reading grammar and schema files from dir.
func compileProgram(name string, nodes []Node, dir string, fromTemplate bool) (*Program, error) {
	p := &Program{name: name, nodes: nodes, holes: map[*Gen]*hole{}}
	c := &checker{p: p, dir: dir, names: map[string]Pos{}}
	p.roles = hasRole(nodes)
	if err := c.walk(nodes, 0, false); err != nil {
		return nil, err
	}
	if p.roles {
		nodes, err := c.outsideRoles(nodes)
		if err != nil {
			return nil, err
		}
		p.nodes = nodes
	}
	return p, nil
}

func hasRole(nodes []Node) bool {
	for _, n := range nodes {
		switch n := n.(type) {
		case *Role:
			return true
		case *Each:
			if hasRole(n.Body) {
				return true
			}
		}
	}
	return false
}

type checker struct {
	p     *Program
	dir   string
	names map[string]Pos // capture names seen
	holes int
}

func (c *checker) walk(nodes []Node, depth int, inRole bool) error {
	if depth > MaxNesting {
		return errorf(nodes[0].Position(), KindLimit, "blocks nest deeper than MaxNesting (%d)", MaxNesting)
	}
	for _, n := range nodes {
		switch n := n.(type) {
		case *Text, *Var:
			if v, ok := n.(*Var); ok && !validVarRef(v.Name) {
				return errorf(v.Pos, KindName, "%q is not a variable name", v.Name)
			}
		case *Gen:
			if err := c.capture(n.Pos, n.Name); err != nil {
				return err
			}
			h, err := c.gen(n)
			if err != nil {
				return err
			}
			c.p.holes[n] = h
		case *Select:
			if err := c.capture(n.Pos, n.Name); err != nil {
				return err
			}
			if err := checkSelect(n); err != nil {
				return err
			}
		case *Role:
			if inRole {
				return errorf(n.Pos, KindSyntax, "{{#%s}} inside another role block: roles do not nest", n.Role)
			}
			if !isRole(n.Role) {
				return errorf(n.Pos, KindArgument, "unknown role %q (want system, user or assistant)", n.Role)
			}
			if err := c.walk(n.Body, depth+1, true); err != nil {
				return err
			}
		case *Each:
			if !validName(n.List) {
				return errorf(n.Pos, KindName, "%q is not a variable name", n.List)
			}
			if err := c.walk(n.Body, depth+1, inRole); err != nil {
				return err
			}
		case nil:
			return errors.New("program: a nil node")
		default:
			return fmt.Errorf("program: unknown node %T", n)
		}
	}
	return nil
}

// outsideRoles checks that, in a program with role blocks, what lies
// outside them is white space, and drops it.
func (c *checker) outsideRoles(nodes []Node) ([]Node, error) {
	var out []Node
	for _, n := range nodes {
		switch n := n.(type) {
		case *Role:
			out = append(out, n)
		case *Each:
			body, err := c.outsideRoles(n.Body)
			if err != nil {
				return nil, err
			}
			e := *n
			e.Body = body
			out = append(out, &e)
		case *Text:
			if strings.TrimFunc(n.Text, unicode.IsSpace) != "" {
				return nil, errorf(n.Pos, KindSyntax, "text outside a role block, in a program with role blocks: put it in {{#system}}, {{#user}} or {{#assistant}}")
			}
		default:
			return nil, errorf(n.Position(), KindSyntax, "a tag outside a role block, in a program with role blocks: put it in {{#system}}, {{#user}} or {{#assistant}}")
		}
	}
	return out, nil
}

func (c *checker) capture(pos Pos, name string) error {
	if !validName(name) {
		return errorf(pos, KindName, "capture name %q: want letters, digits and _, not starting with a digit", name)
	}
	if name == "this" {
		return errorf(pos, KindName, "capture name %q is the loop item's", name)
	}
	if first, dup := c.names[name]; dup {
		return errorf(pos, KindName, "capture %q is already captured at %s", name, first)
	}
	c.names[name] = pos
	c.holes++
	if c.holes > MaxHoles {
		return errorf(pos, KindLimit, "more than MaxHoles (%d) gen and select tags", MaxHoles)
	}
	return nil
}

func checkSelect(s *Select) error {
	at := argPos(s.args, "options", s.Pos)
	if len(s.Options) == 0 {
		return errorf(at, KindArgument, "select %q has no options", s.Name)
	}
	if len(s.Options) > MaxOptions {
		return errorf(at, KindLimit, "select %q has %d options, more than MaxOptions (%d)", s.Name, len(s.Options), MaxOptions)
	}
	seen := map[string]int{}
	for i, o := range s.Options {
		if o == "" {
			return errorf(at, KindArgument, "select %q: option %d is empty", s.Name, i+1)
		}
		if j, dup := seen[o]; dup {
			return errorf(at, KindArgument, "select %q: option %d %q repeats option %d", s.Name, i+1, o, j+1)
		}
		seen[o] = i
	}
	if t := s.Temperature; t != nil && !(*t >= 0 && *t <= 100) {
		return errorf(argPos(s.args, "temperature", s.Pos), KindArgument, "select %q: temperature %g: want 0 to 100", s.Name, *t)
	}
	return nil
}

// gen checks a gen's options and compiles its constraint.
func (c *checker) gen(g *Gen) (*hole, error) {
	o := &g.GenOptions
	var set []string
	for _, k := range []struct {
		name string
		on   bool
	}{{"regex", o.Regex != ""}, {"gbnf", o.GBNF != ""}, {"grammar", o.GrammarFile != "" || o.Grammar != nil},
		{"schema", o.SchemaFile != "" || len(o.Schema) > 0}, {"json", o.JSON}} {
		if k.on {
			set = append(set, k.name)
		}
	}
	if o.GrammarFile != "" && o.Grammar != nil {
		set = append(set, "grammar")
	}
	if o.SchemaFile != "" && len(o.Schema) > 0 {
		set = append(set, "schema")
	}
	switch {
	case len(set) > 1:
		return nil, errorf(g.Pos, KindArgument, "gen %q has %d constraints (%s); give one", g.Name, len(set), strings.Join(set, ", "))
	case o.MaxTokens < 0 || o.MaxTokens > MaxGenTokens:
		return nil, errorf(g.Pos, KindArgument, "gen %q: max_tokens %d: want 1 to %d (0: %d)", g.Name, o.MaxTokens, MaxGenTokens, DefaultGenTokens)
	case len(o.Stop) > MaxStops:
		return nil, errorf(g.Pos, KindLimit, "gen %q has %d stop strings, more than MaxStops (%d)", g.Name, len(o.Stop), MaxStops)
	case len(o.Stop) > 0 && len(set) > 0:
		return nil, errorf(g.Pos, KindArgument, "gen %q has both a constraint (%s) and stop: a constrained hole ends where its language does", g.Name, set[0])
	case o.Temperature != nil && !(*o.Temperature >= 0 && *o.Temperature <= 100):
		return nil, errorf(g.Pos, KindArgument, "gen %q: temperature %g: want 0 to 100", g.Name, *o.Temperature)
	case o.TopK < 0, !(o.TopP >= 0 && o.TopP <= 1), !(o.MinP >= 0 && o.MinP <= 1):
		return nil, errorf(g.Pos, KindArgument, "gen %q: top_k, top_p or min_p out of range (top_k ≥ 0; top_p and min_p from 0 to 1)", g.Name)
	}
	for _, s := range o.Stop {
		if s == "" || len(s) > MaxStopBytes {
			return nil, errorf(g.Pos, KindArgument, "gen %q: a stop string is empty or longer than MaxStopBytes (%d)", g.Name, MaxStopBytes)
		}
	}
	h := &hole{}
	at := g.Pos // where the constraint was written
	for _, k := range []string{"regex", "grammar", "schema", "json"} {
		if p, ok := g.args[k]; ok {
			at = p
		}
	}
	var err error
	switch {
	case o.Regex != "":
		h.desc = "regex"
		h.g, err = regex.Parse(o.Regex)
	case o.GBNF != "":
		h.desc = "grammar"
		h.g, err = gbnf.Parse(g.Name, o.GBNF)
	case o.Grammar != nil:
		h.desc = "grammar"
		h.g = o.Grammar
	case o.GrammarFile != "":
		h.desc = "grammar " + o.GrammarFile
		var src []byte
		if src, err = c.readFile(g, "grammar", o.GrammarFile); err != nil {
			return nil, err
		}
		h.g, err = gbnf.Parse(o.GrammarFile, string(src))
	case len(o.Schema) > 0, o.SchemaFile != "":
		h.desc, h.isJS = "JSON schema", true
		src := o.Schema
		opts := jsonschema.Options{Compact: true, Bounded: true}
		if o.SchemaFile != "" {
			h.desc += " " + o.SchemaFile
			if src, err = c.readFile(g, "schema", o.SchemaFile); err != nil {
				return nil, err
			}
			abs, aerr := filepath.Abs(filepath.Join(c.dir, o.SchemaFile))
			if aerr != nil {
				return nil, &Error{Pos: at, Kind: KindFile, Msg: "schema " + o.SchemaFile, Err: aerr}
			}
			opts.BaseURI = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
			opts.Loader = jsonschema.DirLoader(c.dir, MaxFileBytes)
		}
		if h.g, err = jsonschema.Compile(src, opts); err == nil {
			h.json, err = jsonschema.NewValidator(src, opts)
		}
	case o.JSON:
		h.desc, h.isJS = "JSON", true
		h.g = jsonschema.JSON(jsonschema.Options{Compact: true, Bounded: true})
	default:
		return h, nil // free text
	}
	if err != nil {
		return nil, &Error{Pos: at, Kind: KindConstraint, Msg: fmt.Sprintf("gen %q: %s", g.Name, h.desc), Err: err}
	}
	// Compile once here, so that a grammar that cannot compile is an
	// error with the hole's position rather than at run time.
	if _, err := reins.FromGrammar(h.g); err != nil {
		return nil, &Error{Pos: at, Kind: KindConstraint, Msg: fmt.Sprintf("gen %q: %s", g.Name, h.desc), Err: err}
	}
	return h, nil
}

// readFile reads a file a gen names, from the template's folder only.
func (c *checker) readFile(g *Gen, what, name string) ([]byte, error) {
	fail := func(err error) error {
		return &Error{Pos: argPos(g.args, what, g.Pos), Kind: KindFile, Msg: fmt.Sprintf("gen %q: %s file %q", g.Name, what, name), Err: err}
	}
	if c.dir == "" {
		return nil, fail(errors.New("a template parsed from a string reads no files (give ParseOptions.Dir)"))
	}
	if filepath.IsAbs(name) || !filepath.IsLocal(name) {
		return nil, fail(errors.New("must be a relative path inside the template's folder"))
	}
	root, err := os.OpenRoot(c.dir) // no path through it leaves dir, symbolic links included
	if err != nil {
		return nil, fail(err)
	}
	defer root.Close()
	f, err := fileread.OpenIn(root, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fail(errors.New("no such file in the template's folder"))
		}
		return nil, fail(err)
	}
	defer f.Close()
	b, err := fileread.ReadAll(f, name, MaxFileBytes)
	if err != nil {
		return nil, fail(err)
	}
	return b, nil
}

// Builder builds a program in Go; the template format is sugar over it.
//
//	b := program.NewBuilder()
//	b.Text("Q: What is 2+2?\nA: ").Gen("answer", program.GenOptions{Regex: `[0-9]+`})
//	b.Text("\nSure? ").Select("sure", "yes", "no")
//	p, err := b.Program()
//
// Errors (a name used twice, a select without options, a regex that does
// not compile) come back from Program, with the node's index.
type Builder struct {
	name  string
	dir   string
	stack [][]Node // open blocks' bodies; stack[0] is the program
	n     int      // nodes added, for positions
	err   error
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{name: "builder", stack: [][]Node{nil}} }

// Dir sets the folder that GrammarFile and SchemaFile are read from.
func (b *Builder) Dir(dir string) *Builder { b.dir = dir; return b }

func (b *Builder) pos() Pos { b.n++; return Pos{File: b.name, Col: b.n} }

func (b *Builder) add(n Node) *Builder {
	top := len(b.stack) - 1
	b.stack[top] = append(b.stack[top], n)
	return b
}

// Text adds literal text.
func (b *Builder) Text(s string) *Builder { return b.add(&Text{Pos: b.pos(), Text: s}) }

// Var inserts an input variable or an earlier capture.
func (b *Builder) Var(name string) *Builder { return b.add(&Var{Pos: b.pos(), Name: name}) }

// Gen adds a hole the model fills, captured under name.
func (b *Builder) Gen(name string, opts GenOptions) *Builder {
	return b.add(&Gen{Pos: b.pos(), Name: name, GenOptions: opts})
}

// Select adds a choice among options, captured under name.
func (b *Builder) Select(name string, options ...string) *Builder {
	return b.add(&Select{Pos: b.pos(), Name: name, Options: options})
}

// SelectT is Select with a temperature: above 0 an option is sampled.
func (b *Builder) SelectT(name string, temperature float64, options ...string) *Builder {
	return b.add(&Select{Pos: b.pos(), Name: name, Options: options, Temperature: &temperature})
}

// Role adds a chat turn of role (system, user or assistant) whose body
// body builds.
func (b *Builder) Role(role string, body func(*Builder)) *Builder {
	p := b.pos()
	b.stack = append(b.stack, nil)
	body(b)
	nodes := b.stack[len(b.stack)-1]
	b.stack = b.stack[:len(b.stack)-1]
	return b.add(&Role{Pos: p, Role: role, Body: nodes})
}

// Each repeats what body builds once per item of the list variable
// list; see Each.
func (b *Builder) Each(list string, body func(*Builder)) *Builder {
	p := b.pos()
	b.stack = append(b.stack, nil)
	body(b)
	nodes := b.stack[len(b.stack)-1]
	b.stack = b.stack[:len(b.stack)-1]
	return b.add(&Each{Pos: p, List: list, Body: nodes})
}

// Program checks the nodes added and returns the program.
func (b *Builder) Program() (*Program, error) {
	if len(b.stack) != 1 {
		return nil, errors.New("program: Program called inside a Role or Each body")
	}
	return compileProgram(b.name, b.stack[0], b.dir, false)
}
