package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progress draws a progress bar on a terminal.
type progress struct {
	w     io.Writer
	on    bool
	label string
	start time.Time
	last  time.Time
}

func newProgress(w io.Writer, quiet bool, label string) *progress {
	on := false
	if f, ok := w.(*os.File); ok && !quiet {
		on = term.IsTerminal(int(f.Fd()))
	}
	return &progress{w: w, on: on, label: label, start: time.Now()}
}

func (p *progress) update(done, total int) {
	if !p.on || (time.Since(p.last) < 100*time.Millisecond && done < total) {
		return
	}
	p.last = time.Now()
	const width = 30
	fill := width * done / max(total, 1)
	fmt.Fprintf(p.w, "\r%-14s [%s%s] %d/%d runs %5.1fs", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, total, time.Since(p.start).Seconds())
}

func (p *progress) finish() {
	if p.on {
		fmt.Fprintln(p.w)
	}
}
