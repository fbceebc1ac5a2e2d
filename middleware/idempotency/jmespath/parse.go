package jmespath

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The lexer and parser follow jmespath.py 1.1 (which Powertools Python
// uses), token for token; Powertools TypeScript's are a port of it. Where
// the two runtimes read an expression differently, Compile refuses it (see
// compileError and the calls of parse with tsFilterPower).

// tokenType names a token as jmespath.py does.
type tokenType uint8

const (
	tEOF tokenType = iota
	tUnquoted
	tQuoted
	tLiteral
	tRbracket
	tRparen
	tComma
	tRbrace
	tNumber
	tCurrent
	tExpref
	tColon
	tPipe
	tOr
	tAnd
	tEq
	tGt
	tLt
	tGte
	tLte
	tNe
	tFlatten
	tStar
	tFilter
	tDot
	tNot
	tLbrace
	tLbracket
	tLparen
)

var tokenNames = [...]string{
	tEOF: "end of expression", tUnquoted: "identifier", tQuoted: "quoted identifier", tLiteral: "literal",
	tRbracket: "]", tRparen: ")", tComma: ",", tRbrace: "}", tNumber: "number", tCurrent: "@", tExpref: "&",
	tColon: ":", tPipe: "|", tOr: "||", tAnd: "&&", tEq: "==", tGt: ">", tLt: "<", tGte: ">=", tLte: "<=",
	tNe: "!=", tFlatten: "[]", tStar: "*", tFilter: "[?", tDot: ".", tNot: "!", tLbrace: "{", tLbracket: "[",
	tLparen: "(",
}

func (t tokenType) String() string { return tokenNames[t] }

// bindingPower is jmespath.py's BINDING_POWER.
var bindingPower = [...]int{
	tPipe: 1, tOr: 2, tAnd: 3, tEq: 5, tGt: 5, tLt: 5, tGte: 5, tLte: 5, tNe: 5, tFlatten: 9,
	tStar: 20, tFilter: 21, tDot: 40, tNot: 45, tLbrace: 50, tLbracket: 55, tLparen: 60,
}

// projectionStop is jmespath.py's _PROJECTION_STOP.
const projectionStop = 10

// maxIndex bounds the numbers of index and slice expressions: Powertools
// TypeScript reads them with parseInt, exact only up to 2^53, Python exactly.
const maxIndex = 1 << 31

type token struct {
	typ   tokenType
	text  string // an identifier's name, a raw string literal's value, a JSON literal's text
	num   int    // a number token's value
	start int
}

// compileError is an error of Compile: the expression's text is the
// caller's configuration, not message content, so it may be quoted.
type compileError struct {
	pos int
	msg string
}

func (e *compileError) Error() string { return fmt.Sprintf("at offset %d: %s", e.pos, e.msg) }

func errAt(pos int, format string, args ...any) error {
	return &compileError{pos: pos, msg: fmt.Sprintf(format, args...)}
}

// lex splits expr into tokens as jmespath.py's lexer does, refusing what
// the two runtimes' lexers read differently.
func lex(expr string) ([]token, error) {
	if expr == "" {
		return nil, errAt(0, "empty expression")
	}
	if !utf8.ValidString(expr) {
		return nil, errAt(0, "the expression is not valid UTF-8")
	}
	var toks []token
	i := 0
	for i < len(expr) {
		c := expr[i]
		start := i
		switch {
		case strings.IndexByte(" \t\n\r", c) >= 0:
			i++
		case c == '.' || c == '*' || c == ']' || c == ',' || c == ':' || c == '@' || c == '(' || c == ')' || c == '{' || c == '}':
			toks = append(toks, token{typ: simpleToken(c), start: start})
			i++
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			for i++; i < len(expr) && (expr[i] == '_' || expr[i] >= 'a' && expr[i] <= 'z' || expr[i] >= 'A' && expr[i] <= 'Z' || expr[i] >= '0' && expr[i] <= '9'); i++ {
			}
			toks = append(toks, token{typ: tUnquoted, text: expr[start:i], start: start})
		case c == '[':
			i++
			switch {
			case i < len(expr) && expr[i] == ']':
				i++
				toks = append(toks, token{typ: tFlatten, start: start})
			case i < len(expr) && expr[i] == '?':
				i++
				toks = append(toks, token{typ: tFilter, start: start})
			default:
				toks = append(toks, token{typ: tLbracket, start: start})
			}
		case c == '\'':
			lexeme, end, err := consumeUntil(expr, i, '\'')
			if err != nil {
				return nil, err
			}
			// Python replaces every \' and TypeScript the first only.
			if strings.Count(lexeme, `\'`) > 1 {
				return nil, errAt(start, `a raw string literal with more than one \' (Powertools Python and TypeScript read it differently)`)
			}
			toks = append(toks, token{typ: tLiteral, text: strings.Replace(lexeme, `\'`, `'`, 1), start: start, num: rawString})
			i = end
		case c == '`':
			lexeme, end, err := consumeUntil(expr, i, '`')
			if err != nil {
				return nil, err
			}
			if strings.Count(lexeme, "\\`") > 1 {
				return nil, errAt(start, "a JSON literal with more than one \\` (Powertools Python and TypeScript read it differently)")
			}
			toks = append(toks, token{typ: tLiteral, text: strings.Replace(lexeme, "\\`", "`", 1), start: start, num: jsonLiteral})
			i = end
		case c >= '0' && c <= '9' || c == '-':
			for i++; i < len(expr) && expr[i] >= '0' && expr[i] <= '9'; i++ {
			}
			text := expr[start:i]
			if text == "-" {
				return nil, errAt(start, "unknown token '-'")
			}
			n, err := strconv.Atoi(text)
			if err != nil || n > maxIndex || n < -maxIndex {
				return nil, errAt(start, "number %s is beyond ±2^31", text)
			}
			toks = append(toks, token{typ: tNumber, num: n, start: start})
		case c == '"':
			lexeme, end, err := consumeUntil(expr, i, '"')
			if err != nil {
				return nil, err
			}
			name, err := decodeLiteralString(`"` + lexeme + `"`)
			if err != nil {
				return nil, errAt(start, "quoted identifier: %v", err)
			}
			toks = append(toks, token{typ: tQuoted, text: name, start: start})
			i = end
		case c == '|' || c == '&' || c == '<' || c == '>' || c == '!':
			second, match, other := pairToken(c)
			i++
			if i < len(expr) && expr[i] == second {
				i++
				toks = append(toks, token{typ: match, start: start})
			} else {
				toks = append(toks, token{typ: other, start: start})
			}
		case c == '=':
			if i+1 < len(expr) && expr[i+1] == '=' {
				toks = append(toks, token{typ: tEq, start: start})
				i += 2
			} else {
				return nil, errAt(start, "unknown token '='")
			}
		default:
			r, _ := utf8.DecodeRuneInString(expr[i:])
			return nil, errAt(start, "unknown token %q", r)
		}
	}
	return append(toks, token{typ: tEOF, start: len(expr)}), nil
}

// The kinds of tLiteral tokens, in token.num.
const (
	rawString   = 1
	jsonLiteral = 2
)

// pairToken is jmespath.py's _match_or_else for c: the second character
// that makes a two-character token, that token, and c's token alone.
func pairToken(c byte) (second byte, match, other tokenType) {
	switch c {
	case '|':
		return '|', tOr, tPipe
	case '&':
		return '&', tAnd, tExpref
	case '<':
		return '=', tLte, tLt
	case '>':
		return '=', tGte, tGt
	}
	return '=', tNe, tNot
}

func simpleToken(c byte) tokenType {
	switch c {
	case '.':
		return tDot
	case '*':
		return tStar
	case ']':
		return tRbracket
	case ',':
		return tComma
	case ':':
		return tColon
	case '@':
		return tCurrent
	case '(':
		return tLparen
	case ')':
		return tRparen
	case '{':
		return tLbrace
	}
	return tRbrace
}

// consumeUntil is jmespath.py's _consume_until: the text after expr[i] up
// to the next unescaped delimiter, with backslashes kept, and the index
// after the delimiter.
func consumeUntil(expr string, i int, delim byte) (string, int, error) {
	start := i
	var b strings.Builder
	for i++; i < len(expr) && expr[i] != delim; i++ {
		if expr[i] == '\\' {
			b.WriteByte('\\')
			if i++; i >= len(expr) {
				break
			}
		}
		b.WriteByte(expr[i])
	}
	if i >= len(expr) {
		return "", 0, errAt(start, "unclosed %c", delim)
	}
	return b.String(), i + 1, nil
}

// nodeType names an AST node as jmespath.py does.
type nodeType uint8

const (
	nField nodeType = iota
	nSubexpression
	nIndexExpression
	nPipe
	nComparator
	nCurrent
	nIdentity
	nExpref
	nFunction
	nFilterProjection
	nFlatten
	nIndex
	nSlice
	nLiteral
	nMultiSelectHash
	nMultiSelectList
	nOr
	nAnd
	nNot
	nProjection
	nValueProjection
)

// node is an AST node. Its fields are those of jmespath.py's dicts.
type node struct {
	typ      nodeType
	name     string    // field, function, multi-select hash key names (keys), comparator
	op       tokenType // comparator
	index    int
	slice    [3]int
	hasSlice [3]bool
	lit      value
	keys     []string // multi-select hash keys, one per child
	children []*node
	fn       *function
}

// equal reports whether two ASTs are the same.
func (n *node) equal(m *node) bool {
	if n == nil || m == nil {
		return n == m
	}
	if n.typ != m.typ || n.name != m.name || n.op != m.op || n.index != m.index || n.slice != m.slice ||
		n.hasSlice != m.hasSlice || n.lit.k != m.lit.k || n.lit.s != m.lit.s || len(n.children) != len(m.children) ||
		strings.Join(n.keys, "\x00") != strings.Join(m.keys, "\x00") {
		return false
	}
	for i := range n.children {
		if !n.children[i].equal(m.children[i]) {
			return false
		}
	}
	return true
}

// parser is jmespath.py's Parser.
type parser struct {
	toks []token
	i    int
	// filterPower is the binding power with which a filter's right-hand
	// side is parsed: jmespath.py uses the filter's (21), Powertools
	// TypeScript the flatten's (9).
	filterPower int
}

const tsFilterPower = 9

func parse(expr string, filterPower int) (*node, error) {
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, filterPower: filterPower}
	n, err := p.expression(0)
	if err != nil {
		return nil, err
	}
	if p.cur() != tEOF {
		return nil, p.unexpected()
	}
	return n, nil
}

func (p *parser) cur() tokenType            { return p.toks[p.i].typ }
func (p *parser) lookahead(n int) tokenType { return p.toks[min(p.i+n, len(p.toks)-1)].typ }
func (p *parser) tok() token                { return p.toks[p.i] }
func (p *parser) advance() {
	if p.i < len(p.toks)-1 {
		p.i++
	}
}

func (p *parser) unexpected() error {
	t := p.tok()
	if t.typ == tEOF {
		return errAt(t.start, "incomplete expression")
	}
	return errAt(t.start, "unexpected token %s", t.typ)
}

func (p *parser) match(t tokenType) error {
	if p.cur() != t {
		if p.cur() == tEOF {
			return errAt(p.tok().start, "incomplete expression: expecting %s", t)
		}
		return errAt(p.tok().start, "expecting %s, got %s", t, p.cur())
	}
	p.advance()
	return nil
}

func (p *parser) expression(power int) (*node, error) {
	t := p.tok()
	p.advance()
	left, err := p.nud(t)
	if err != nil {
		return nil, err
	}
	for power < bindingPower[p.cur()] {
		t := p.cur()
		p.advance()
		if left, err = p.led(t, left); err != nil {
			return nil, err
		}
	}
	return left, nil
}

func (p *parser) nud(t token) (*node, error) {
	switch t.typ {
	case tLiteral:
		v, err := literal(t)
		if err != nil {
			return nil, err
		}
		return &node{typ: nLiteral, lit: v}, nil
	case tUnquoted:
		return &node{typ: nField, name: t.text}, nil
	case tQuoted:
		if p.cur() == tLparen {
			return nil, errAt(p.tok().start, "a quoted identifier cannot name a function")
		}
		return &node{typ: nField, name: t.text}, nil
	case tStar:
		right := &node{typ: nIdentity}
		if p.cur() != tRbracket {
			var err error
			if right, err = p.projectionRHS(bindingPower[tStar]); err != nil {
				return nil, err
			}
		}
		return &node{typ: nValueProjection, children: []*node{{typ: nIdentity}, right}}, nil
	case tFilter:
		return p.led(tFilter, &node{typ: nIdentity})
	case tLbrace:
		return p.multiSelectHash()
	case tLparen:
		n, err := p.expression(0)
		if err != nil {
			return nil, err
		}
		return n, p.match(tRparen)
	case tFlatten:
		right, err := p.projectionRHS(bindingPower[tFlatten])
		if err != nil {
			return nil, err
		}
		return &node{typ: nProjection, children: []*node{{typ: nFlatten, children: []*node{{typ: nIdentity}}}, right}}, nil
	case tNot, tExpref: // !expr, &expr
		n, err := p.expression(bindingPower[t.typ])
		if err != nil {
			return nil, err
		}
		typ := nNot
		if t.typ == tExpref {
			typ = nExpref
		}
		return &node{typ: typ, children: []*node{n}}, nil
	case tLbracket:
		switch {
		case p.cur() == tNumber || p.cur() == tColon:
			right, err := p.indexExpression()
			if err != nil {
				return nil, err
			}
			return p.projectIfSlice(&node{typ: nIdentity}, right)
		case p.cur() == tStar && p.lookahead(1) == tRbracket:
			p.advance()
			p.advance()
			right, err := p.projectionRHS(bindingPower[tStar])
			if err != nil {
				return nil, err
			}
			return &node{typ: nProjection, children: []*node{{typ: nIdentity}, right}}, nil
		}
		return p.multiSelectList()
	case tCurrent:
		return &node{typ: nCurrent}, nil
	case tEOF:
		return nil, errAt(t.start, "incomplete expression")
	}
	return nil, errAt(t.start, "unexpected token %s", t.typ)
}

func (p *parser) led(t tokenType, left *node) (*node, error) {
	switch t {
	case tDot:
		if p.cur() != tStar {
			right, err := p.dotRHS(bindingPower[tDot])
			if err != nil {
				return nil, err
			}
			if left.typ == nSubexpression {
				left.children = append(left.children, right)
				return left, nil
			}
			return &node{typ: nSubexpression, children: []*node{left, right}}, nil
		}
		p.advance()
		right, err := p.projectionRHS(bindingPower[tDot])
		if err != nil {
			return nil, err
		}
		return &node{typ: nValueProjection, children: []*node{left, right}}, nil
	case tPipe, tOr, tAnd:
		right, err := p.expression(bindingPower[t])
		if err != nil {
			return nil, err
		}
		typ := map[tokenType]nodeType{tPipe: nPipe, tOr: nOr, tAnd: nAnd}[t]
		return &node{typ: typ, children: []*node{left, right}}, nil
	case tLparen:
		if left.typ != nField {
			return nil, errAt(p.toks[max(p.i-2, 0)].start, "invalid function name")
		}
		var args []*node
		for p.cur() != tRparen {
			arg, err := p.expression(0)
			if err != nil {
				return nil, err
			}
			if p.cur() == tComma {
				p.advance()
			}
			args = append(args, arg)
		}
		p.advance()
		return &node{typ: nFunction, name: left.name, children: args}, nil
	case tFilter:
		cond, err := p.expression(0)
		if err != nil {
			return nil, err
		}
		if err := p.match(tRbracket); err != nil {
			return nil, err
		}
		right := &node{typ: nIdentity}
		if p.cur() != tFlatten {
			if right, err = p.projectionRHS(p.filterPower); err != nil {
				return nil, err
			}
		}
		return &node{typ: nFilterProjection, children: []*node{left, right, cond}}, nil
	case tEq, tNe, tGt, tGte, tLt, tLte:
		right, err := p.expression(bindingPower[t])
		if err != nil {
			return nil, err
		}
		return &node{typ: nComparator, op: t, children: []*node{left, right}}, nil
	case tFlatten:
		right, err := p.projectionRHS(bindingPower[tFlatten])
		if err != nil {
			return nil, err
		}
		return &node{typ: nProjection, children: []*node{{typ: nFlatten, children: []*node{left}}, right}}, nil
	case tLbracket:
		if p.cur() == tNumber || p.cur() == tColon {
			right, err := p.indexExpression()
			if err != nil {
				return nil, err
			}
			if left.typ == nIndexExpression {
				left.children = append(left.children, right)
				return left, nil
			}
			return p.projectIfSlice(left, right)
		}
		if err := p.match(tStar); err != nil {
			return nil, err
		}
		if err := p.match(tRbracket); err != nil {
			return nil, err
		}
		right, err := p.projectionRHS(bindingPower[tStar])
		if err != nil {
			return nil, err
		}
		return &node{typ: nProjection, children: []*node{left, right}}, nil
	}
	return nil, p.unexpected()
}

func (p *parser) indexExpression() (*node, error) {
	if p.lookahead(0) == tColon || p.lookahead(1) == tColon {
		return p.sliceExpression()
	}
	n := &node{typ: nIndex, index: p.tok().num}
	p.advance()
	return n, p.match(tRbracket)
}

func (p *parser) sliceExpression() (*node, error) {
	n := &node{typ: nSlice}
	part := 0
	for p.cur() != tRbracket && part < 3 {
		switch p.cur() {
		case tColon:
			if part++; part == 3 {
				return nil, errAt(p.tok().start, "syntax error in a slice")
			}
			p.advance()
		case tNumber:
			n.slice[part], n.hasSlice[part] = p.tok().num, true
			p.advance()
		default:
			return nil, errAt(p.tok().start, "syntax error in a slice")
		}
	}
	if n.hasSlice[2] && n.slice[2] == 0 {
		return nil, errAt(p.tok().start, "a slice step cannot be 0")
	}
	return n, p.match(tRbracket)
}

func (p *parser) projectIfSlice(left, right *node) (*node, error) {
	idx := &node{typ: nIndexExpression, children: []*node{left, right}}
	if right.typ != nSlice {
		return idx, nil
	}
	rhs, err := p.projectionRHS(bindingPower[tStar])
	if err != nil {
		return nil, err
	}
	return &node{typ: nProjection, children: []*node{idx, rhs}}, nil
}

func (p *parser) multiSelectList() (*node, error) {
	n := &node{typ: nMultiSelectList}
	for {
		e, err := p.expression(0)
		if err != nil {
			return nil, err
		}
		n.children = append(n.children, e)
		if p.cur() == tRbracket {
			break
		}
		if err := p.match(tComma); err != nil {
			return nil, err
		}
	}
	return n, p.match(tRbracket)
}

func (p *parser) multiSelectHash() (*node, error) {
	n := &node{typ: nMultiSelectHash}
	for {
		t := p.tok()
		if t.typ != tQuoted && t.typ != tUnquoted {
			return nil, p.unexpectedOr("an identifier")
		}
		if t.text == "__proto__" {
			// TypeScript's collected["__proto__"] = … sets the object's
			// prototype instead of a member.
			return nil, errAt(t.start, "a multi-select hash key __proto__ (Powertools TypeScript does not make it a member)")
		}
		p.advance()
		if err := p.match(tColon); err != nil {
			return nil, err
		}
		e, err := p.expression(0)
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, t.text)
		n.children = append(n.children, e)
		if p.cur() == tComma {
			p.advance()
		} else if p.cur() == tRbrace {
			p.advance()
			break
		}
	}
	return n, nil
}

func (p *parser) unexpectedOr(what string) error {
	if p.cur() == tEOF {
		return errAt(p.tok().start, "incomplete expression: expecting %s", what)
	}
	return errAt(p.tok().start, "expecting %s, got %s", what, p.cur())
}

func (p *parser) projectionRHS(power int) (*node, error) {
	switch {
	case bindingPower[p.cur()] < projectionStop:
		return &node{typ: nIdentity}, nil
	case p.cur() == tLbracket, p.cur() == tFilter:
		return p.expression(power)
	case p.cur() == tDot:
		p.advance()
		return p.dotRHS(power)
	}
	return nil, p.unexpected()
}

func (p *parser) dotRHS(power int) (*node, error) {
	switch p.cur() {
	case tQuoted, tUnquoted, tStar:
		return p.expression(power)
	case tLbracket:
		p.advance()
		return p.multiSelectList()
	case tLbrace:
		p.advance()
		return p.multiSelectHash()
	}
	return nil, p.unexpectedOr("an identifier, [ or {")
}

// literal is the value of a literal token: a raw string literal's text, or
// a JSON literal read by the package's JSON rules (jmespath.py's fallback
// that reads invalid JSON as a string is refused: TypeScript refuses it).
func literal(t token) (value, error) {
	if t.num == rawString {
		if !utf8.ValidString(t.text) {
			return value{}, errAt(t.start, "a raw string literal that is not valid UTF-8")
		}
		return str(t.text), nil
	}
	text := trimJSONSpace(t.text)
	if err := (*evaluator)(nil).checkJSON(text); err != nil {
		return value{}, errAt(t.start, "JSON literal: %v", err)
	}
	return rawValue(text), nil
}

// decodeLiteralString decodes a quoted JSON string of the expression.
func decodeLiteralString(quoted string) (string, error) {
	if err := (*evaluator)(nil).checkJSON(quoted); err != nil {
		return "", err
	}
	if quoted[0] != '"' {
		return "", errors.New("not a string")
	}
	return decodeString(quoted), nil
}
