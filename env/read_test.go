package env

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A data file is read within its bounds: a gzip file that decompresses
// past the byte bound, a line past the line bound (a file without line
// breaks) and a file past the byte bound are refused as ErrTooLarge,
// at the line that overruns; a file at the bounds is read.
func TestReadBounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, body []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rows := "a,b,y\n" + strings.Repeat("0,1,x\n1,0,z\n", 1<<14) // 196,614 bytes
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write([]byte(rows))
	zw.Close()
	lim := readLimits{bytes: 64 << 10, line: 1 << 10}
	open := func(p string) (fs.File, error) { return os.Open(p) }
	for _, c := range []struct {
		name string
		path string
		line int // the DataError's line, 0 for the whole file
	}{
		{"gzip bomb", write("bomb.csv.gz", bomb.Bytes()), 0},
		{"large file", write("large.csv", []byte(rows)), 0},
		{"no line breaks", write("zeros.csv", make([]byte, 8<<10)), 1},
		{"long third line", write("long.csv", []byte("a,b,y\n0,1,x\n"+strings.Repeat("1", 2<<10)+",0,z\n")), 3},
	} {
		if bomb.Len() > int(lim.bytes) {
			t.Fatalf("the bomb's compressed size %d is above the bound: it tests nothing", bomb.Len())
		}
		_, err := readTable(c.path, open, tableSpec{header: true}, lim)
		var de *DataError
		if !errors.Is(err, ErrTooLarge) || !errors.As(err, &de) || de.Line != c.line {
			t.Errorf("%s: %v, want ErrTooLarge at line %d", c.name, err, c.line)
		}
	}
	at := "a,b,y\n" + strings.Repeat("0", 1<<10-4) + ",1,x\n1,0,z\n" // the second line exactly at the bound
	if _, err := readTable(write("at.csv", []byte(at)), open, tableSpec{header: true}, readLimits{bytes: int64(len(at)), line: 1 << 10}); err != nil {
		t.Errorf("a file at the bounds: %v", err)
	}
}

// A data file that is not a regular file is refused as ErrNotRegular
// without reading it (a character device here; a FIFO in
// TestReadFIFO).
func TestReadNotRegular(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Skip(err)
	}
	_, err := ParseDataset("csv:"+os.DevNull+",lo=0,hi=1", 0)
	if !errors.Is(err, ErrNotRegular) {
		t.Fatalf("%s: %v, want ErrNotRegular", os.DevNull, err)
	}
}
