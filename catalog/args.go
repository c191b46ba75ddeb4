package catalog

import (
	"fmt"
)

// Args are an algorithm's parameter values as its catalogue entry reads
// them: by name, through F, never by indexing a map, so that a name the
// entry does not declare (a misspelling in the entry) is caught instead
// of reading 0. User input never reaches such a name: Parse refuses the
// parameters an algorithm does not declare.
type Args struct {
	algo   string
	values map[string]float64
}

// ErrUndeclared is an entry's read of a parameter its algorithm does not
// declare: a fault in the catalogue, returned by the constructors
// (NewPolicy, NewContextual, NewBatched, NewLearner) as an error.
var ErrUndeclared = errorf("a parameter the algorithm does not declare")

// undeclared is F's panic value, which the constructors turn into an
// error wrapping ErrUndeclared.
type undeclared struct{ algo, name string }

func (u undeclared) Error() string {
	return "catalog: " + u.Message()
}

// Message is the error without the package's name.
func (u undeclared) Message() string {
	return fmt.Sprintf("%s reads parameter %q, which it does not declare", u.algo, u.name)
}

func (u undeclared) Unwrap() error { return ErrUndeclared }

// F returns the value of the parameter name. A name the algorithm does
// not declare is a fault of its entry: F panics with it, and the
// constructors return it as an error wrapping ErrUndeclared (the tests
// build every entry, so that such a fault fails them).
func (a Args) F(name string) float64 {
	v, ok := a.values[name]
	if !ok {
		panic(undeclared{a.algo, name})
	}
	return v
}

// Args returns the spec's parameter values for its entry's functions.
func (s Spec) Args() Args { return Args{algo: s.Name, values: s.Values} }

// recoverUndeclared turns F's panic into *err; other panics go on.
func recoverUndeclared(err *error) {
	if r := recover(); r != nil {
		u, ok := r.(undeclared)
		if !ok {
			panic(r)
		}
		*err = u
	}
}
