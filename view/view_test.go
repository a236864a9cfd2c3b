package view

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/extract"
	"github.com/reins-go/reins/program"
)

// testPage generates a constrained output on the built-in model, with
// alternatives, forced tokens and a capture (the reason).
func testPage(t *testing.T) (*Page, *reins.Completion) {
	t.Helper()
	m := reins.Builtin()
	con, err := reins.Regex(`(yes|no), because [a-z ]{3,30}\.`)
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "Is the cat on the mat? "
	c, err := m.Generate(context.Background(), prompt, reins.Options{Constraint: con, TopLogprobs: 5, Temperature: 0.8, Seed: 2, MaxTokens: 40})
	if err != nil {
		t.Fatal(err)
	}
	p := FromCompletion("test page", prompt, c)
	at := strings.Index(c.Text, "because ")
	if at < 0 {
		t.Fatalf("no reason in %q", c.Text)
	}
	start := len(prompt) + at + len("because ")
	p.Captures = []Capture{{Name: "reason", Start: start, End: len(prompt) + len(c.Text) - 1, Prob: 0.42}}
	return p, c
}

func TestWrite(t *testing.T) {
	p, c := testPage(t)
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{`class="tok forced"`, `class="cap"`, "reason 42%", `<span class="plain">Is the cat on the mat? </span>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if n := strings.Count(html, `data-i="`); n != len(c.Tokens) {
		t.Errorf("%d token spans, want %d", n, len(c.Tokens))
	}
	for _, bad := range []string{"http://", "https://", "src="} {
		if strings.Contains(html, bad) {
			t.Errorf("the page is not self-contained: it holds %q", bad)
		}
	}
	if err := Write(&buf, &Page{Captures: []Capture{{Name: "x", Start: 3, End: 1}}}); err == nil {
		t.Error("a capture that ends before it starts was accepted")
	}
}

func TestDisplay(t *testing.T) {
	for in, want := range map[string]string{"héllo": "héllo", "\xe2\x82": "‹e2›‹82›", "a\xffb": "a‹ff›b", "\x00\n": "‹00›\n", "</s>": "</s>"} {
		if got := display([]byte(in)); got != want {
			t.Errorf("display(%q) = %q, want %q", in, got, want)
		}
	}
}

// chromium returns the browser to drive, or skips the test, loudly,
// where none is installed.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "CHROMIUM MISSING: the viewer's browser test did not run. Install it (Debian: apt-get install chromium; scripts/setup.sh does as root)."
	fmt.Fprintln(os.Stderr, "\n*** "+msg+" ***")
	t.Skip(msg)
	return ""
}

// TestBrowserHover renders the page in headless Chromium, checks that it
// draws and that hovering a token shows its alternatives, and keeps the
// screenshots (in REINS_SCREENSHOTS when set, else the test's folder).
func TestBrowserHover(t *testing.T) {
	exe := chromium(t)
	p, c := testPage(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "page.html")
	if err := WriteFile(file, p); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("REINS_SCREENSHOTS")
	if shots == "" {
		shots = dir
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")), chromedp.WindowSize(1000, 700),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	// A sampled token of the reason, with alternatives: hover it.
	target := -1
	for i, tok := range c.Tokens {
		if i > 3 && !tok.Forced && len(tok.TopLogprobs) > 1 && tok.TopLogprobs[1].Token > " " {
			target = i
			break
		}
	}
	if target < 0 {
		t.Fatal("no sampled token with alternatives")
	}
	sel := chromedp.CSS(fmt.Sprintf(`.tok[data-i="%d"]`, target))
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitVisible(sel)); err != nil {
		t.Fatal(err)
	}
	before, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	type point struct{ X, Y float64 }
	box, err := chromedp.Run(ctx, chromedp.Evaluate[point](fmt.Sprintf(
		`(function(){var r=document.querySelector('.tok[data-i="%d"]').getBoundingClientRect();return {X:r.left+r.width/2,Y:r.top+r.height/2};})()`, target)))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box.X, box.Y), chromedp.WaitVisible(chromedp.ID("tip"))); err != nil {
		t.Fatal(err)
	}
	tipShown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`getComputedStyle(document.getElementById("tip")).display !== "none"`))
	if err != nil {
		t.Fatal(err)
	}
	tipText, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("tip")))
	if err != nil {
		t.Fatal(err)
	}
	after, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	for name, img := range map[string][]byte{"viewer.png": before, "viewer-hover.png": after} {
		if err := os.WriteFile(filepath.Join(shots, name), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !tipShown {
		t.Fatal("hovering a token shows no tooltip")
	}
	tok := c.Tokens[target]
	for _, want := range []string{"model p", "constrained p", display(tok.TopLogprobs[1].Bytes)} {
		if !strings.Contains(tipText, strings.TrimSpace(want)) {
			t.Errorf("the tooltip %q lacks %q", tipText, want)
		}
	}
	// The screenshot is a real picture: not one colour.
	img, err := png.Decode(bytes.NewReader(after))
	if err != nil {
		t.Fatal(err)
	}
	colours := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if len(colours) < 10 {
		t.Errorf("the screenshot has %d colours: nothing rendered?", len(colours))
	}
	t.Logf("screenshots in %s; tooltip: %q", shots, tipText)
}

func TestFromProgram(t *testing.T) {
	prog, err := program.NewBuilder().Text("The cat sat on the ").Gen("thing", program.GenOptions{Regex: `[a-z]{2,8}`}).
		Text(". It was ").Select("mood", "happy", "sad").Text(".").Program()
	if err != nil {
		t.Fatal(err)
	}
	res, err := prog.Run(context.Background(), reins.Builtin(), &program.RunOptions{TopLogprobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := FromProgram("program", res)
	var text strings.Builder
	for _, s := range p.Segments {
		text.WriteString(s.Text)
		for _, tok := range s.Tokens {
			text.Write(tok.Bytes)
		}
	}
	if text.String() != res.Text {
		t.Errorf("the page spells %q, the program %q", text.String(), res.Text)
	}
	if len(p.Captures) != 2 {
		t.Fatalf("captures %+v", p.Captures)
	}
	for i, c := range p.Captures {
		if got := text.String()[c.Start:c.End]; got != res.Captures[i].Value {
			t.Errorf("capture %s spans %q, value %q", c.Name, got, res.Captures[i].Value)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "thing ") || !strings.Contains(buf.String(), "mood ") {
		t.Error("the page lacks the captures' labels")
	}
}

// TestFromExtraction: the page of extracted documents spells each one's
// ID and JSON value, and outlines every field over its value with its
// pointer and confidence.
func TestFromExtraction(t *testing.T) {
	m := reins.Builtin()
	x, err := extract.NewFile(m, filepath.Join("..", "testdata", "extract", "person.schema.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var docs []Extracted
	var want strings.Builder
	var fields []extract.Field
	for i, text := range []string{"Anna is 31 and has a cat.", "Bob, 40, has a dog."} {
		res, err := x.Extract(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("doc%d", i)
		docs = append(docs, Extracted{ID: id, Result: res})
		if i > 0 {
			want.WriteString("\n\n")
		}
		want.WriteString(id + "\n" + string(res.Value))
		fields = append(fields, res.Fields...)
	}
	docs = append(docs, Extracted{ID: "failed"}) // a failed document has no result: left out
	p := FromExtraction("extraction", docs)
	var text strings.Builder
	shaded := 0
	for _, s := range p.Segments {
		text.WriteString(s.Text)
		for _, tok := range s.Tokens {
			text.Write(tok.Bytes)
		}
		if len(s.Tokens) > 0 {
			shaded++
		}
	}
	if shaded != len(fields) {
		t.Errorf("%d fields shown as tokens, want all %d", shaded, len(fields))
	}
	if text.String() != want.String() {
		t.Errorf("the page spells %q, want %q", text.String(), want.String())
	}
	if len(p.Captures) != len(fields) {
		t.Fatalf("%d captures, %d fields", len(p.Captures), len(fields))
	}
	for i, c := range p.Captures {
		f := fields[i]
		if got := text.String()[c.Start:c.End]; c.Name != f.Pointer || got != string(f.Value) || c.Prob != f.Confidence {
			t.Errorf("capture %d: %s over %q (%v), want %s over %q (%v)", i, c.Name, got, c.Prob, f.Pointer, f.Value, f.Confidence)
		}
	}
}
