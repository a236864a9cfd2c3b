module github.com/reins-go/reins

go 1.26

require (
	github.com/alecthomas/participle/v2 v2.1.4
	github.com/ollama/ollama v0.17.4
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1
	github.com/schollz/progressbar/v3 v3.18.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.37.0
	golang.org/x/term v0.36.0
)

require (
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
