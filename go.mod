module github.com/reins-go/reins

go 1.26

require (
	github.com/alecthomas/participle/v2 v2.1.4
	github.com/ollama/ollama v0.17.4
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.37.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
