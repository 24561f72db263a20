package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Error is a failure to write an output file (the CLI's exit status 3):
// the path and what stood in the way.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return "cannot write " + e.Path + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

func fail(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // a temporary name means nothing to the reader
	}
	return &Error{Path: path, Err: err}
}

// kind is how an output path is written.
type kind int

const (
	replace kind = iota // a regular file or nothing yet: temporary file and rename
	through             // a character device or a named pipe: written in place
)

// classify looks at path (following symbolic links) and says how it is
// written and where a replacement goes (the link's target, so that a link
// stays a link), or why it cannot be written.
func classify(path string) (kind, string, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		target := path
		if t, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
			target = filepath.Join(t, filepath.Base(path))
		}
		dir := filepath.Dir(target)
		dst, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return 0, "", fail(path, missingDir(filepath.Dir(path)))
		case err != nil:
			return 0, "", fail(path, err)
		case !dst.IsDir():
			return 0, "", fail(path, fmt.Errorf("%s is not a directory", filepath.Dir(path)))
		}
		return replace, target, nil
	case errors.Is(err, syscall.ENOTDIR):
		return 0, "", fail(path, fmt.Errorf("%s is not a directory", filepath.Dir(path)))
	case err != nil:
		return 0, "", fail(path, err)
	}
	m := st.Mode()
	switch {
	case m.IsRegular():
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return 0, "", fail(path, err)
		}
		return replace, target, nil
	case m.IsDir():
		return 0, "", fail(path, errors.New("is a directory"))
	case m&fs.ModeCharDevice != 0, m&fs.ModeNamedPipe != 0:
		return through, path, nil
	case m&fs.ModeSocket != 0:
		return 0, "", fail(path, errors.New("is a socket (icn writes regular files, character devices and pipes)"))
	}
	return 0, "", fail(path, fmt.Errorf("is not a regular file (%s; icn writes regular files, character devices and pipes)", m.Type()))
}

// Check reports, before the work whose result goes to path, whether Write
// could write it: a regular file (or none yet) in a directory where a file
// can be created, or a character device or named pipe this process may
// write. It creates and removes a probe file to find a read-only or full
// place.
func Check(path string) error {
	k, target, err := classify(path)
	if err != nil {
		return err
	}
	if k == through {
		if err := syscall.Access(path, 2 /* W_OK */); err != nil {
			return fail(path, err)
		}
		return nil
	}
	dir := filepath.Dir(target)
	probe, err := os.CreateTemp(dir, ".icn-check-*")
	if err != nil {
		return fail(path, fmt.Errorf("cannot create a file in %s: %w", dir, unwrapPath(err)))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// CheckDir reports whether files can be created in the directory dir,
// which is created (with its parents) by the writer if it does not exist:
// then its nearest existing ancestor must be a directory where one can be
// created.
func CheckDir(dir string) error {
	at := dir
	for {
		st, err := os.Stat(at)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			up := filepath.Dir(at)
			if up == at {
				return fail(dir, err)
			}
			at = up
			continue
		case errors.Is(err, syscall.ENOTDIR):
			return fail(dir, fmt.Errorf("%s is not a directory", filepath.Dir(at)))
		case err != nil:
			return fail(dir, err)
		case !st.IsDir():
			return fail(dir, fmt.Errorf("%s is not a directory", at))
		}
		break
	}
	probe, err := os.CreateTemp(at, ".icn-check-*")
	if err != nil {
		return fail(dir, fmt.Errorf("cannot create a file in %s: %w", at, unwrapPath(err)))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// missingDir is a directory that does not exist; it is fs.ErrNotExist.
type missingDir string

func (d missingDir) Error() string        { return "no directory " + string(d) }
func (d missingDir) Is(target error) bool { return target == fs.ErrNotExist }

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Write writes path through write. A regular file (or a new one) is
// written into a temporary file in the same directory, which is made
// readable by all (0644), synced and renamed over path: a reader sees the
// old file or the new one, never a part, and a failed write leaves the old
// file in place. A symbolic link stays a link: its target is replaced. A
// character device or a named pipe is written in place (it is never
// replaced by a regular file: `--lft-out /dev/null` discards the output);
// a directory, a socket or another special file is refused.
func Write(path string, write func(io.Writer) error) error {
	return WriteMode(path, 0o644, write)
}

// WriteMode is Write with the permissions perm for a new or replaced
// regular file (0600 for a secret).
func WriteMode(path string, perm fs.FileMode, write func(io.Writer) error) error {
	return WriteVerified(path, perm, write, nil)
}

// WriteVerified is WriteMode with a check of the complete file, by name,
// before it takes path's place (verify nil: none). For a device or a pipe
// the data goes first to a temporary file in the system's temporary
// directory, is checked there, and is then copied through.
func WriteVerified(path string, perm fs.FileMode, write func(io.Writer) error, verify func(name string) error) error {
	k, target, err := classify(path)
	if err != nil {
		return err
	}
	if k == through && verify != nil {
		tmp, err := os.CreateTemp("", ".icn-*")
		if err != nil {
			return fail(path, fmt.Errorf("cannot create a temporary file: %w", unwrapPath(err)))
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		if err := write(tmp); err != nil {
			return err
		}
		if err := verify(tmp.Name()); err != nil {
			return err
		}
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return fail(path, err)
		}
		write = func(w io.Writer) error {
			_, err := io.Copy(w, tmp)
			return err
		}
	}
	if k == through {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fail(path, err)
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return fail(path, err)
		}
		return nil
	}
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, ".icn-*")
	if err != nil {
		return fail(path, fmt.Errorf("cannot create a file in %s: %w", dir, unwrapPath(err)))
	}
	abandon := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := write(tmp); err != nil {
		return abandon(err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return abandon(fail(path, err))
	}
	if err := tmp.Sync(); err != nil {
		return abandon(fail(path, err))
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fail(path, err)
	}
	if verify != nil {
		if err := verify(tmp.Name()); err != nil {
			os.Remove(tmp.Name())
			return err
		}
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		os.Remove(tmp.Name())
		return fail(path, err)
	}
	return nil
}

// WriteFile writes data to path as Write does.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
