package instcount

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/pyjson"
)

func TestWhy(t *testing.T) {
	for _, f := range strings.Fields(os.Getenv("FILES")) {
		raw, _ := os.ReadFile("/work/shared/maskbench-dev/" + f)
		var mb struct {
			Schema json.RawMessage
			Tests  []struct {
				Valid bool
				Data  json.RawMessage
			}
		}
		json.Unmarshal(raw, &mb)
		g, err := jsonschema.Compile(mb.Schema, jsonschema.Options{})
		if err != nil {
			fmt.Println(f, err)
			continue
		}
		p, _ := grammar.Compile(g)
		for _, tc := range mb.Tests {
			if !tc.Valid {
				continue
			}
			text, _ := pyjson.Dumps(tc.Data)
			ps := grammar.NewParser(p)
			i := 0
			for ; i < len(text); i++ {
				if !ps.Push(text[i]) {
					break
				}
			}
			if i < len(text) || !ps.CanEnd() {
				lo := max(0, i-80)
				fmt.Printf("%s: refused at %d: %q<<HERE>>%q\n", f, i, text[lo:i], text[i:min(len(text), i+40)])
			}
		}
	}
}
