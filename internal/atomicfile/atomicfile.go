package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes path through write into a temporary file in the same
// directory, which is made readable by all (0644), synced and renamed over
// path: a reader sees the old file or the new one, never a part, and a
// failed write leaves the old file in place.
func Write(path string, write func(io.Writer) error) error {
	return WriteMode(path, 0o644, write)
}

// WriteMode is Write with the file's mode (0600 for a file only its
// owner may read), set before the rename.
func WriteMode(path string, mode os.FileMode, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".icn-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the temporary name means nothing to the reader
		}
		return fmt.Errorf("cannot write %s: cannot create a file in %s: %w", path, filepath.Dir(path), err)
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := write(tmp); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}
