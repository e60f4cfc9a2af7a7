package sqlfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// MaxSize is the largest file trueup reads. The files users write are a few kilobytes; a
// 10.8 MB rule once took 1.1 GB and 70 s to load, so anything larger is refused unread.
const MaxSize = 1 << 20

// Read returns the text of the file name of fsys; shown is its path in messages. A file over
// MaxSize is refused before it is read whole, as Problems (one, on no line: the whole file), so
// a loader can report it with the other files' problems; any other error is the file system's.
func Read(fsys fs.FS, name, shown string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return read(f, shown)
}

// ReadFile is Read for a path of the operating system, e.g. trueup.yaml.
func ReadFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return read(f, path)
}

func read(f fs.File, shown string) (string, error) {
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxSize {
		return "", tooLarge(shown, st.Size())
	}
	// The size stat gave may be stale or absent (a pipe, a growing file): read at most one byte
	// past the limit either way.
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return "", err
	}
	if len(data) > MaxSize {
		size := int64(len(data))
		if st, err := f.Stat(); err == nil && st.Size() > size {
			size = st.Size()
		}
		return "", tooLarge(shown, size)
	}
	return string(data), nil
}

// tooLarge says the size in MB rounded up to a tenth, so a file just over the limit does not
// read as "1.0 MB, limit 1 MiB".
func tooLarge(shown string, size int64) Problems {
	tenths := (size + 99_999) / 100_000
	return Problems{{Path: shown, Msg: fmt.Sprintf("file is %d.%d MB, limit 1 MiB", tenths/10, tenths%10)}}
}

// ReadEach reads every *.sql file of fsys (in any folder, in name order) and hands fn its shown
// path (prefix joined before it) and text. A file over MaxSize is not handed on: it comes back
// among the Problems, so a loader reports it with the problems fn finds; any other error stops.
// A file that is commented out (CommentedOut) is not handed on either: it says nothing to run.
func ReadEach(fsys fs.FS, prefix string, fn func(shown, text string)) (Problems, error) {
	paths, err := Files(fsys)
	if err != nil {
		return nil, err
	}
	var problems Problems
	for _, p := range paths {
		shown := path.Join(prefix, p)
		text, err := Read(fsys, p, shown)
		if tooLarge := Problems(nil); errors.As(err, &tooLarge) {
			problems = append(problems, tooLarge...)
			continue
		}
		if err != nil {
			return nil, err
		}
		if CommentedOut(text) {
			continue
		}
		fn(shown, text)
	}
	return problems, nil
}

// CommentedOut reports whether text is a file whose every line is a comment or blank, with at
// least one comment and no `key: value` header line among them: a whole file commented out, as
// the examples `trueup init` writes are until someone edits them ("-- -- kind: …" is a comment,
// "-- kind: …" is a header line). An empty file is not commented out: it is refused as the
// loader refuses any file that lacks what it needs, as a mistake is more likely than intent.
func CommentedOut(text string) bool {
	f := Scan("", text)
	return f.Body == "" && len(f.Keys) == 0 && len(f.problems) == 0 && strings.Contains(text, "--")
}
