package privacy

import "github.com/dpbandit/dpbandit/internal/liberr"

// Error is the type of the package's errors (see liberr.Error).
type Error = liberr.Error

// errorf makes the package's errors, as fmt.Errorf formats.
func errorf(format string, a ...any) error { return liberr.New("privacy", format, a...) }
