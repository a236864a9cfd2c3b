// Package program runs programs: literal text with holes that a model
// fills, each hole constrained (a regex, a GBNF grammar, a JSON Schema,
// any JSON) or free, or a choice among options; every capture comes back
// with its tokens, its log-probability under the model and under the
// constraint, and, for a choice, the probability of every option.
//
// A program is written as a template (Parse, ParseFile; see Parse for
// the syntax) or built in Go (NewBuilder); the template format is sugar
// over the builder's nodes. Parsing checks everything that can be
// checked without a model: the syntax, each tag's arguments, capture
// names, and each hole's constraint, compiled, with grammar and schema
// files read only from the template's folder. Every mistake is an *Error
// with its position and kind.
//
// # How a program runs
//
// Holes are filled in order, one model call each, with everything before
// the hole as the prompt: literal text is never sampled. The boundary
// before a hole is healed (reins.Options.Heal): the prompt's last token
// is taken back and the hole's first token spells it again. The boundary
// after a gen is handled by its constraint: the hole's language followed
// by the start of the literal text after it (the longest vocabulary token
// that begins it), compiled into one constraint with reins.FromGrammar,
// so that the model ends the value where it would go on with that text,
// with a token across the boundary if it likes. A select is
// reins.Model.Choose in context, healed, with the literal text after it
// to the end of its line as ChooseOptions.Then.
//
// Role blocks ({{#user}}...{{/user}}) are written in a chat.Format: the
// model's (chat.For), or RunOptions.Chat. Formats whose markers are
// special tokens need a backend that tokenizes them as such
// (chat.SpecialTokens); Run checks that each marker is one token.
package program
