package grammar

// CompileCopying is Compile, copying the code of inlined rules' bodies
// or not, and counting the instructions copied (see copyInlined).
var CompileCopying = compileProg

// CompileUnshared is Compile with every node compiled anew at each
// place (see compiledNodes).
func CompileUnshared(g *Grammar) (*Prog, error) {
	p, _, err := compileProgSharing(g, true, false)
	return p, err
}
