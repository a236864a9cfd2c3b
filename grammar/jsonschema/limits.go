package jsonschema

// Limits on what Compile takes. Each is checked before the work it
// bounds, and a schema past one is an *Error whose Limit names it, with
// the JSON pointer of what is too large. Together they keep compile time
// and memory polynomial, and small, in the size of the schema: the
// document is read in one pass; the validator's check of it against its
// metaschema costs about the square of its depth per value (1,000
// nested objects took 17 s, 128 levels take a few tens of ms); numbers
// become grammars digit by digit; literals and enums byte by byte.
// Where the limits still allow a grammar larger than grammar.MaxInst
// instructions (many large parts together), Compile refuses it too,
// naming the largest part.
//
// The values leave room above what real schemas need: in MaskBench's
// 3,701 development schemas the largest is 340 KB, the deepest nests 34
// levels, the longest number has 22 characters, the longest enum 2,457
// values and the longest oneOf 41 branches.
const (
	// MaxSchemaBytes bounds the schema document, each document a
	// Loader returns, and all of them together.
	MaxSchemaBytes = 4 << 20
	// MaxDepth bounds how deeply a schema document nests objects and
	// arrays (a schema object with properties is two levels).
	MaxDepth = 128
	// MaxNumberDigits bounds the digits of a number in a schema document
	// (and the size of its exponent), and the digits of a numeric bound
	// written out in full (1e300 is 301 digits).
	MaxNumberDigits = 1000
	// MaxEnumValues bounds the values of one enum.
	MaxEnumValues = 10000
	// MaxLiteralBytes bounds the JSON text of the enum and const values
	// one schema compiles, all together: each byte is about one
	// instruction of the grammar.
	MaxLiteralBytes = 256 << 10
	// MaxOneOfBranches bounds the branches of a oneOf, whose exclusivity
	// is proved pair by pair.
	MaxOneOfBranches = 256
	// MaxDocuments bounds the documents a Loader is asked for.
	MaxDocuments = 256
)

// Names of the limits, for Error.Limit.
const (
	limitSchemaBytes  = "MaxSchemaBytes"
	limitDepth        = "MaxDepth"
	limitNumberDigits = "MaxNumberDigits"
	limitEnumValues   = "MaxEnumValues"
	limitLiteralBytes = "MaxLiteralBytes"
	limitOneOf        = "MaxOneOfBranches"
	limitDocuments    = "MaxDocuments"
	limitSubschemas   = "subschemas"      // maxSchemaNodes
	limitGrammar      = "grammar.MaxInst" // the grammar's instruction budget
	limitWork         = "work"            // a proof's or a merge's step budget
)

// Bounds of the constructions (unexported: a schema past one is an
// *Error naming the keyword, a refusal rather than a limit): each keeps
// a construction's grammar, and the work to build it, small.
//
//   - maxDFAStates (4096): the states of an automaton of keys or
//     strings (patternProperties, propertyNames, a pattern with length
//     bounds, several patterns, a negated pattern).
//   - maxKeyPatterns (16): the patterns one object's keys are split by.
//   - maxUniqueValues (8): the values of the items of an array with
//     uniqueItems (a rule per set of them).
//   - maxContainsStates (512): the counts an array with contains keeps.
//   - maxObjectStates (4096): the states of an object counting its
//     properties (maxProperties).
//   - maxMultiples (256), maxModulus (1000): multipleOf's multiples
//     written out, and the remainders of its automaton.
//   - maxExclusions (8): the branches one oneOf branch is taken without;
//     maxSubsetBranches (4): the anyOf branches split by which hold, for
//     unevaluatedProperties.
//   - maxDistribute (64): how deeply combinators nest as they are
//     distributed, and maxDistributions (32,768) how many branches are
//     in all; maxMergeDepth (256) and maxMergeWork (2^20): allOf and
//     $refs followed in place, and the steps of intersecting.
//   - maxSchemaNodes (20,000): the schema objects parsed; maxLowered
//     (80,000): the Nodes lowered.
//   - Counted as they are built, against grammar.MaxInst: the grammar
//     nodes made (maxGrammarNodes, kept or thrown away), the numeric
//     ranges' instructions (countRange), and a required list's names.
