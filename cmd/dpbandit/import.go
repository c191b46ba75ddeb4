package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/dpbandit/dpbandit/ope"
	"github.com/dpbandit/dpbandit/service/api"
)

// importCmd sends a log to a running service's import
// (POST /v1/experiments/{id}/import) and prints what it changed: the
// service runs the import through its own engine, ledger and store, in
// one transaction (docs/cli.md says why there is no offline import).
func importCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagsArgs("import", `LOG

Imports a logged bandit feedback file (JSON lines as the service exports
them, dsjson, CSV) into an experiment of a running service: a warm start
whose rewards are learned and debited from their units as live ones
(docs/service.md, Imports). LOG "-" reads the standard input.`, stdout)
	base, token := fs.service()
	id := fs.String("experiment", "", "the experiment's `id` (required)")
	format := fs.String("format", "", "the log's `format`: "+strings.Join(ope.Formats, ", ")+" (default: from its content)")
	skip := fs.Bool("skip-invalid", false, "leave out (and count) the records the service refuses, instead of refusing the import")
	asJSON := fs.Bool("json", false, "print the service's answer as JSON")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this `duration` (each part)")
	part := fs.Int("part-lines", 0, "send a JSON-lines or dsjson log in parts of at most `N` lines, one import each (the service takes at most 65 536 rewarded events an import; 0: the whole log at once)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{errors.New("import needs a LOG file (see dpbandit import -h)")}
	}
	path := fs.Arg(0)
	if err := parse(fs, fs.Args()[1:]); err != nil { // flags after LOG
		return err
	}
	if *id == "" {
		return usageError{errors.New("--experiment is required: the id of the experiment to import into")}
	}
	if _, err := ope.NewReading(*format, 0); err != nil {
		return usageError{fmt.Errorf("--format: %s", message(err))}
	}
	if *part < 0 {
		return usageError{fmt.Errorf("--part-lines must be 0 (no parts) or more, got %d", *part)}
	}
	var in io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	br := bufio.NewReaderSize(in, 1<<16)
	ctype := "application/x-ndjson"
	if head, _ := br.Peek(512); *format == "csv" || *format == "obp" || *format == "" && !strings.HasPrefix(strings.TrimLeft(string(head), "\ufeff \t\r\n"), "{") {
		ctype = "text/csv"
	}
	q := url.Values{}
	if *format != "" {
		q.Set("format", *format)
	}
	if *skip {
		q.Set("skip_invalid", "true")
	}
	u := strings.TrimRight(*base, "/") + "/v1/experiments/" + url.PathEscape(*id) + "/import"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	post := func(body io.Reader) (int, []byte, error) {
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "POST", u, body)
		if err != nil {
			return 0, nil, usageError{fmt.Errorf("--url: %v", err)}
		}
		req.Header.Set("Content-Type", ctype)
		if *token != "" {
			req.Header.Set("Authorization", "Bearer "+*token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	if *part == 0 || ctype != "application/x-ndjson" {
		if *part > 0 {
			return usageError{errors.New("--part-lines splits JSON-lines and dsjson logs (a CSV record may span lines): split a CSV log yourself, its header on each part")}
		}
		return sendImport(post, br, 0, *id, *asJSON, stdout)
	}
	for first := 1; ; {
		var buf bytes.Buffer
		lines, err := copyLines(&buf, br, *part)
		if err != nil {
			return err
		}
		if lines == 0 {
			return nil
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "part: lines %d to %d\n", first, first+lines-1)
		}
		if err := sendImport(post, &buf, first-1, *id, *asJSON, stdout); err != nil {
			return err
		}
		first += lines
	}
}

// copyLines copies up to n lines of r into w (blank ones count, so that
// the service's line numbers plus the part's offset are the file's), and
// returns how many it copied.
func copyLines(w *bytes.Buffer, r *bufio.Reader, n int) (int, error) {
	lines := 0
	for lines < n {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 {
			w.Write(b)
			lines++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return lines, err
		}
	}
	return lines, nil
}

// sendImport posts one import (post) and prints its answer, its line
// numbers moved by offset (the part's first line, less one); an import
// the service refused is an error.
func sendImport(post func(io.Reader) (int, []byte, error), body io.Reader, offset int, id string, asJSON bool, stdout io.Writer) error {
	code, raw, err := post(body)
	if err != nil {
		return err
	}
	var ans struct {
		Error string `json:"error"`
		api.ImportAnswer
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return fmt.Errorf("the service answered %d: %.200s", code, raw)
	}
	for i := range ans.RefusedRecords {
		ans.RefusedRecords[i].Line += offset
	}
	for i := range ans.Skipped {
		ans.Skipped[i].Line += offset
	}
	if asJSON {
		stdout.Write(raw)
	} else if code == 200 || code == 422 {
		printImport(stdout, id, ans.ImportAnswer)
	}
	if code != 200 {
		return fmt.Errorf("the service refused the import (%d %s): %s", code, http.StatusText(code), ans.Error)
	}
	return nil
}

// printImport prints an import's answer for a reader.
func printImport(w io.Writer, id string, a api.ImportAnswer) {
	for _, r := range a.RefusedRecords {
		fmt.Fprintf(w, "refused: line %d: %s\n", r.Line, r.Reason)
	}
	if a.Refused > len(a.RefusedRecords) {
		fmt.Fprintf(w, "refused: %d more records\n", a.Refused-len(a.RefusedRecords))
	}
	if a.State == nil {
		return // refused whole: nothing imported
	}
	fmt.Fprintf(w, "experiment %s: %d logged events read (%s); %d without a reward, %d refused\n", id, a.Logged, a.IDsFrom, a.WithoutReward, a.Refused)
	fmt.Fprintf(w, "used %d: %d learned, ignored %d (contribution limit), %d (unit budget), %d (exploration), %d (overflow); %d not matched (contextual replay); %d unused",
		a.Events, a.Learned, a.ContributionLimit, a.UnitBudget, a.Exploration, a.Overflow, a.NotMatched, a.Unused)
	if a.StoppedAtArm != nil {
		fmt.Fprintf(w, " (the policy asked for arm %d, whose logged rewards were used up)", *a.StoppedAtArm)
	}
	fmt.Fprintf(w, "\nskipped %d duplicates, %d already imported, %d ids of live decisions\n", a.Duplicates, a.AlreadyImported, a.LiveIDs)
	for _, s := range a.Skipped {
		fmt.Fprintf(w, "skipped: line %d: %s (%s)\n", s.Line, s.EventID, s.Reason)
	}
	fmt.Fprintf(w, "ledger: %d units debited %.9g rho in all (cap per unit: %s); %d operations\n",
		a.UnitsDebited, float64(a.NanoRho)/1e9, capText(a.CapNanoRho), a.Operations)
}

// capText describes a unit cap in nano-rho.
func capText(nano int64) string {
	if nano == 0 {
		return "none"
	}
	return fmt.Sprintf("%.9g rho", float64(nano)/1e9)
}
