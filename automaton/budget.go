package automaton

import (
	"fmt"
	"math/bits"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/earley"
)

// Generation under a token budget: a matcher knows a number of tokens
// that is enough to finish its output (TokensToEnd), and can restrict a
// mask to the tokens that still leave room to finish (FillMaskWithin).
// The count is the length of a real way to finish: a shortest path
// through the grammar where a byte costs one token (every byte value is
// a token of the vocabularies reins loads; a byte class no single-byte
// token spells is not a way), and where the grammar runs straight
// through byte instructions, literal or classes ("name": or [0-9]{4}),
// one token that spells several of them costs one. It is the true
// fewest but where the shortest way crosses a branch or a rule's end
// inside one token, never less than a way that exists.

// maxSpell bounds the run of byte instructions a token may cross in one
// step when pricing, and spellBudget the trie nodes a pricing walk from
// one instruction visits: longer tokens are rare, and a run of wide
// classes would otherwise walk much of the trie from every instruction.
const (
	maxSpell    = 32
	spellBudget = 512
)

// costs returns the automaton's token prices, building them once.
func (a *Automaton) costs() *earley.Costs {
	a.costsOnce.Do(func() {
		a.tokenCosts = a.priceTokens()
		a.costsBytes.Store(a.tokenCosts.Bytes())
	})
	return a.tokenCosts
}

// priceTokens prices the automaton's program in tokens of its
// vocabulary.
func (a *Automaton) priceTokens() *earley.Costs {
	prog, t := a.prog, a.trie
	single := a.singles
	byteCost := func(pc int) int32 {
		in := prog.Inst[pc]
		for c := int(in.Lo); c <= int(in.Hi); c++ {
			if single[c>>6]&(1<<(c&63)) != 0 {
				return 1
			}
		}
		return earley.NoCost
	}
	var shortcuts []earley.Edge
	var run []grammar.Inst
	var ends []uint32 // ends[i]: the instruction after run[i]
	for pc, in := range prog.Inst {
		if in.Op != grammar.InstByte {
			continue
		}
		run, ends = run[:0], ends[:0]
		for at := uint32(pc); len(run) < maxSpell && prog.Inst[at].Op == grammar.InstByte; at = prog.Inst[at].Out {
			run = append(run, prog.Inst[at])
			ends = append(ends, prog.Inst[at].Out)
		}
		if len(run) < 2 {
			continue
		}
		t.spellRanges(run, spellBudget, func(l int) {
			shortcuts = append(shortcuts, earley.Edge{From: uint32(pc), To: ends[l-1], Cost: 1})
		})
	}
	return earley.NewCosts(prog, byteCost, shortcuts)
}

// TokensToEnd returns a number of tokens that is enough to finish the
// output from here: 0 when it may end now (or has ended), and a large
// number (earley.NoCost) when no way to finish is known.
func (m *Matcher) TokensToEnd() int {
	if m.ended {
		return 0
	}
	m.memo.Mark(m.p.Len())
	return int(m.p.CostToEnd(m.a.costs(), &m.memo))
}

// FillMaskWithin is FillMask keeping only the tokens after which the
// output can still finish (by TokensToEnd) in budget-1 more tokens.
// It checks every allowed token, so it costs about a walk of the whole
// mask: use it when the budget is close. That walk's parsing is bounded,
// at MaskWork plus withinWork per allowed token: a grammar that waits
// for thousands of token terminals at once would take seconds per
// token, and fails the step instead with an error wrapping
// earley.ErrWorkBudget.
func (m *Matcher) FillMaskWithin(mask []uint32, budget int) error {
	if err := m.FillMask(mask); err != nil || m.ended {
		return err
	}
	allowed := 0
	for _, w := range mask[:MaskWords(m.a.vocab.Len())] {
		allowed += bits.OnesCount32(w)
	}
	limit := m.a.maskWork + int64(allowed)*withinWork
	m.p.SetWorkLimit(m.p.Work() + limit)
	defer m.p.SetWorkLimit(0)
	costs := m.a.costs()
	m.memo.Mark(m.p.Len() + 1) // the walk only pushes above the current step
	v := m.a.vocab
	at := m.p.Len()
	for w, word := range mask[:MaskWords(v.Len())] {
		for word != 0 {
			t := w*32 + bits.TrailingZeros32(word)
			word &= word - 1
			if v.IsEOG(t) {
				continue // allowed only where the output may end
			}
			m.tok = t
			ok := m.p.AdvanceToken(m.text(t), m.inSet)
			if err := m.p.Err(); err != nil {
				return fmt.Errorf("automaton: the mask's check of each of its %d tokens against the budget passed its parsing budget of %d units (MaskWork and %d a token): %w", allowed, limit, withinWork, err)
			}
			if ok {
				ok = int(m.p.CostToEnd(costs, &m.memo)) <= budget-1
				m.p.Truncate(at)
			}
			if !ok {
				mask[w] &^= 1 << (t % 32)
			}
		}
	}
	return nil
}

// withinWork is the parsing work FillMaskWithin allows per allowed
// token beside MaskWork. An ordinary grammar takes about 75 units a
// token for each rule open at once (a string that may be one of eight
// patterns, eight): Llama-3's 128,256 tokens under such a string took
// 72M units, past MaskWork alone. Thousands of token terminals waiting
// at once take over 10,000.
const withinWork = 4096
