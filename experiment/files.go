package experiment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Out is an output folder being written. Its files go into a fresh
// temporary folder beside it (Temp), which Commit renames into place, so
// that no file of an earlier result (a stale plot) and no half-written
// or empty folder is ever left; Abort removes it.
//
// What may be replaced: nothing but a result this tool wrote. Commit
// writes a manifest (ManifestFile) listing the folder's entries; an
// existing --out is replaced, and only with force, when it holds a
// manifest and no entry the manifest does not list. A folder of other
// files, or a result someone added files to, is never touched.
//
// PrepareOut claims Dir for the process: an flock on a lock file beside
// it (.NAME.lock), held until Commit or Abort and released by the system
// if the process dies, so that a second command into the same --out fails
// at once (ErrOutBusy) instead of computing for nothing.
type Out struct {
	// Dir is where the result goes; Temp is where it is written.
	Dir, Temp string
	// Committed is set once Commit has put the result in Dir.
	Committed bool
	force     bool
	created   []string // parent folders PrepareOut created, deepest last
	lock      *os.File // the claim on Dir, nil once released
}

// ErrOutBusy is returned (wrapped in a FieldError of "out") when another
// process is writing a result into the same folder.
var ErrOutBusy = errors.New("another dpbandit is writing a result there")

// ManifestFile, in a result folder, lists its entries (one per line):
// the folder may then be replaced by --force.
const ManifestFile = ".dpbandit-result"

// checkDest reports why dir cannot take a result now (nil: it is free,
// empty, or a result of this tool that force lets be replaced).
func checkDest(dir string, force bool) error {
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fieldErr("out", "cannot use %s: %v", dir, unwrapPath(err))
	case st.Mode()&os.ModeSymlink != 0:
		return fieldErr("out", "%s is a symbolic link: give the folder it points to", dir)
	case !st.IsDir():
		return fieldErr("out", "cannot create %s: not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fieldErr("out", "cannot read %s: %v", dir, unwrapPath(err))
	}
	if len(entries) == 0 {
		return nil
	}
	manifest, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return fieldErr("out", "%s holds files that are not a dpbandit result: choose another --out", dir)
	}
	listed := map[string]bool{ManifestFile: true}
	for _, name := range strings.Split(strings.TrimSpace(string(manifest)), "\n") {
		listed[name] = true
	}
	for _, e := range entries {
		if !listed[e.Name()] {
			return fieldErr("out", "%s holds %s, which is not part of its dpbandit result: choose another --out", dir, e.Name())
		}
	}
	if !force {
		return fieldErr("out", "%s holds a result already: give --force to replace it, or another --out", dir)
	}
	return nil
}

// PrepareOut checks that dir can take a result (checkDest) and creates
// the temporary folder it is written into, so that a bad --out fails
// before any computation.
func PrepareOut(dir string, force bool) (*Out, error) {
	if dir == "" {
		return nil, fieldErr("out", "is empty: name a directory")
	}
	dir = filepath.Clean(dir)
	if abs, err := filepath.Abs(dir); err == nil {
		if wd, err := os.Getwd(); err == nil && (abs == wd || strings.HasPrefix(wd, abs+string(filepath.Separator)) || abs == filepath.Dir(abs)) {
			return nil, fieldErr("out", "%s is the current folder, one of its parents or the root: name a folder for the result", dir)
		}
	}
	if err := checkDest(dir, force); err != nil {
		return nil, err
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
		o.removeCreated()
		return nil, fieldErr("out", "cannot create %s: %v", dir, unwrapPath(err))
	}
	if err := o.claim(); err != nil {
		o.removeCreated()
		return nil, err
	}
	// Checked again under the claim: a run that held it may have put
	// its result there since.
	if err := checkDest(dir, force); err != nil {
		o.Abort()
		return nil, err
	}
	for i := 0; ; i++ {
		// os.Mkdir, not MkdirTemp: the folder gets 0755 under the umask,
		// as a result folder should.
		o.Temp = filepath.Join(parent, fmt.Sprintf(".%s.tmp-%d-%d", filepath.Base(dir), os.Getpid(), i))
		err := os.Mkdir(o.Temp, 0o755)
		if err == nil {
			return o, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			o.Temp = ""
			o.Abort()
			return nil, fieldErr("out", "cannot create %s: %v", dir, unwrapPath(err))
		}
	}
}

// lockPath is the lock file that claims Dir.
func (o *Out) lockPath() string {
	return filepath.Join(filepath.Dir(o.Dir), "."+filepath.Base(o.Dir)+".lock")
}

// claim takes the lock on Dir, or returns ErrOutBusy naming the process
// that holds it.
func (o *Out) claim() error {
	path := o.lockPath()
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return fieldErr("out", "cannot create %s: %v", o.Dir, unwrapPath(err))
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			holder, _ := io.ReadAll(io.LimitReader(f, 32))
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				pid := ""
				if n, err := strconv.Atoi(strings.TrimSpace(string(holder))); err == nil {
					pid = fmt.Sprintf(" (process %d)", n)
				}
				return &FieldError{Field: "out", Err: fmt.Errorf("%w%s: %s; wait for it to finish, or choose another --out", ErrOutBusy, pid, o.Dir)}
			}
			return fieldErr("out", "cannot claim %s: %v", o.Dir, err)
		}
		// The holder before us removes the file before it unlocks: if it
		// did so after we opened it, our lock is on a file nobody else
		// sees, and we try again.
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			f.Truncate(0)
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
			o.lock = f
			return nil
		}
		f.Close()
	}
}

// release removes the lock file and drops the claim (once).
func (o *Out) release() {
	if o.lock == nil {
		return
	}
	os.Remove(o.lockPath())
	o.lock.Close() // closing the descriptor drops the flock
	o.lock = nil
}

// Commit puts the result in place: it writes the manifest, checks Dir
// again (someone may have written there meanwhile), moves an earlier
// result aside, renames the temporary folder to Dir, and only then
// removes the earlier result; on a failure the earlier result is put
// back.
func (o *Out) Commit() error {
	entries, err := os.ReadDir(o.Temp)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if err := writeBytes(filepath.Join(o.Temp, ManifestFile), []byte(strings.Join(names, "\n")+"\n")); err != nil {
		return err
	}
	if err := checkDest(o.Dir, o.force); err != nil {
		return err
	}
	old := ""
	if _, err := os.Lstat(o.Dir); err == nil {
		old = filepath.Join(filepath.Dir(o.Dir), fmt.Sprintf(".%s.old-%d", filepath.Base(o.Dir), os.Getpid()))
		if err := os.Rename(o.Dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(o.Temp, o.Dir); err != nil {
		if old != "" {
			os.Rename(old, o.Dir) // put the earlier result back
		}
		return err
	}
	if old != "" {
		os.RemoveAll(old)
	}
	o.Committed = true
	o.release()
	return nil
}

// Abort removes the temporary folder and the parents PrepareOut created,
// and drops the claim on Dir.
func (o *Out) Abort() {
	if o.Temp != "" {
		os.RemoveAll(o.Temp)
	}
	o.release()
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
