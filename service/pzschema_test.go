package service

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"
)

// pzSchema is a schema of Personalizer's specification (Swagger 2.0), as
// much of it as its response definitions use: $ref, type, required,
// properties, items, enum, maxLength, minimum and maximum. An object's
// property that its schema does not declare is an error too: the field
// names must be the specification's, case and all.
type pzSchema struct {
	Ref        string               `json:"$ref"`
	Type       string               `json:"type"`
	Required   []string             `json:"required"`
	Properties map[string]*pzSchema `json:"properties"`
	Items      *pzSchema            `json:"items"`
	Enum       []string             `json:"enum"`
	MaxLength  *int                 `json:"maxLength"`
	Minimum    *float64             `json:"minimum"`
	Maximum    *float64             `json:"maximum"`
	AllOf      []*pzSchema          `json:"allOf"` // one schema, as totalSummary's (evaluations)
}

// pzSchemas are the definitions of testdata/personalizer-v1.1-preview.3-definitions.json.
type pzSchemas map[string]*pzSchema

func loadPzSchemas(t testing.TB) pzSchemas {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "personalizer-v1.1-preview.3-definitions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Definitions pzSchemas `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Definitions
}

// validate checks a JSON body against definition name.
func (s pzSchemas) validate(name string, body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return s.check(name, &pzSchema{Ref: "#/definitions/" + name}, v)
}

func (s pzSchemas) check(path string, sc *pzSchema, v any) error {
	for sc.Ref != "" {
		next := s[filepath.Base(sc.Ref)]
		if next == nil {
			return fmt.Errorf("%s: no definition %s", path, sc.Ref)
		}
		sc = next
	}
	if len(sc.AllOf) == 1 && sc.Properties == nil {
		return s.check(path, sc.AllOf[0], v)
	}
	switch sc.Type {
	case "object":
		o, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %v is not an object", path, v)
		}
		for _, r := range sc.Required {
			if _, ok := o[r]; !ok {
				return fmt.Errorf("%s: %s is required", path, r)
			}
		}
		for k, x := range o {
			p, ok := sc.Properties[k]
			if !ok {
				return fmt.Errorf("%s: %s is not a property of the specification's", path, k)
			}
			if err := s.check(path+"."+k, p, x); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %v is not an array", path, v)
		}
		for i, x := range a {
			if err := s.check(fmt.Sprintf("%s[%d]", path, i), sc.Items, x); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		switch {
		case !ok:
			return fmt.Errorf("%s: %v is not a string", path, v)
		case sc.MaxLength != nil && utf8.RuneCountInString(str) > *sc.MaxLength:
			return fmt.Errorf("%s: longer than %d", path, *sc.MaxLength)
		case sc.Enum != nil && !slices.Contains(sc.Enum, str):
			return fmt.Errorf("%s: %q is not among %v", path, str, sc.Enum)
		}
	case "number":
		f, ok := v.(float64)
		switch {
		case !ok:
			return fmt.Errorf("%s: %v is not a number", path, v)
		case sc.Minimum != nil && f < *sc.Minimum, sc.Maximum != nil && f > *sc.Maximum:
			return fmt.Errorf("%s: %v lies outside [%v, %v]", path, f, *sc.Minimum, *sc.Maximum)
		}
	default:
		return fmt.Errorf("%s: type %q is not handled", path, sc.Type)
	}
	return nil
}

// TestPzSchemaValidatorFails: the validator refuses what the
// specification does not allow, so that the spec tests can fail.
func TestPzSchemaValidatorFails(t *testing.T) {
	s := loadPzSchemas(t)
	for _, c := range []struct{ def, body string }{
		{"MultiSlotRankResponse", `{"slots":[{"id":"a","RewardActionId":"x"}],"eventId":"e"}`},
		{"MultiSlotRankResponse", `{"slots":[{"rewardActionId":"x"}],"eventId":"e"}`},
		{"MultiSlotRankResponse", `{"slots":{"id":"a"},"eventId":"e"}`},
		{"RankResponse", `{"ranking":[{"id":"a","probability":1.5}],"eventId":"e","rewardActionId":"a"}`},
		{"RankResponse", `{"ranking":[],"eventId":"e","rewardActionId":"a","event_id":"e"}`},
		{"ErrorResponse", `{"error":{"code":"Nope","message":"m"}}`},
		{"ErrorResponse", `{"error":{"code":"BadRequest"}}`},
		{"ErrorResponse", `{"error":"m"}`},
	} {
		if err := s.validate(c.def, []byte(c.body)); err == nil {
			t.Errorf("%s %s: valid", c.def, c.body)
		}
	}
	if err := s.validate("MultiSlotRankResponse", []byte(`{"slots":[{"id":"Main Article","rewardActionId":"EntertainmentArticle"},{"id":"Side Bar"}],"eventId":"e"}`)); err != nil {
		t.Error(err)
	}
}
