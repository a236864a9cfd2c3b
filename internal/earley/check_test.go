package earley

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/internal/shared"
)

func compileGBNF(t testing.TB, src string) *grammar.Prog {
	t.Helper()
	g, err := gbnf.Parse("t.gbnf", src)
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	return p
}

func TestExpectedReadable(t *testing.T) {
	tests := []struct {
		src, prefix, want string
	}{
		{`root ::= "é"`, "", "'é'"},
		{`root ::= "é" | "è" | "日本" | "🎉"`, "", "'è'-'é', '日', '🎉'"},
		{`root ::= [à-ÿ]`, "", "'à'-'ÿ'"},
		{`root ::= [^"]`, "", `'\x00'-'!', '#'-'\x7f', any non-ASCII character`},
		{`root ::= [a-z\n] | "\t"`, "", `'\t'-'\n', 'a'-'z'`},
		{`root ::= [α-ω]+`, "α", "'α'-'ω', end of input"},
		{`root ::= [\u0800-\uFFFF]`, "", `'ࠀ'-'\ud7ff', '\ue000'-'\uffff'`},
		{`root ::= "a" <[5]>`, "a", "a token terminal"},
		{`root ::= "a"`, "a", "end of input"},
		// Lead bytes too many to walk one by one: the range's ends are
		// walked, not rebuilt from the lead bytes ('À'-'龿').
		{`root ::= [ä-龥]+`, "", "'ä'-'龥'"},
		{`root ::= [Ā-ſ] | [\U0001F600-\U0001F64F]`, "", "'Ā'-'ſ', '😀'-'🙏'"},
	}
	for _, tt := range tests {
		p := compileGBNF(t, tt.src)
		ps := NewParser(p)
		for i := 0; i < len(tt.prefix); i++ {
			require.True(t, ps.Push(tt.prefix[i]))
		}
		before := ps.Len()
		assert.Equal(t, tt.want, ps.Expected(), tt.src)
		assert.Equal(t, before, ps.Len(), "Expected leaves the parser as it was")
		assert.NoError(t, ps.Err())
	}
	// Raw bytes, which begin no character.
	p, err := grammar.Compile(grammar.Choice("\xff", "\x80x", "a"))
	require.NoError(t, err)
	assert.Equal(t, `'a', \x80, \xff`, NewParser(p).Expected())
	// Inside a character: what may finish it.
	p = compileGBNF(t, `root ::= "é" | "è" | "x"`)
	ps := NewParser(p)
	require.True(t, ps.Push(0xC3))
	assert.Equal(t, `\xa8-\xa9`, ps.Expected(), "without the character's first bytes, the bytes")
	assert.Equal(t, "'è'-'é'", ps.expected([]byte{0xC3}))
}

func TestCheck(t *testing.T) {
	p := compileGBNF(t, `root ::= "{" ws "\"" [^"]* "\"" ws "}"
ws ::= [ \n]*`)
	check := func(s string) error { return Check(p, strings.NewReader(s), CheckOptions{}) }
	assert.NoError(t, check(`{"café"}`))
	assert.NoError(t, check("{\n \"日本\"\n}"))

	tests := []struct {
		in   string
		want RejectError
	}{
		{`{"a"x`, RejectError{Offset: 4, Line: 1, Col: 5, Got: "'x'", Expected: `'\n', ' ', '}'`}},
		{"{\n\"日本\"\n}}", RejectError{Offset: 12, Line: 3, Col: 2, Got: "'}'", Expected: "end of input"}},
		{"é", RejectError{Offset: 0, Line: 1, Col: 1, Got: "'é'", Expected: "'{'"}},
		{"{\"a\"\xff", RejectError{Offset: 4, Line: 1, Col: 5, Got: `\xff`, Expected: `'\n', ' ', '}'`}},
		{`{"a`, RejectError{Offset: 3, Line: 1, Col: 4, EOF: true, Expected: `'\x00'-'\x7f', any non-ASCII character`}},
	}
	for _, tt := range tests {
		err := check(tt.in)
		var e *RejectError
		require.True(t, errors.As(err, &e), "%q: %v", tt.in, err)
		assert.Equal(t, tt.want, *e, "%q", tt.in)
	}
	err := check("{\"a\"\n  x")
	assert.EqualError(t, err, `byte 7 (line 2, column 3): 'x' is not allowed; expected '\n', ' ', '}'`)
	err = check(`{"a`)
	assert.EqualError(t, err, `byte 3 (line 1, column 4): the text ends too early; expected '\x00'-'\x7f', any non-ASCII character`)

	// A character refused in its middle: it is named whole, and what
	// could finish the bytes before it.
	p = compileGBNF(t, `root ::= "café"`)
	var e *RejectError
	require.ErrorAs(t, Check(p, strings.NewReader("cafè"), CheckOptions{}), &e)
	assert.Equal(t, RejectError{Offset: 4, Line: 1, Col: 4, Got: "'è'", Expected: "'é'"}, *e)

	// Reading fails: not a verdict.
	err = Check(p, io.MultiReader(strings.NewReader("ca"), errReader{}), CheckOptions{})
	assert.ErrorContains(t, err, "reading the input: disk on fire")
	assert.False(t, errors.As(err, &e))
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// TestCheckerWrites checks that a Checker gives the same verdict however
// the input is cut into writes.
func TestCheckerWrites(t *testing.T) {
	p := compileGBNF(t, `root ::= ("日本" | "é" | [a-c])+`)
	for _, in := range []string{"a日本éb", "a日本éx", "a日本"[:5], "a日本é"} {
		want := Check(p, strings.NewReader(in), CheckOptions{})
		for cut := 0; cut <= len(in); cut++ {
			c := NewChecker(p, CheckOptions{})
			_, err := c.Write([]byte(in[:cut]))
			if err == nil {
				_, err = c.Write([]byte(in[cut:]))
			}
			if err == nil {
				err = c.Close()
			}
			if want == nil {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, want.Error(), "%q cut at %d", in, cut)
			}
		}
	}
}

// jsonStream is an io.Reader of a JSON document of about n bytes that
// json.gbnf accepts, made as it is read: objects in an array, with
// strings (escapes and non-ASCII), numbers, literals and nesting.
type jsonStream struct {
	n, i int
	buf  bytes.Buffer
	done bool
}

func (s *jsonStream) Read(p []byte) (int, error) {
	for s.buf.Len() < len(p) && !s.done {
		switch {
		case s.i == 0:
			s.buf.WriteString(`{"items": [`)
		case s.buf.Len()+s.i*0 >= 0 && s.i*160 >= s.n:
			s.buf.WriteString(`]}`)
			s.done = true
			continue
		default:
			s.buf.WriteString(", ")
		}
		fmt.Fprintf(&s.buf, `{"id": %d, "name": "item \"%d\" café 日本", "tags": ["a", "b\\n"], "price": %d.%02d, "ok": true, "nested": {"x": [1, {"y": null}], "z": -3e5}}`, s.i, s.i, s.i%1000, s.i%100)
		s.i++
	}
	if s.buf.Len() == 0 {
		return 0, io.EOF
	}
	return s.buf.Read(p)
}

// TestCheckMemoryBounded checks 20 MB of JSON against json.gbnf: the
// heap stays within a few megabytes, as it would for 20 KB, since the
// checker commits what it no longer needs as it goes.
func TestCheckMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("checks 20 MB")
	}
	src, err := os.ReadFile(shared.Path(t, "gbnf/json.gbnf"))
	require.NoError(t, err)
	p := compileGBNF(t, string(src))
	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // sample the heap while the check runs
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	in := &jsonStream{n: 20 << 20}
	err = Check(p, in, CheckOptions{})
	close(stop)
	<-sampled
	require.NoError(t, err)
	require.Greater(t, in.i, 100000)
	growth := int64(peak) - int64(before.HeapInuse)
	t.Logf("checked %d objects; heap in use %d KB before, peak %d KB", in.i, before.HeapInuse>>10, peak>>10)
	assert.Less(t, growth, int64(32<<20), "the heap grew by %d MB", growth>>20)
}

// ambiguous is x ::= x x | "a" | "": cubic for Earley's algorithm.
const ambiguous = "root ::= x\nx ::= x x | \"a\" | \"\""

func TestWorkBudget(t *testing.T) {
	p := compileGBNF(t, ambiguous)
	start := time.Now()
	err := Check(p, strings.NewReader(strings.Repeat("a", 4000)), CheckOptions{})
	assert.Less(t, time.Since(start), 5*time.Second)
	require.ErrorIs(t, err, ErrWorkBudget)
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	assert.True(t, be.Whole)
	assert.Greater(t, be.Offset, int64(100))
	assert.Equal(t, 1, be.Line)
	assert.Equal(t, int(be.Offset)+1, be.Col)
	assert.Contains(t, err.Error(), fmt.Sprintf("byte %d (line 1, column %d): the parse took more than", be.Offset, be.Col))
	var re *RejectError
	assert.False(t, errors.As(err, &re), "over the budget is not a rejection")

	// Without the whole check's budget, one step's stops it.
	err = Check(p, strings.NewReader(strings.Repeat("a", 4000)), CheckOptions{WorkBase: -1, StepBudget: 1 << 14})
	require.ErrorAs(t, err, &be)
	assert.False(t, be.Whole)
	assert.Contains(t, err.Error(), "one step of the parse took more than 16384 units of work")
	// Without any, it is accepted (short, to stay quick).
	assert.NoError(t, Check(p, strings.NewReader(strings.Repeat("a", 300)), CheckOptions{StepBudget: -1, WorkBase: -1, WorkPerByte: -1}))

	// The parser: a push over the budget fails and says so, and the
	// parser stays failed until Reset.
	ps := NewParser(p)
	ps.SetStepBudget(1000)
	n := 0
	for ps.Push('a') {
		n++
	}
	require.ErrorIs(t, ps.Err(), ErrWorkBudget)
	assert.Equal(t, n, ps.Len(), "the step over the budget is not taken")
	assert.Greater(t, n, 10)
	ps.Pop(5)
	assert.False(t, ps.Push('a'), "a failed parser refuses every byte")
	assert.False(t, ps.AdvanceToken([]byte("a"), nil))
	assert.Equal(t, n-5, ps.Len())
	ps.Reset()
	assert.NoError(t, ps.Err())
	assert.True(t, ps.Push('a'))

	// AdvanceToken over the budget.
	ps.Reset()
	require.False(t, ps.AdvanceToken([]byte(strings.Repeat("a", 200)), nil))
	assert.ErrorIs(t, ps.Err(), ErrWorkBudget)
	assert.Equal(t, 0, ps.Len())

	// A job's limit on the total work.
	ps = NewParser(p)
	ps.SetWorkLimit(ps.Work() + 5000)
	for ps.Push('a') {
	}
	require.ErrorAs(t, ps.Err(), &be)
	assert.True(t, be.Whole)
	assert.LessOrEqual(t, ps.Work(), int64(5000))
}

// TestBudgetNotReached checks that the shared grammars, on inputs as
// long as a random walk makes, stay far below the default budgets.
func TestBudgetNotReached(t *testing.T) {
	for _, name := range []string{"json.gbnf", "c.gbnf", "english.gbnf", "list.gbnf", "arithmetic.gbnf", "japanese.gbnf"} {
		src, err := os.ReadFile(shared.Path(t, "gbnf/"+name))
		require.NoError(t, err)
		p := compileGBNF(t, string(src))
		ps := NewParser(p)
		var text []byte
		var maxStep int64
		for i := 0; len(text) < 2000; i++ {
			next, _ := ps.Next()
			var opts []byte
			for c := 0; c < 256; c++ {
				if next[c>>6]&(1<<(c&63)) != 0 {
					opts = append(opts, byte(c))
				}
			}
			if len(opts) == 0 {
				break
			}
			w := ps.Work()
			c := opts[(i*7919)%len(opts)]
			require.True(t, ps.Push(c))
			maxStep = max(maxStep, ps.Work()-w)
			text = append(text, c)
		}
		assert.Less(t, maxStep, int64(DefaultStepBudget/1000), name)
		assert.Less(t, ps.Work(), int64(DefaultCheckPerByte/16*len(text)), name)
		assert.NoError(t, ps.Err())
	}
}

// FuzzCheck runs Check on a random grammar and input, within small
// budgets: it must not panic, must stop within its budget, and must give
// the verdict a parser that keeps every step gives (committing changes
// nothing), at the same byte.
func FuzzCheck(f *testing.F) {
	f.Add(`root ::= "{" [a-z]* "}"`, []byte("{abc}"))
	f.Add(`root ::= [^"]* "\"" | "é" root`, []byte("éé\"x"))
	f.Add(ambiguous, []byte(strings.Repeat("a", 200)))
	f.Add("root ::= x\nx ::= \"a\" x | \"\"", []byte(strings.Repeat("a", 100)+"b"))
	f.Add("root ::= (\"日本\" | [α-ω] | <[3]>)+ \"\\n\"", []byte("日本α\n"))
	if d := shared.Dir(); d != "" {
		for _, name := range []string{"json.gbnf", "arithmetic.gbnf", "list.gbnf"} {
			if src, err := os.ReadFile(d + "/gbnf/" + name); err == nil {
				f.Add(string(src), []byte(`{"a": [1, 2.5e3, "x\u00e9"], "b": {"c": null}}`))
			}
		}
	}
	opts := CheckOptions{StepBudget: 1 << 14, WorkBase: 1 << 18, WorkPerByte: 256}
	f.Fuzz(func(t *testing.T, src string, input []byte) {
		g, err := gbnf.Parse("fuzz", src)
		if err != nil {
			return
		}
		p, err := grammar.Compile(g)
		if err != nil {
			return
		}
		err = Check(p, bytes.NewReader(input), opts)
		var be *BudgetError
		if errors.As(err, &be) {
			if be.Work > be.Budget+1<<16 && !be.Whole {
				t.Fatalf("a step stopped at %d work, past its budget %d", be.Work, be.Budget)
			}
			return
		}
		// The same input through a parser that keeps every step.
		ps := NewParser(p)
		ps.SetStepBudget(opts.StepBudget)
		at := -1
		for i, b := range input {
			if !ps.Push(b) {
				at = i
				break
			}
		}
		if ps.Err() != nil {
			return
		}
		_ = ps.Expected()
		var re *RejectError
		switch {
		case at >= 0:
			if !errors.As(err, &re) || re.EOF || re.Offset != int64(at) {
				t.Fatalf("the parser refuses byte %d; Check says %v", at, err)
			}
		case !ps.CanEnd():
			if !errors.As(err, &re) || !re.EOF || re.Offset != int64(len(input)) {
				t.Fatalf("the input ends too early for the parser; Check says %v", err)
			}
		case err != nil:
			t.Fatalf("the parser accepts; Check says %v", err)
		}
	})
}

// TestCheckStateBound: a check whose live state passes MaxStateBytes
// (deep nesting keeps every level open) stops with a *StateError, which
// is no verdict (ErrWorkBudget); a long flat input stays within it.
func TestCheckStateBound(t *testing.T) {
	p := compileGBNF(t, `root ::= "[" root "]" | "a"`)
	deep := strings.Repeat("[", 200_000) + "a" + strings.Repeat("]", 200_000)
	err := Check(p, strings.NewReader(deep), CheckOptions{MaxStateBytes: 1 << 20})
	var se *StateError
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, ErrWorkBudget)
	assert.Less(t, se.Offset, int64(200_000))
	assert.NoError(t, Check(p, strings.NewReader(deep), CheckOptions{}), "within the default bound")

	flat := compileGBNF(t, `root ::= ("a" | "b")*`)
	assert.NoError(t, Check(flat, strings.NewReader(strings.Repeat("ab", 1<<20)), CheckOptions{MaxStateBytes: 1 << 20}))
}

// TestAdvanceTokenCountsTokenWork: AdvanceToken's work counts the set it
// scans for token terminals and the items the matching ones add beside
// the token's bytes, so that a job's limit bounds a walk over tokens
// waited for by thousands of terminals at once.
func TestAdvanceTokenCountsTokenWork(t *testing.T) {
	const n = 500
	var src strings.Builder
	src.WriteString(`root ::= ("a"`)
	for id := range n {
		fmt.Fprintf(&src, " | !<[%d]>", id)
	}
	src.WriteString(")+")
	g, err := gbnf.Parse("t.gbnf", src.String())
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	ps := NewParser(p)
	before := ps.Work()
	require.True(t, ps.AdvanceToken([]byte("a"), func(int) bool { return true }))
	assert.GreaterOrEqual(t, ps.Work()-before, int64(2*n), "the scan of %d terminals and the %d items they add", n, n)

	ps = NewParser(p)
	ps.SetWorkLimit(ps.Work() + n)
	require.False(t, ps.AdvanceToken([]byte("a"), func(int) bool { return true }))
	require.ErrorIs(t, ps.Err(), ErrWorkBudget)
	assert.Zero(t, ps.Len(), "the step over the limit is not taken")
}
