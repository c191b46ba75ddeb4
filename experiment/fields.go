package experiment

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dpbandit/dpbandit/internal/regfile"
)

// maxConfig bounds a config file's size: a config is a few lines; a
// larger file is refused before it is read whole.
const maxConfig = 1 << 20

// Fields are a config's settings by YAML key, as a YAML mapping: read
// from a file (ParseConfig), or built from command-line flags
// (FlagFields). Both reach Config through Set, so that a value is checked
// the same way, with the same message, wherever it comes from.
type Fields = *yaml.Node

// FlagFields returns the fields of flag values: a key (a flag's name,
// with '-' as '_') and its text; a comma list becomes a list for the
// list-valued keys, and a repeated flag gives its values in values.
func FlagFields(flags map[string][]string) Fields {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		key := strings.ReplaceAll(name, "-", "_")
		var vals []string
		for _, v := range flags[name] {
			if isList(key) && key != "algos" {
				for _, f := range strings.Split(v, ",") {
					vals = append(vals, strings.TrimSpace(f))
				}
				continue
			}
			vals = append(vals, v)
		}
		val := &yaml.Node{Kind: yaml.ScalarNode, Value: vals[len(vals)-1]}
		if isList(key) {
			val = &yaml.Node{Kind: yaml.SequenceNode}
			for _, v := range vals {
				val.Content = append(val.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: v})
			}
		}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, val)
	}
	return m
}

// ConfigKey returns the config key of a field as a FieldError names it,
// in either spelling (the key max_memory or the flag max-memory; algos or
// algo), and the name of its flag in `dpbandit run`; "" and "" for a
// field that is no config key (out's checks, say, name the flag).
func ConfigKey(field string) (key, flagName string) {
	key = strings.ReplaceAll(field, "-", "_")
	if key == "algo" {
		key = "algos"
	}
	if _, ok := configField(key); !ok {
		return "", ""
	}
	flagName = strings.ReplaceAll(key, "_", "-")
	if key == "algos" {
		flagName = "algo"
	}
	return key, flagName
}

// isList reports whether a config key holds a list.
func isList(key string) bool {
	f, ok := configField(key)
	return ok && f.Type.Kind() == reflect.Slice
}

// configField returns Config's field of a YAML key.
func configField(key string) (reflect.StructField, bool) {
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Config]()) {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// configKeys lists Config's YAML keys.
func configKeys() []string {
	var out []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Config]()) {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// Set sets the config's fields from m, strictly: every key known and
// given once; whole numbers for counts (100.5 is refused, not
// truncated); numbers (not NaN or infinite) for budgets; a list key takes
// one value or a list. Errors are FieldErrors naming the key.
func (c *Config) Set(m Fields) error {
	if m.Kind != yaml.MappingNode {
		return errors.New("config: the file must hold a mapping of keys (env: ..., algos: [...], ...)")
	}
	seen := map[string]bool{}
	v := reflect.ValueOf(c).Elem()
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i].Value, m.Content[i+1]
		f, ok := configField(key)
		if !ok {
			return fieldErr(key, "unknown key (known: %s)", strings.Join(configKeys(), ", "))
		}
		if seen[key] {
			return fieldErr(key, "given twice")
		}
		seen[key] = true
		if err := setField(v.FieldByIndex(f.Index), val); err != nil {
			return &FieldError{Field: key, Err: err}
		}
	}
	return nil
}

// setField sets one field from its YAML value.
func setField(v reflect.Value, n *yaml.Node) error {
	if v.Kind() == reflect.Slice {
		items := []*yaml.Node{n}
		if n.Kind == yaml.SequenceNode {
			items = n.Content
		}
		out := reflect.MakeSlice(v.Type(), len(items), len(items))
		for i, it := range items {
			if err := setField(out.Index(i), it); err != nil {
				return err
			}
		}
		v.Set(out)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("needs a single value, got a %s", map[yaml.Kind]string{yaml.SequenceNode: "list", yaml.MappingNode: "mapping"}[n.Kind])
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.ShortTag() != "!!bool" || err != nil {
			return fmt.Errorf("needs true or false, got %q", n.Value)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		x, err := strconv.ParseInt(n.Value, 10, 64)
		if n.ShortTag() != "!!int" || err != nil || v.OverflowInt(x) {
			return fmt.Errorf("needs a whole number, got %s", got(n))
		}
		v.SetInt(x)
	case reflect.Uint64:
		x, err := strconv.ParseUint(n.Value, 10, 64)
		if n.ShortTag() != "!!int" || err != nil {
			return fmt.Errorf("needs a whole number from 0 to 2^64 - 1, got %s", got(n))
		}
		v.SetUint(x)
	case reflect.Float64:
		x, err := strconv.ParseFloat(n.Value, 64)
		if tag := n.ShortTag(); (tag != "!!float" && tag != "!!int") || err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("needs a number, got %s", got(n))
		}
		v.SetFloat(x)
	default:
		return fmt.Errorf("cannot be set (field of kind %s)", v.Kind())
	}
	return nil
}

// got describes a refused value: a quoted one is a string to YAML,
// whatever it reads as.
func got(n *yaml.Node) string {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return fmt.Sprintf("the quoted string %q: write it without quotes", n.Value)
	}
	return strconv.Quote(n.Value)
}

// LoadConfig reads a YAML config (at most 1 MiB) over the defaults.
func LoadConfig(path string) (Config, error) {
	data, err := regfile.ReadAll(path, maxConfig)
	switch {
	case errors.Is(err, regfile.ErrTooLarge):
		return Config{}, fmt.Errorf("config: %s is larger than %d bytes; a config is a few lines of YAML", path, maxConfig)
	case err != nil:
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(data)
}

// ParseConfig parses YAML over the defaults (Set).
func ParseConfig(data []byte) (Config, error) {
	c := Defaults()
	var doc yaml.Node
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return c, nil
	} else if err != nil {
		if line, name := undefinedAlias(data); line > 0 {
			return Config{}, fmt.Errorf("config: line %d: the alias *%s names no anchor &%s defined before it (anchors and aliases are YAML's; a config needs neither)", line, name, name)
		}
		msg := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n", " ")
		return Config{}, fmt.Errorf("config: %s", strings.Join(strings.Fields(msg), " "))
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return Config{}, errors.New("config: a config file holds one YAML document; found a second (after ---)")
	}
	if len(doc.Content) == 0 {
		return c, nil
	}
	if err := c.Set(doc.Content[0]); err != nil {
		return Config{}, err
	}
	return c, nil
}

// undefinedAlias returns the line (from 1) and name of the first alias
// (*name) in a YAML text with no anchor (&name) before it, or 0: the
// parser's own error names neither line nor key. It reads tokens that
// start a value (after "- ", ": ", "[", "," or at a line's start), outside
// comments and quotes, which is how a config writes them.
func undefinedAlias(data []byte) (line int, name string) {
	anchors := map[string]bool{}
	for i, l := range strings.Split(string(data), "\n") {
		quote := byte(0)
		for j := 0; j < len(l); j++ {
			c := l[j]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
				continue
			case c == '"' || c == '\'':
				quote = c
				continue
			case c == '#' && (j == 0 || l[j-1] == ' ' || l[j-1] == '\t'):
				j = len(l)
				continue
			case c != '&' && c != '*':
				continue
			case j > 0 && !strings.ContainsRune(" \t[,{", rune(l[j-1])):
				continue
			}
			k := j + 1
			for k < len(l) && !strings.ContainsRune(" \t,]}", rune(l[k])) {
				k++
			}
			n := l[j+1 : k]
			if c == '&' {
				anchors[n] = true
			} else if n != "" && !anchors[n] {
				return i + 1, n
			}
			j = k - 1
		}
	}
	return 0, ""
}
