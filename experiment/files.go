package experiment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Out is an output folder being written. Its files go into a fresh
// temporary folder beside it (Temp), which Commit renames into place, so
// that no file of an earlier result (a stale plot) and no half-written
// or empty folder is ever left; Abort removes it.
type Out struct {
	// Dir is where the result goes; Temp is where it is written.
	Dir, Temp string
	force     bool
	created   []string // parent folders PrepareOut created, deepest last
}

// resultFiles mark a folder as a dpbandit result, which --force may
// replace.
var resultFiles = []string{"summary.json", "index.html", "partial.json", "audit.json"}

// isResult reports whether dir holds a dpbandit result (or shards of one).
func isResult(dir string) bool {
	for _, f := range resultFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "shard-*-of-*"))
	return len(shards) > 0
}

// PrepareOut checks that dir can take a result and creates the temporary
// folder it is written into, so that a bad --out fails before any
// computation. An existing result in dir is refused unless force (then
// Commit replaces it); a non-empty folder that is not a result is
// refused in any case.
func PrepareOut(dir string, force bool) (*Out, error) {
	if dir == "" {
		return nil, fieldErr("out", "is empty: name a directory")
	}
	dir = filepath.Clean(dir)
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		switch {
		case !isResult(dir):
			return nil, fieldErr("out", "%s is a folder that holds no dpbandit result: choose another --out", dir)
		case !force:
			return nil, fieldErr("out", "%s holds a result already: give --force to replace it, or another --out", dir)
		}
	} else if err == nil {
		// an empty folder: Commit replaces it
	} else if st, serr := os.Stat(dir); serr == nil && !st.IsDir() {
		return nil, fieldErr("out", "cannot create %s: not a directory", dir)
	}
	o := &Out{Dir: dir, force: force}
	parent := filepath.Dir(dir)
	for p := parent; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || p == filepath.Dir(p) {
			break
		}
		o.created = append([]string{p}, o.created...)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fieldErr("out", "cannot create %s: %v", dir, unwrapPath(err))
	}
	temp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-*")
	if err != nil {
		o.removeCreated()
		return nil, fieldErr("out", "cannot create %s: %v", dir, unwrapPath(err))
	}
	o.Temp = temp
	return o, nil
}

// Commit puts the result in place: the temporary folder renamed to Dir,
// whose earlier content (a result, with force) is removed.
func (o *Out) Commit() error {
	if _, err := os.Stat(o.Dir); err == nil {
		old, err := os.MkdirTemp(filepath.Dir(o.Dir), "."+filepath.Base(o.Dir)+".old-*")
		if err != nil {
			return err
		}
		if err := os.Remove(old); err != nil {
			return err
		}
		if err := os.Rename(o.Dir, old); err != nil {
			return err
		}
		defer os.RemoveAll(old)
	}
	return os.Rename(o.Temp, o.Dir)
}

// Abort removes the temporary folder and the parents PrepareOut created.
func (o *Out) Abort() {
	os.RemoveAll(o.Temp)
	o.removeCreated()
}

func (o *Out) removeCreated() {
	for i := len(o.created) - 1; i >= 0; i-- {
		os.Remove(o.created[i]) // only if empty
	}
}

// unwrapPath returns the cause of a path error without the repeated path.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// writeFile writes path atomically: into a temporary file of the same
// directory, renamed over path once complete, so that an interrupted or
// failed write never leaves a partial or empty file.
func writeFile(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// writeBytes writes b to path atomically.
func writeBytes(path string, b []byte) error {
	return writeFile(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
