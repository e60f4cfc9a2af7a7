// Package fault is trueup's one error taxonomy. Every error a user can act on has one of five
// kinds, and the edges map kinds — never packages' own errors — to answers, in one place each:
// the server to an HTTP status (server/errors.go), the CLI to an exit code (cmd/trueup/main.go).
//
//	kind      what it means                                        HTTP  exit
//	NotFound  the named rule, backfill, table, version or notice   404   2
//	Invalid   bad input: a file, a flag, a body, a blocked plan    422   2
//	Conflict  something else holds it, or it changed since shown   409   1
//	Refused   a rule of the tool said no as asked (four eyes)      403   1
//	Failed    a check or validation ran and did not pass           422   1
//
// An error of no kind is trueup's own failure: 500, exit 1, logged once at the edge.
//
// The message is the sentence the user reads; the edges show it as the error carries it.
package fault

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is the class of an error that decides how an edge answers it.
type Kind int

const (
	None Kind = iota // not one of ours: an unexpected failure
	NotFound
	Invalid
	Conflict
	Refused
	Failed
)

var names = [...]string{"", "not found", "invalid", "conflict", "refused", "failed"}

func (k Kind) String() string {
	if int(k) < len(names) {
		return names[k]
	}
	return ""
}

// Parse returns the kind String gives, or None.
func Parse(s string) Kind {
	for k, n := range names {
		if n == s && s != "" {
			return Kind(k)
		}
	}
	return None
}

// kindError is the sentinel of a kind: errors.Is(err, fault.ErrNotFound) is how a caller asks.
type kindError struct{ k Kind }

func (e *kindError) Error() string { return e.k.String() }

// The sentinels, one per kind.
var (
	ErrNotFound error = &kindError{NotFound}
	ErrInvalid  error = &kindError{Invalid}
	ErrConflict error = &kindError{Conflict}
	ErrRefused  error = &kindError{Refused}
	ErrFailed   error = &kindError{Failed}
)

// Sentinel returns the kind's sentinel.
func (k Kind) Sentinel() error {
	switch k {
	case NotFound:
		return ErrNotFound
	case Invalid:
		return ErrInvalid
	case Conflict:
		return ErrConflict
	case Refused:
		return ErrRefused
	case Failed:
		return ErrFailed
	}
	return nil
}

// E is an error of a kind whose text is the sentence the user reads.
type E struct {
	Kind Kind
	Msg  string
	Err  error // the cause, if any (for the log; Msg already says what the user needs)
}

func (e *E) Error() string { return e.Msg }
func (e *E) Unwrap() error { return e.Err }

// Is makes errors.Is(err, the kind's sentinel) true.
func (e *E) Is(target error) bool { return target == e.Kind.Sentinel() }

// New is an error of kind k saying the formatted sentence. %w in format wraps as fmt.Errorf does.
func New(k Kind, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &E{Kind: k, Msg: err.Error(), Err: errors.Unwrap(err)}
}

// Mark gives err kind k, keeping its text.
func Mark(k Kind, err error) error {
	if err == nil {
		return nil
	}
	return &E{Kind: k, Msg: err.Error(), Err: err}
}

// Named is a package's own sentinel of kind k, kept where callers tell it apart from the
// kind's other errors (backfill's ErrBlocked is Invalid, and more): errors.Is matches both it and
// the kind's sentinel.
func Named(k Kind, text string) error { return &named{k: k, text: text} }

type named struct {
	k    Kind
	text string
}

func (n *named) Error() string        { return n.text }
func (n *named) Is(target error) bool { return target == n.k.Sentinel() }
func (n *named) kind() Kind           { return n.k }
func (e *E) kind() Kind               { return e.Kind }
func (e *kindError) kind() Kind       { return e.k }

type kinded interface{ kind() Kind }

// Of returns the kind of err: the first kind found along its chain (an error of a kind, or one
// whose Is method matches a kind's sentinel), None for errors of no kind.
func Of(err error) Kind {
	for err != nil {
		if k, ok := err.(kinded); ok {
			return k.kind()
		}
		if x, ok := err.(interface{ Is(error) bool }); ok {
			for k := NotFound; k <= Failed; k++ {
				if x.Is(k.Sentinel()) {
					return k
				}
			}
		}
		switch x := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				if k := Of(e); k != None {
					return k
				}
			}
			return None
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		default:
			return None
		}
	}
	return None
}

// Message is the sentence an edge shows for err: the text of the first error of a kind along its
// chain (what the package that knew the cause wrote for the user, without the operation
// prefixes wrapped around it for the log), else err's whole text.
func Message(err error) string {
	for e := err; e != nil; {
		if x, ok := e.(*E); ok {
			return x.Msg
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return err.Error()
}

// FirstLine is the first line of a message: engines' errors often go on with a stack trace or
// the query, which a one-line cause leaves out.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// OneLine is err's whole message on one line, each run of spaces and newlines one space: for
// places that show one line per problem.
func OneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
