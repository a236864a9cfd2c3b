package grammar

// CompileCopying is Compile, copying the code of inlined rules' bodies
// or not, and counting the instructions copied (see copyInlined).
var CompileCopying = compileProg
