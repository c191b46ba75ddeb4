package mechanism

import "github.com/dpbandit/dpbandit/internal/liberr"

// Error is the type of the package's errors (see liberr.Error).
type Error = liberr.Error

// inputf makes the package's errors of input refused (mechanism.ErrInput),
// as fmt.Errorf formats.
func inputf(format string, a ...any) error { return liberr.Input("mechanism", format, a...) }
