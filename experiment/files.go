package experiment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// PrepareOut creates the output directory dir and checks that files can
// be written in it, so that a bad --out fails before any computation.
func PrepareOut(dir string) error {
	if dir == "" {
		return fieldErr("out", "is empty: name a directory")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fieldErr("out", "cannot create %s: %v", dir, unwrapPath(err))
	}
	f, err := os.CreateTemp(dir, ".dpbandit-probe-*")
	if err != nil {
		return fieldErr("out", "cannot write in %s: %v", dir, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
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
